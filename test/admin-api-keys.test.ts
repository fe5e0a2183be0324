import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import WebSocket from 'ws';
import { createClient, type Client } from 'graphql-ws';
import { MAX_ACTIVE_API_KEYS } from '../src/domains/identity';
import type { AuditEvent } from '../src/domains/audit/audit-event.entity';
import { assertCode, assertInvalid, call, cast, gql, seedUser, sql } from './admin-helper';
import { bearer, build, login, seedOwner } from './helper';
import { sqlDuring } from './sql-counter';

const keysOf = (app: FastifyInstance, token: string, query = '') => call(app, token, 'GET', `/v1/admin/api-keys${query}`);

test('POST /admin/api-keys: 201 with the plaintext once; the key works; GET lists id, name, prefix, created_by (and for a user AI-modules key its owner and scopes), never secrets', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const published: AuditEvent[] = [];
  t.after(app.kernel.events.subscribe('audit.recorded', (e) => published.push(e)));

  const res = await call(app, c.tokens.adminA, 'POST', '/v1/admin/api-keys', { name: 'CI deploys' });
  assert.equal(res.statusCode, 201, res.body);
  const created = res.json();
  assert.match(created.key, /^svc_/);
  assert.equal(created.name, 'CI deploys');
  assert.equal(created.prefix, created.key.slice(0, created.prefix.length));
  assert.deepEqual(created.created_by, { id: c.adminA.userId, email: c.adminA.email });
  assert.equal(created.last_used_at, null);
  assert.equal(published.find((e) => e.action === 'api_key.created' && e.targetId === created.id)?.actorId, c.adminA.userId);

  // The new key authenticates as an admin of company A.
  const viaNew = await keysOf(app, created.key);
  assert.equal(viaNew.statusCode, 200, viaNew.body);
  const listed = viaNew.json();
  assert.equal(listed.total, 2); // key A from the set-up and this one
  assert.equal(listed.per_page, 20);
  assert.equal(listed.items[0].id, created.id, 'newest first');
  assert.deepEqual(Object.keys(listed.items[0]).sort(), ['created_at', 'created_by', 'id', 'last_used_at', 'name', 'owner', 'prefix', 'scopes']);
  assert.equal(listed.items[1].created_by, null, 'a key made from the command line has no creator');
  assert.ok(!viaNew.body.includes(created.key), 'the plaintext is never listed');
  const [row] = await sql<{ key_hash: string }>(app, 'select key_hash from api_keys where id = ?', [created.id]);
  assert.ok(!viaNew.body.includes(row!.key_hash), 'nor its hash');

  // A key may create a key; it has no creator.
  const byKey = await call(app, c.tokens.keyA, 'POST', '/api/v1/admin/api-keys', { name: 'made by a key' });
  assert.equal(byKey.statusCode, 201, byKey.body);
  assert.equal(byKey.json().created_by, null);
  // Company B sees only its own key.
  assert.deepEqual((await keysOf(app, c.tokens.ownerB)).json().items.map((k: { name: string }) => k.name), ['key B']);

  assertCode(await call(app, c.tokens.memberA, 'POST', '/v1/admin/api-keys', { name: 'x' }), 403, 'forbidden');
  assertCode(await keysOf(app, c.tokens.memberA), 403, 'forbidden');
  assertInvalid(await call(app, c.tokens.ownerA, 'POST', '/v1/admin/api-keys', { name: '' }), 'body.name');
  assertInvalid(await call(app, c.tokens.ownerA, 'POST', '/v1/admin/api-keys', {}), 'body.name');
  assertInvalid(await call(app, c.tokens.ownerA, 'POST', '/v1/admin/api-keys', { name: 'x', scopes: ['all'] }), 'body.scopes');
  const blank = await gql(app, c.tokens.ownerA, 'mutation { createApiKey(input: { name: "   " }) { key } }');
  assert.equal(blank.errors?.[0]?.extensions.code, 'validation_error');
});

