import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { bearer, build, login, seedOwner } from './helper';
import { Model } from '../src/domains/catalog/model.entity';
import { SEED_DIR } from '../src/seed-data';

function assertCode(res: LightMyRequestResponse, status: number, code: string) {
  assert.equal(res.statusCode, status, res.body);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  assert.ok(String(res.json().type).endsWith(`/errors/${code}`), `expected ${code}, got ${res.body}`);
}

/** Follows same-origin redirects, as a browser would. */
async function follow(app: FastifyInstance, url: string, max = 5): Promise<LightMyRequestResponse> {
  let res = await app.inject({ url } as InjectOptions);
  for (let i = 0; i < max && res.statusCode >= 300 && res.statusCode < 400; i++) {
    const location = String(res.headers.location);
    res = await app.inject({ url: new URL(location, `http://localhost${url}`).pathname });
  }
  return res;
}

async function ownerToken(app: FastifyInstance) {
  const owner = await seedOwner(app);
  return (await login(app, owner.email)).access_token;
}

async function sql(app: FastifyInstance, query: string, params: unknown[] = []) {
  return (await app.kernel.orm.em.fork().getConnection().execute(query, params)) as Record<string, unknown>[];
}

test('GET /v1/health is public and answers {status: ok, version, database: ok, uptime_seconds}', async (t) => {
  const app = await build(t);
  const res = await app.inject({ url: '/v1/health' });
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const body = res.json();
  assert.deepEqual(Object.keys(body).sort(), ['database', 'status', 'uptime_seconds', 'version']);
  assert.equal(body.status, 'ok');
  assert.equal(body.database, 'ok');
  assert.equal(body.version, '2026.05.04');
  assert.ok(Number.isInteger(body.uptime_seconds) && body.uptime_seconds >= 0);
  // A bad credential does not make a public endpoint fail.
  assert.equal((await app.inject({ url: '/v1/health', headers: bearer('garbage') })).statusCode, 200);
});

test('GET /v1/models requires a credential', async (t) => {
  const app = await build(t);
  assertCode(await app.inject({ url: '/v1/models' }), 401, 'unauthenticated');
  assertCode(await app.inject({ url: '/v1/models', headers: bearer('garbage') }), 401, 'token_invalid');
});

test('GET /v1/models lists the seeded non-blocked models with display names; a blocked model disappears', async (t) => {
  const app = await build(t);
  const token = await ownerToken(app);
  const seed = JSON.parse(fs.readFileSync(path.join(SEED_DIR, 'models.json'), 'utf8')) as {
    id: string;
    display_name: string;
    blocked?: boolean;
  }[];
  const expected = seed.filter((m) => !m.blocked);
  assert.ok(expected.length >= 2);

  const res = await app.inject({ url: '/v1/models', headers: bearer(token) });
  assert.equal(res.statusCode, 200);
  const models = res.json() as { id: string; display_name: string }[];
  assert.ok(Array.isArray(models));
  assert.deepEqual(models.map((m) => m.id).sort(), expected.map((m) => m.id).sort());
  for (const m of models) {
    assert.deepEqual(Object.keys(m).sort(), ['context_length', 'credit_cost', 'display_name', 'family', 'id', 'provider']);
    assert.equal(m.display_name, expected.find((e) => e.id === m.id)!.display_name);
  }

  const victim = expected[0]!.id;
  await app.kernel.orm.em.fork().nativeUpdate(Model, { id: victim }, { blocked: true });
  const after = (await app.inject({ url: '/v1/models', headers: bearer(token) })).json() as { id: string }[];
  assert.ok(!after.some((m) => m.id === victim), `${victim} should be hidden once blocked`);
  assert.equal(after.length, models.length - 1);
});

