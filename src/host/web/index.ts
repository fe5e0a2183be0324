import fp from 'fastify-plugin';
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyReply } from 'fastify';
import { PACKAGE_ROOT } from '../../version';
import { PAGE_CSP } from './html';
import { landingPage, type ServerSummary } from './landing';
import { accountPage } from './account-pages';
import { dashboardPage } from './dashboard-page';

export { startupLine, type ServerSummary } from './landing';
export { PAGE_CSP, renderPage, html } from './html';

/** Atrium's own browser scripts and styles: read from the source tree (tsc compiles TypeScript only). */
const OWN_ASSETS = path.join(PACKAGE_ROOT, 'src', 'host', 'web', 'assets');

/** Third-party browser code, served from node_modules so no page loads anything from elsewhere. */
const VENDOR_ASSETS: Record<string, { module: string; file: string }> = {
  'react.js': { module: 'react', file: 'umd/react.production.min.js' },
  'react-dom.js': { module: 'react-dom', file: 'umd/react-dom.production.min.js' },
  'graphiql.js': { module: 'graphiql', file: 'graphiql.min.js' },
  'graphiql.css': { module: 'graphiql', file: 'graphiql.min.css' },
  'graphql-ws.js': { module: 'graphql-ws', file: 'umd/graphql-ws.js' },
};

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

interface Asset {
  body: Buffer;
  type: string;
}

/** Every asset, read once at start-up: a handful of files, and a missing one fails the start, not a page. */
function loadAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const name of fs.readdirSync(OWN_ASSETS)) {
    const type = TYPES[path.extname(name)];
    if (type) assets.set(name, { body: fs.readFileSync(path.join(OWN_ASSETS, name)), type });
  }
  for (const [name, { module, file }] of Object.entries(VENDOR_ASSETS)) {
    const location = path.join(path.dirname(require.resolve(`${module}/package.json`)), file);
    assets.set(`vendor/${name}`, { body: fs.readFileSync(location), type: TYPES[path.extname(name)]! });
  }
  return assets;
}

const GRAPHIQL_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>GraphiQL · Atrium</title>
<link rel="stylesheet" href="/assets/vendor/graphiql.css">
<link rel="icon" href="/assets/atrium.svg" type="image/svg+xml">
<style>body{margin:0;height:100vh}#graphiql{height:100vh}</style>
</head>
<body>
<div id="graphiql">Loading GraphiQL…</div>
<noscript>GraphiQL needs JavaScript.</noscript>
<script src="/assets/vendor/react.js"></script>
<script src="/assets/vendor/react-dom.js"></script>
<script src="/assets/vendor/graphiql.js"></script>
<script src="/assets/vendor/graphql-ws.js"></script>
<script type="module" src="/assets/graphiql-atrium.js"></script>
</body>
</html>
`;

/** An HTML page: its own CSP, and a Referer kept to this origin (the API's CSRF check reads Origin or Referer). */
export function sendPage(reply: FastifyReply, body: string) {
  return reply
    .header('content-security-policy', PAGE_CSP)
    .header('referrer-policy', 'same-origin')
    .type('text/html; charset=utf-8')
    .send(body);
}

/**
 * Atrium's web face: the landing page at `/`, the account pages under `/app`
 * that mails and single sign-on link to, the live `/dashboard`, GraphiQL, and
 * the assets they load. Pages are public; what they show comes from the API,
 * called with the visitor's own credential.
 */
export const webPlugin = fp(
  async (app) => {
    const publicRoute = { config: { auth: 'public' as const } };
    const assets = loadAssets();
    const { platform, identity } = app.domains;

    const summary = async (): Promise<ServerSummary> => ({
      health: platform.health.check(),
      hasOwner: (await identity.accounts.userCount()) > 0,
    });
    app.decorate('serverSummary', summary);

    app.get('/', publicRoute, async (_request, reply) => sendPage(reply, landingPage(await summary())));
    app.get('/app', publicRoute, async (_request, reply) => sendPage(reply, accountPage('')!));
    app.get<{ Params: { page: string } }>('/app/:page', publicRoute, async (request, reply) => {
      const page = accountPage(request.params.page);
      return page ? sendPage(reply, page) : reply.callNotFound();
    });
    app.get('/dashboard', publicRoute, async (_request, reply) => sendPage(reply, dashboardPage()));
    app.get('/graphiql', publicRoute, async (_request, reply) => sendPage(reply, GRAPHIQL_PAGE));

    const sendAsset = (name: string, reply: FastifyReply) => {
      const asset = assets.get(name);
      if (!asset) return reply.callNotFound();
      return reply.header('cache-control', 'public, max-age=3600').type(asset.type).send(asset.body);
    };
    app.get<{ Params: { name: string } }>('/assets/:name', publicRoute, async (request, reply) => sendAsset(request.params.name, reply));
    app.get<{ Params: { name: string } }>('/assets/vendor/:name', publicRoute, async (request, reply) =>
      sendAsset(`vendor/${request.params.name}`, reply),
    );
  },
  { name: 'atrium-web' },
);