test('GET /admin/api-keys pages with the envelope and Link; per_page bounds are 422', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  for (let i = 0; i < 4; i++) await call(app, c.tokens.ownerA, 'POST', '/v1/admin/api-keys', { name: `k${i}` });
  const p2 = await keysOf(app, c.tokens.ownerA, '?per_page=2&page=2');
  assert.deepEqual({ page: p2.json().page, per_page: p2.json().per_page, total: p2.json().total }, { page: 2, per_page: 2, total: 5 });
  assert.deepEqual(p2.json().items.map((k: { name: string }) => k.name), ['k1', 'k0']);
  assert.match(String(p2.headers.link), /per_page=2&page=3>; rel="next"/);
  assert.match(String(p2.headers.link), /per_page=2&page=3>; rel="last"/);
  const last = await keysOf(app, c.tokens.ownerA, '?per_page=2&page=3');
  assert.deepEqual(last.json().items.map((k: { name: string }) => k.name), ['key A']);
  assertInvalid(await keysOf(app, c.tokens.ownerA, '?per_page=0'), 'query.per_page');
  assertInvalid(await keysOf(app, c.tokens.ownerA, '?page=-1'), 'query.page');
});

test('DELETE /admin/api-keys/{id}: 204, a cached key is refused at once, audited; another company 404, superadmin allowed', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const published: AuditEvent[] = [];
  t.after(app.kernel.events.subscribe('audit.recorded', (e) => published.push(e)));

  // The key is used (and so cached by the credential cache) right before its deletion.
  assert.equal((await keysOf(app, c.tokens.keyA)).statusCode, 200);
  assert.equal((await keysOf(app, c.tokens.keyA)).statusCode, 200);
  const del = await call(app, c.tokens.ownerA, 'DELETE', `/v1/admin/api-keys/${c.keyA.id}`);
  assert.equal(del.statusCode, 204, del.body);
  assert.equal(del.body, '');
  assertCode(await keysOf(app, c.tokens.keyA), 401, 'token_invalid');
  assertCode(await app.inject({ url: '/v1/models', headers: bearer(c.tokens.keyA) }), 401, 'token_invalid');
  const [row] = await sql<{ revoked_at: number | null }>(app, 'select revoked_at from api_keys where id = ?', [c.keyA.id]);
  assert.ok(row!.revoked_at);
  const event = published.find((e) => e.action === 'api_key.revoked');
  assert.equal(event?.targetId, c.keyA.id);
  assert.equal(event?.companyId, c.a.companyId);
  assert.equal(event?.actorId, c.a.userId);
  assert.equal((await keysOf(app, c.tokens.ownerA)).json().total, 0, 'revoked keys are not listed');

  assertCode(await call(app, c.tokens.ownerA, 'DELETE', `/v1/admin/api-keys/${c.keyA.id}`), 404, 'not_found');
  assertCode(await call(app, c.tokens.ownerA, 'DELETE', `/v1/admin/api-keys/${randomUUID()}`), 404, 'not_found');
  assertInvalid(await call(app, c.tokens.ownerA, 'DELETE', '/v1/admin/api-keys/nope'), 'path.key_id');
  // Another company's key: 404 and it keeps working.
  assertCode(await call(app, c.tokens.ownerA, 'DELETE', `/api/v1/admin/api-keys/${c.keyB.id}`), 404, 'not_found');
  assertCode(await call(app, c.tokens.adminA, 'DELETE', `/v1/admin/api-keys/${c.keyB.id}`), 404, 'not_found');
  assert.equal((await keysOf(app, c.tokens.keyB)).statusCode, 200);
  const second = await call(app, c.tokens.ownerB, 'POST', '/v1/admin/api-keys', { name: 'second B' });
  assertCode(await call(app, c.tokens.memberA, 'DELETE', `/v1/admin/api-keys/${second.json().id}`), 403, 'forbidden');
  // A key may revoke itself; a superadmin may revoke any company's key.
  assert.equal((await call(app, second.json().key, 'DELETE', `/v1/admin/api-keys/${second.json().id}`)).statusCode, 204);
  assertCode(await keysOf(app, second.json().key), 401, 'token_invalid');
  assert.equal((await call(app, c.tokens.superadmin, 'DELETE', `/v1/admin/api-keys/${c.keyB.id}`)).statusCode, 204);
  assertCode(await keysOf(app, c.tokens.keyB), 401, 'token_invalid');
  assert.equal(published.filter((e) => e.action === 'api_key.revoked' && e.companyId === c.b.companyId).length, 2);
});

test(`a company holds at most ${MAX_ACTIVE_API_KEYS} active keys; revoking one makes room`, async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  let lastId = '';
  for (let i = 0; i < MAX_ACTIVE_API_KEYS; i++) {
    const res = await call(app, access_token, 'POST', '/v1/admin/api-keys', { name: `k${i}` });
    assert.equal(res.statusCode, 201, res.body);
    lastId = res.json().id;
  }
  assertCode(await call(app, access_token, 'POST', '/v1/admin/api-keys', { name: 'one too many' }), 409, 'api_key_limit_reached');
  assert.equal((await call(app, access_token, 'DELETE', `/v1/admin/api-keys/${lastId}`)).statusCode, 204);
  assert.equal((await call(app, access_token, 'POST', '/v1/admin/api-keys', { name: 'room again' })).statusCode, 201);
});