test('GET /v1/docs-feedback stores a row with only a hash of the IP and returns {id, created_at}', async (t) => {
  const app = await build(t);
  const res = await app.inject({ url: '/v1/docs-feedback?page=/docs/x&helpful=true', headers: { 'user-agent': 'test-agent' } });
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json();
  assert.deepEqual(Object.keys(body).sort(), ['created_at', 'id']);
  assert.match(body.id, /^[0-9a-f-]{36}$/);
  assert.ok(!Number.isNaN(Date.parse(body.created_at)));

  const rows = await sql(app, 'select * from docs_feedback');
  assert.equal(rows.length, 1);
  const row = rows[0]!;
  assert.equal(row.id, body.id);
  assert.equal(row.page, '/docs/x');
  assert.equal(Number(row.helpful), 1);
  assert.equal(row.comment, null);
  assert.match(String(row.ip_hash), /^[0-9a-f]{64}$/);
  assert.ok(!JSON.stringify(rows).includes('127.0.0.1'), 'the literal IP must not be stored');

  const withComment = await app.inject({ url: `/api/v1/docs-feedback?page=${encodeURIComponent('/docs/y')}&comment=${encodeURIComponent('typo here')}` });
  assert.equal(withComment.statusCode, 200, withComment.body);
  const stored = await sql(app, 'select page, helpful, comment from docs_feedback where id = ?', [withComment.json().id]);
  assert.deepEqual(stored, [{ page: '/docs/y', helpful: null, comment: 'typo here' }]);
});

test('GET /v1/docs-feedback with helpful=maybe is 422 and stores nothing', async (t) => {
  const app = await build(t);
  const res = await app.inject({ url: '/v1/docs-feedback?page=/docs/x&helpful=maybe' });
  assertCode(res, 422, 'validation_error');
  assert.ok(res.json().errors.some((e: { loc: string[] }) => e.loc.join('.') === 'query.helpful'), res.body);
  const unknown = await app.inject({ url: '/v1/docs-feedback?page=/docs/x&helpful=true&evil=1' });
  assertCode(unknown, 422, 'validation_error');
  assert.equal((await sql(app, 'select count(*) as n from docs_feedback'))[0]!.n, 0);
});

test('GET /openapi.json is an OpenAPI 3.1.0 document with the REST paths', async (t) => {
  const app = await build(t);
  const res = await app.inject({ url: '/openapi.json' });
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const doc = res.json();
  assert.equal(doc.openapi, '3.1.0');
  assert.equal(doc.info.version, '2026.05.04');
  for (const p of ['/auth/login', '/auth/refresh', '/auth/logout', '/me/profile', '/health', '/models', '/docs-feedback']) {
    assert.ok(doc.paths[p], `openapi lacks ${p}`);
  }
  assert.ok(doc.paths['/auth/login'].post.requestBody);
  assert.ok(doc.components.schemas.ProblemDetail);
  assert.ok(doc.components.securitySchemes.bearer);
  assert.deepEqual(doc.paths['/health'].get.security, []);
});

test('GET /docs serves Swagger UI as HTML with its assets served locally', async (t) => {
  const app = await build(t);
  const page = await follow(app, '/docs');
  assert.equal(page.statusCode, 200);
  assert.match(String(page.headers['content-type']), /^text\/html/);
  assert.match(page.body, /swagger-ui/i);
  // No third-party CDN: every script the page loads is ours.
  for (const [, src] of page.body.matchAll(/<script[^>]+src="([^"]+)"/g)) {
    assert.ok(!/^https?:\/\//.test(src!), `external script ${src}`);
  }
  const bundle = await app.inject({ url: '/docs/static/swagger-ui-bundle.js' });
  assert.equal(bundle.statusCode, 200);
  assert.match(String(bundle.headers['content-type']), /javascript/);
  const css = await app.inject({ url: '/docs/static/swagger-ui.css' });
  assert.equal(css.statusCode, 200);
  assert.match(String(css.headers['content-type']), /^text\/css/);
});

test('GET /docs/errors/<code> documents a catalog code; an unknown code is 404', async (t) => {
  const app = await build(t);
  const page = await app.inject({ url: '/docs/errors/rate_limited' });
  assert.equal(page.statusCode, 200);
  assert.match(String(page.headers['content-type']), /^text\/html/);
  assert.match(page.body, /rate_limited/);
  assertCode(await app.inject({ url: '/docs/errors/nope' }), 404, 'not_found');
  assertCode(await app.inject({ url: '/docs/errors/constructor' }), 404, 'not_found');
  // Every problem's type link resolves to such a page.
  const problem = (await app.inject({ url: '/v1/me/profile' })).json();
  const typePath = new URL(problem.type).pathname;
  assert.equal((await app.inject({ url: typePath })).statusCode, 200);
});
