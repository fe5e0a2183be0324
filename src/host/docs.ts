import fp from 'fastify-plugin';
import fs from 'node:fs';
import path from 'node:path';
import type { ErrorEntry } from '../errors/catalog';
import { html, renderPage, sendPage } from './web';

/**
 * Swagger UI's browser bundle. @fastify/swagger-ui ships it without the
 * swagger-ui-dist package's install-time analytics; its plugin is not used
 * (its page loads `./json` under its own prefix, behind its own logo).
 */
const SWAGGER_STATIC = path.join(path.dirname(require.resolve('@fastify/swagger-ui/package.json')), 'static');
const SWAGGER_FILES: Record<string, string> = {
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui.css': 'text/css; charset=utf-8',
};

const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>API docs · Atrium</title>
<link rel="stylesheet" href="/docs/static/swagger-ui.css">
<link rel="stylesheet" href="/assets/atrium.css">
<link rel="icon" href="/assets/atrium.svg" type="image/svg+xml">
</head>
<body>
<header class="site"><a class="brand" href="/"><img src="/assets/atrium.svg" alt="" width="24" height="24"> Atrium API</a>
<nav aria-label="Site"><a href="/">Home</a><a href="/app">Account</a><a href="/dashboard">Dashboard</a><a href="/graphiql">GraphiQL</a><a href="/docs" aria-current="page">API docs</a><a href="/docs/errors">Error catalog</a><a href="/openapi.json">openapi.json</a></nav></header>
<main id="swagger-ui" class="docs"><noscript>The API reference needs JavaScript; the document itself is at <a href="/openapi.json">/openapi.json</a>.</noscript></main>
<script src="/docs/static/swagger-ui-bundle.js"></script>
<script src="/assets/docs.js"></script>
</body>
</html>
`;

/** /openapi.json, the API reference at /docs, and the error catalog at /docs/errors (a page per code). */
export const docsPlugin = fp<{ openapi: object; errors: Readonly<Record<string, ErrorEntry>> }>(
  async (app, { openapi: document, errors: errorCatalog }) => {
    const publicRoute = { config: { auth: 'public' as const } };
    const statics = new Map(
      Object.entries(SWAGGER_FILES).map(([name, type]) => [name, { body: fs.readFileSync(path.join(SWAGGER_STATIC, name)), type }]),
    );

    app.get('/openapi.json', publicRoute, async () => document);
    app.get('/docs', publicRoute, async (_request, reply) => sendPage(reply, DOCS_PAGE));
    app.get<{ Params: { name: string } }>('/docs/static/:name', publicRoute, async (request, reply) => {
      const file = statics.get(request.params.name);
      if (!file) return reply.callNotFound();
      return reply.header('cache-control', 'public, max-age=86400').type(file.type).send(file.body);
    });

    const codes = Object.keys(errorCatalog).sort();
    const catalogPage = renderPage({
      title: 'Error catalog',
      main: html`<h1>Error catalog</h1>
<p>Every error of the REST API is an RFC 9457 problem (<code>application/problem+json</code>): <code>type</code> links to the code's page here,
<code>title</code> names the kind of problem, <code>detail</code> says what went wrong with this request, <code>code</code> is the stable
machine-readable name, and <code>request_id</code> finds the request in the server log. GraphQL answers carry the same <code>code</code>
in each error's <code>extensions</code>.</p>
<table><thead><tr><th scope="col">Code</th><th scope="col">HTTP status</th><th scope="col">Title</th></tr></thead><tbody>
${codes.map((code) => html`<tr><td><a href="/docs/errors/${code}"><code>${code}</code></a></td><td>${errorCatalog[code]!.status}</td><td>${errorCatalog[code]!.title}</td></tr>`)}
</tbody></table>`,
      current: '/docs',
    });
    app.get('/docs/errors', publicRoute, async (_request, reply) => sendPage(reply, catalogPage));

    app.get<{ Params: { code: string } }>('/docs/errors/:code', publicRoute, async (request, reply) => {
      const code = request.params.code;
      // Own keys only: `constructor` or `toString` are not error codes.
      if (!Object.hasOwn(errorCatalog, code)) return reply.callNotFound();
      const entry = errorCatalog[code]!;
      return sendPage(
        reply,
        renderPage({
          title: code,
          current: '/docs',
          main: html`<h1>${entry.title}</h1><p>Code <code>${code}</code>, HTTP status ${entry.status}.</p>
<p>Error responses are RFC 9457 problem details: <code>type</code> links here; <code>detail</code> says what went wrong for this request, and <code>request_id</code> identifies it in the server log.</p>
<p><a href="/docs/errors">Every error code</a> · <a href="/docs">API reference</a></p>`,
        }),
      );
    });
  },
  { name: 'atrium-docs' },
);