test('apiKeys batches the creator lookups: the same SQL statements for 3 and 12 keys by different users', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  const addKeys = async (n: number) => {
    for (let i = 0; i < n; i++) {
      const admin = await seedUser(app, owner.companyId, 'admin');
      const token = (await login(app, admin.email)).access_token;
      assert.equal((await call(app, token, 'POST', '/v1/admin/api-keys', { name: `by ${admin.email}` })).statusCode, 201);
    }
  };
  const QUERY = '{ apiKeys(perPage: 100) { total items { id name createdBy { id email } } } }';
  await addKeys(3);
  await gql(app, access_token, QUERY); // warm-up: the credential is resolved and cached

  let data: { apiKeys: { total: number; items: { createdBy: { email: string } | null }[] } } | undefined;
  const three = await sqlDuring(async () => (data = (await gql(app, access_token, QUERY)).data as typeof data));
  assert.equal(data!.apiKeys.items.length, 3);
  assert.ok(data!.apiKeys.items.every((k) => k.createdBy?.email.startsWith('admin-')));

  await addKeys(9);
  const twelve = await sqlDuring(async () => (data = (await gql(app, access_token, QUERY)).data as typeof data));
  assert.equal(data!.apiKeys.total, 12);
  assert.equal(new Set(data!.apiKeys.items.map((k) => k.createdBy?.email)).size, 12);
  assert.equal(twelve.length, three.length, `3 keys:\n${three.join('\n')}\n12 keys:\n${twelve.join('\n')}`);
  assert.equal(twelve.filter((s) => /\bfrom [`"]?users\b/i.test(s)).length, 1, twelve.join('\n'));
  assert.ok(twelve.length <= 4, `too many statements:\n${twelve.join('\n')}`);
});

test('revoking a key closes its open subscriptions (4401) and the revocation streams on auditEvents', async (t) => {
  const cleanups: (() => unknown)[] = [];
  const clients: Client[] = [];
  const app = await build({ after: (fn: () => unknown) => cleanups.push(fn) });
  t.after(async () => {
    for (const client of clients) await client.dispose();
    for (const fn of cleanups) await fn();
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const url = `ws://127.0.0.1:${(app.server.address() as AddressInfo).port}/graphql`;
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  const created = (await call(app, access_token, 'POST', '/v1/admin/api-keys', { name: 'dashboard' })).json() as { id: string; key: string };

  const open = (authorization: string, closed: { code: number; reason: string }[], received: { action: string }[]) => {
    const client = createClient({
      url,
      webSocketImpl: WebSocket,
      connectionParams: { authorization },
      retryAttempts: 0,
      shouldRetry: () => false,
      lazy: true,
      on: { closed: (e) => closed.push({ code: (e as { code: number }).code, reason: String((e as { reason?: unknown }).reason ?? '') }) },
    });
    clients.push(client);
    client.subscribe<{ auditEvents: { action: string } }>(
      { query: 'subscription { auditEvents { action } }' },
      { next: (v) => v.data && received.push(v.data.auditEvents), error: () => {}, complete: () => {} },
    );
  };
  const keyClosed: { code: number; reason: string }[] = [];
  const ownerReceived: { action: string }[] = [];
  open(`Bearer ${created.key}`, keyClosed, []);
  open(`Bearer ${access_token}`, [], ownerReceived);
  const listeners = () => (app.kernel.events as unknown as { emitter: { listenerCount(topic: string): number } }).emitter.listenerCount('audit.recorded');
  await until(() => listeners() === 2, 'both subscriptions to attach');

  assert.equal((await call(app, access_token, 'DELETE', `/v1/admin/api-keys/${created.id}`)).statusCode, 204);
  await until(() => keyClosed.length === 1, 'the key socket to close');
  assert.deepEqual(keyClosed[0], { code: 4401, reason: 'api_key_revoked' });
  await until(() => ownerReceived.some((e) => e.action === 'api_key.revoked'), 'the api_key.revoked event');
});

async function until(check: () => boolean, what: string, timeoutMs = 3000) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
