import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { build, seedOwner, assertCode } from './helper';
import { html, renderPage, startupLine } from '../src/host/web';
import { ATRIUM_VERSION } from '../src/version';

/** Every page of Atrium's web face, as a browser first loads it. */
const PAGES = ['/', '/app', '/app/accept-invitation', '/app/reset-password', '/app/confirm-email', '/app/cancel-deletion', '/app/mfa', '/app/billing', '/dashboard', '/graphiql', '/docs', '/docs/errors', '/docs/errors/rate_limited'];

/** The scripts and stylesheets a page references. */
function references(body: string): string[] {
  const found = [...body.matchAll(/<(?:script|link)[^>]+(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
  return found.filter((url) => !url.startsWith('#'));
}

async function assertAssetsServed(app: FastifyInstance, page: string, body: string) {
  for (const url of references(body)) {
    assert.ok(url.startsWith('/'), `${page} loads ${url} from elsewhere`);
    const res = await app.inject({ url });
    assert.equal(res.statusCode, 200, `${page}: ${url}`);
    const type = String(res.headers['content-type']);
    if (url.endsWith('.js')) assert.match(type, /^text\/javascript/, url);
    if (url.endsWith('.css')) assert.match(type, /^text\/css/, url);
    if (url.endsWith('.svg')) assert.match(type, /^image\/svg\+xml/, url);
  }
}

test('every page is HTML with its own CSP, and everything it loads is served here (no third-party asset)', async (t) => {
  const app = await build(t);
  for (const url of PAGES) {
    const res = await app.inject({ url });
    assert.equal(res.statusCode, 200, url);
    assert.match(String(res.headers['content-type']), /^text\/html/, url);
    const csp = String(res.headers['content-security-policy']);
    assert.match(csp, /script-src 'self'/, url);
    assert.match(csp, /connect-src 'self'/, url);
    // The API's CSRF check reads Origin or Referer: pages keep the Referer for their own origin.
    assert.equal(res.headers['referrer-policy'], 'same-origin', url);
    assert.match(res.body, /<html lang="en">/, url);
    await assertAssetsServed(app, url, res.body);
  }
});

test('an unknown /app page and an unknown asset are 404 problems', async (t) => {
  const app = await build(t);
  assertCode(await app.inject({ url: '/app/nope' }), 404, 'not_found');
  assertCode(await app.inject({ url: '/app/constructor' }), 404, 'not_found');
  assertCode(await app.inject({ url: '/assets/nope.js' }), 404, 'not_found');
  assertCode(await app.inject({ url: '/assets/vendor/..%2Fpackage.json' }), 404, 'not_found');
});

test('the landing page shows the version, health and links, and the first steps only while there is no owner', async (t) => {
  const app = await build(t);
  const before = (await app.inject({ url: '/' })).body;
  assert.ok(before.includes(ATRIUM_VERSION));
  assert.match(before, /id="health">ok</);
  for (const link of ['/docs', '/graphiql', '/dashboard', '/v1/health']) assert.ok(before.includes(`href="${link}"`), link);
  assert.match(before, /there is no owner yet/);
  assert.match(before, /atrium create-owner/);
  await seedOwner(app);
  const after = (await app.inject({ url: '/' })).body;
  assert.doesNotMatch(after, /no owner yet/);
  assert.match(after, /Sign in/);
});

test('the start-up line names the address, the version and the pages, and the first step while there is no owner', () => {
  const line = startupLine('http://127.0.0.1:8080', { health: { status: 'ok', database: 'ok' }, hasOwner: false });
  assert.ok(line.includes(`Atrium ${ATRIUM_VERSION}`));
  for (const page of ['/docs', '/graphiql', '/dashboard', '/v1/health']) assert.ok(line.includes(`http://127.0.0.1:8080${page}`), page);
  assert.match(line, /no owner yet: npx atrium create-owner/);
  assert.doesNotMatch(startupLine('http://[::1]:8080', { health: { status: 'ok', database: 'ok' }, hasOwner: true }), /owner/);
  assert.doesNotMatch(line, /\n/);
});

test('the OpenAPI document has relative servers and a short description that links the error catalog', async (t) => {
  const app = await build(t);
  const doc = (await app.inject({ url: '/openapi.json' })).json();
  assert.deepEqual(
    doc.servers.map((s: { url: string }) => s.url),
    ['/v1', '/api/v1'],
  );
  assert.ok(doc.info.description.length < 600, doc.info.description);
  assert.match(doc.info.description, /\(\/docs\/errors\)/);
  const catalog = (await app.inject({ url: '/docs/errors' })).body;
  assert.match(catalog, /href="\/docs\/errors\/insufficient_credits"/);
  // The reference loads /openapi.json, not a copy under /docs.
  assert.match((await app.inject({ url: '/assets/docs.js' })).body, /url: '\/openapi.json'/);
  assert.equal((await app.inject({ url: '/docs/json' })).statusCode, 404);
});

test('page templates escape what they interpolate, unless it is markup already', () => {
  assert.equal(html`<p>${'<script>alert("x")</script>'}</p>`.text, '<p>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</p>');
  assert.equal(html`<ul>${['a&b', html`<li>ok</li>`]}</ul>`.text, '<ul>a&amp;b<li>ok</li></ul>');
  // Page data cannot end its own script element.
  assert.doesNotMatch(renderPage({ title: 't', main: html``, data: { x: '</script><script>' } }), /<\/script><script>/);
});
