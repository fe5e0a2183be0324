import fp from 'fastify-plugin';
import fs from 'node:fs';
import path from 'node:path';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { ErrorEntry } from '../errors/catalog';

/** Files GraphiQL needs, served from node_modules so the page works offline. */
const graphiqlAssets: Record<string, { module: string; file: string; type: string }> = {
  'react.js': { module: 'react', file: 'umd/react.production.min.js', type: 'text/javascript' },
  'react-dom.js': { module: 'react-dom', file: 'umd/react-dom.production.min.js', type: 'text/javascript' },
  'graphiql.js': { module: 'graphiql', file: 'graphiql.min.js', type: 'text/javascript' },
  'graphiql.css': { module: 'graphiql', file: 'graphiql.min.css', type: 'text/css' },
};

const GRAPHIQL_INIT = `const root = ReactDOM.createRoot(document.getElementById('graphiql'));
const fetcher = GraphiQL.createFetcher({ url: new URL('/graphql', location.href).toString() });
root.render(React.createElement(GraphiQL, { fetcher, defaultEditorToolsVisibility: true }));
`;

const GRAPHIQL_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Atrium GraphiQL</title>
<link rel="stylesheet" href="/graphiql/assets/graphiql.css">
<style>body{margin:0;height:100vh}#graphiql{height:100vh}</style>
</head>
<body>
<div id="graphiql">Loading…</div>
<script src="/graphiql/assets/react.js"></script>
<script src="/graphiql/assets/react-dom.js"></script>
<script src="/graphiql/assets/graphiql.js"></script>
<script src="/graphiql/assets/init.js"></script>
</body>
</html>
`;

const PAGE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'";

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** /openapi.json, Swagger UI at /docs, GraphiQL at /graphiql, and a page per error code. */
export const docsPlugin = fp<{ openapi: object; errors: Readonly<Record<string, ErrorEntry>> }>(
  async (app, { openapi: document, errors: errorCatalog }) => {
    const publicRoute = { config: { auth: 'public' as const } };

    app.get('/openapi.json', publicRoute, async () => document);

    await app.register(swagger, { mode: 'static', specification: { document: document as never } });
    // Everything Swagger UI loads is served from here; no upgrade-insecure-requests,
    // so a plain-HTTP on-premise install keeps working.
    await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: PAGE_CSP, uiConfig: { deepLinking: true } });

    app.get<{ Params: { code: string } }>('/docs/errors/:code', publicRoute, async (request, reply) => {
      const code = request.params.code;
      // Own keys only: `constructor` or `toString` are not error codes.
      if (!Object.hasOwn(errorCatalog, code)) return reply.callNotFound();
      const entry = errorCatalog[code]!;
      reply.header('content-security-policy', PAGE_CSP).type('text/html; charset=utf-8');
      return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(code)}</title></head><body>
<h1>${escapeHtml(entry.title)}</h1><p>Code <code>${escapeHtml(code)}</code>, HTTP status ${entry.status}.</p>
<p>Error responses are RFC 9457 problem details: <code>type</code> links here; <code>detail</code> says what went wrong for this request, and <code>request_id</code> identifies it in the server log.</p>
</body></html>`;
    });

    const assets = new Map<string, { body: Buffer | string; type: string }>();
    for (const [name, asset] of Object.entries(graphiqlAssets)) {
      const file = path.join(path.dirname(require.resolve(`${asset.module}/package.json`)), asset.file);
      assets.set(name, { body: fs.readFileSync(file), type: asset.type });
    }
    assets.set('init.js', { body: GRAPHIQL_INIT, type: 'text/javascript' });

    app.get('/graphiql', publicRoute, async (_request, reply) => {
      reply.header('content-security-policy', PAGE_CSP).type('text/html; charset=utf-8');
      return GRAPHIQL_HTML;
    });
    app.get<{ Params: { name: string } }>('/graphiql/assets/:name', publicRoute, async (request, reply) => {
      const asset = assets.get(request.params.name);
      if (!asset) return reply.callNotFound();
      reply.header('cache-control', 'public, max-age=86400').type(`${asset.type}; charset=utf-8`);
      return asset.body;
    });
  },
  { name: 'atrium-docs' },
);
