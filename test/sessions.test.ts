import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { decodeJwt } from 'jose';
import WebSocket from 'ws';
import { createClient } from 'graphql-ws';
import type { FastifyInstance } from 'fastify';
import { assertCode, bearer, build, createCompanyKey, login, PASSWORD, seedOwner, sql } from './helper';
import { hashPassword } from '../src/auth/password';
import { Company } from '../src/domains/identity/company.entity';
import { User } from '../src/domains/identity/user.entity';
import { describeUserAgent } from '../src/domains/identity/user-agent';

const FIREFOX_LINUX = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0';
const SAFARI_IOS =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1';

type Tokens = { access_token: string; refresh_token: string };

const sid = (tokens: Tokens) => decodeJwt(tokens.access_token).sid as string;

/** Signs in; waits a few ms first so that sessions started one after another never share a created_at. */
async function loginAs(app: FastifyInstance, email: string, userAgent?: string): Promise<Tokens> {
  await new Promise((resolve) => setTimeout(resolve, 3));
  const res = await app.inject({
    method: 'POST',
    url: '/v1/auth/login',
    headers: userAgent ? { 'user-agent': userAgent } : {},
    payload: { email, password: PASSWORD },
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

const profile = (app: FastifyInstance, token: string) => app.inject({ url: '/v1/me/profile', headers: bearer(token) });
const refresh = (app: FastifyInstance, token: string) =>
  app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refresh_token: token } });
const listSessions = (app: FastifyInstance, token: string, query = '', prefix = '/v1') =>
  app.inject({ url: `${prefix}/me/sessions${query}`, headers: bearer(token) });
const revokeOne = (app: FastifyInstance, token: string, id: string, prefix = '/v1') =>
  app.inject({ method: 'DELETE', url: `${prefix}/me/sessions/${id}`, headers: bearer(token) });
const revokeAll = (app: FastifyInstance, token: string, prefix = '/v1') =>
  app.inject({ method: 'POST', url: `${prefix}/me/sessions/revoke-all`, headers: bearer(token) });

async function gql(app: FastifyInstance, token: string, query: string, variables: Record<string, unknown> = {}) {
  const res = await app.inject({ method: 'POST', url: '/graphql', headers: bearer(token), payload: { query, variables } });
  return res.json() as { data: Record<string, unknown> | null; errors?: { extensions: { code: string } }[] };
}

async function createUser(app: FastifyInstance, companyId: string) {
  const email = `member-${Math.random().toString(36).slice(2)}@example.com`;
  const em = app.kernel.orm.em.fork();
  em.create(User, { company: em.getReference(Company, companyId), email, passwordHash: await hashPassword(PASSWORD, 1024), role: 'member' });
  await em.flush();
  return email;
}

async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 3000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

interface SessionItem {
  id: string;
  device: string | null;
  user_agent: string | null;
  ip: string | null;
  created_at: string;
  last_seen_at: string;
  current: boolean;
}

test('the device is a short browser/OS description, or the tool name, or null', () => {
  assert.equal(describeUserAgent(FIREFOX_LINUX), 'Firefox on Linux');
  assert.equal(describeUserAgent(SAFARI_IOS), 'Safari on iOS');
  assert.equal(
    describeUserAgent('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.0.0'),
    'Edge on Windows',
  );
  assert.equal(
    describeUserAgent('Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36'),
    'Chrome on Android',
  );
  assert.equal(
    describeUserAgent('Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15'),
    'Safari on macOS',
  );
  assert.equal(describeUserAgent('curl/8.5.0'), 'curl');
  assert.equal(describeUserAgent('python-requests/2.32.3'), 'python-requests');
  assert.equal(describeUserAgent('Mozilla/5.0 (compatible; SomethingNew)'), null);
  assert.equal(describeUserAgent(''), null);
  assert.equal(describeUserAgent(null), null);
});

test('GET /me/sessions lists active sessions newest first with device, ip, last seen and the current flag', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const first = await loginAs(app, owner.email, FIREFOX_LINUX);
  const second = await loginAs(app, owner.email, 'curl/8.5.0');
  const revoked = await loginAs(app, owner.email);
  assert.equal((await app.inject({ method: 'POST', url: '/v1/auth/logout', headers: bearer(revoked.access_token) })).statusCode, 204);

  for (const prefix of ['/v1', '/api/v1']) {
    const res = await listSessions(app, second.access_token, '', prefix);
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json() as { items: SessionItem[]; page: number; per_page: number; total: number };
    assert.deepEqual({ page: body.page, per_page: body.per_page, total: body.total }, { page: 1, per_page: 50, total: 2 });
    assert.deepEqual(body.items.map((s) => s.id), [sid(second), sid(first)]);
    const [newest, oldest] = body.items as [SessionItem, SessionItem];
    assert.deepEqual(Object.keys(newest).sort(), ['created_at', 'current', 'device', 'id', 'ip', 'last_seen_at', 'user_agent']);
    assert.equal(newest.current, true);
    assert.equal(oldest.current, false);
    assert.equal(newest.device, 'curl');
    assert.equal(newest.user_agent, 'curl/8.5.0');
    assert.equal(oldest.device, 'Firefox on Linux');
    assert.equal(oldest.user_agent, FIREFOX_LINUX);
    assert.equal(oldest.ip, '127.0.0.1');
    assert.ok(Date.parse(oldest.created_at) <= Date.parse(newest.created_at));
    assert.ok(Date.parse(oldest.last_seen_at) >= Date.parse(oldest.created_at));
    assert.match(String(res.headers.link), /page=1&per_page=50>; rel="first"/);
    assert.match(String(res.headers.link), /rel="last"/);
    assert.doesNotMatch(String(res.headers.link), /rel="next"/);
  }

  // The other session sees itself as current.
  const fromFirst = (await listSessions(app, first.access_token)).json() as { items: SessionItem[] };
  assert.deepEqual(fromFirst.items.map((s) => s.current), [false, true]);
});

test('last_seen_at follows use of the session (throttled to about once a minute)', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const tokens = await login(app, owner.email);
  const hourAgo = Date.now() - 3600_000;
  await sql(app, 'update sessions set last_seen_at = ?, created_at = ? where id = ?', [hourAgo, hourAgo, sid(tokens)]);
  // The first request on the session records it as seen; the write is off the request path.
  assert.equal((await profile(app, tokens.access_token)).statusCode, 200);
  await until(async () => {
    const [item] = ((await listSessions(app, tokens.access_token)).json() as { items: SessionItem[] }).items;
    return Date.now() - Date.parse(item!.last_seen_at) < 60_000;
  }, 'last_seen_at to move');
  const [item] = ((await listSessions(app, tokens.access_token)).json() as { items: SessionItem[] }).items;
  assert.equal(Date.parse(item!.created_at), hourAgo);
});

test('GET /me/sessions pages with the envelope and a Link header; bad page parameters are 422', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const sessions = [];
  for (let i = 0; i < 3; i++) sessions.push(await loginAs(app, owner.email));
  const caller = sessions[2]!;

  const page1 = await listSessions(app, caller.access_token, '?per_page=2');
  assert.equal(page1.statusCode, 200, page1.body);
  const body1 = page1.json() as { items: SessionItem[]; page: number; per_page: number; total: number };
  assert.deepEqual(
    { ...body1, items: body1.items.map((s) => s.id) },
    { items: [sid(sessions[2]!), sid(sessions[1]!)], page: 1, per_page: 2, total: 3 },
  );
  const links = String(page1.headers.link);
  assert.match(links, /<http:\/\/[^>]+\/v1\/me\/sessions\?per_page=2&page=2>; rel="next"/);
  assert.match(links, /page=2[^>]*>; rel="last"/);
  assert.doesNotMatch(links, /rel="prev"/);

  const page2 = await listSessions(app, caller.access_token, '?per_page=2&page=2');
  assert.deepEqual(page2.json().items.map((s: SessionItem) => s.id), [sid(sessions[0]!)]);
  assert.match(String(page2.headers.link), /page=1>; rel="prev"/);
  assert.doesNotMatch(String(page2.headers.link), /rel="next"/);

  for (const query of ['?per_page=0', '?per_page=101', '?page=0', '?page=x', '?sort=created_at']) {
    assertCode(await listSessions(app, caller.access_token, query), 422, 'validation_error');
  }
  const gqlBad = await gql(app, caller.access_token, '{ mySessions(perPage: 1000) { total } }');
  assert.equal(gqlBad.errors?.[0]?.extensions.code, 'validation_error');
});

test('DELETE /me/sessions/{id} ends that session at once; the others keep working; audited', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const a = await login(app, owner.email);
  const b = await login(app, owner.email);
  // Warm the credential cache: revocation must still bite at once.
  assert.equal((await profile(app, a.access_token)).statusCode, 200);

  const res = await app.inject({
    method: 'DELETE',
    url: `/api/v1/me/sessions/${sid(a)}`,
    headers: { ...bearer(b.access_token), 'x-request-id': 'revoke-one-1' },
  });
  assert.equal(res.statusCode, 204, res.body);
  assert.equal(res.body, '');

  assertCode(await profile(app, a.access_token), 401, 'token_invalid');
  assertCode(await refresh(app, a.refresh_token), 401, 'token_invalid');
  assert.equal((await profile(app, b.access_token)).statusCode, 200);
  const list = (await listSessions(app, b.access_token)).json() as { items: SessionItem[]; total: number };
  assert.deepEqual(list.items.map((s) => s.id), [sid(b)]);
  // Gone is gone: a second revocation is 404.
  assertCode(await revokeOne(app, b.access_token, sid(a)), 404, 'not_found');

  const rows = await sql(app, "select company_id, actor_id, target_type, target_id, ip, request_id, data from audit_events where action = 'session.revoked'");
  assert.equal(rows.length, 1);
  assert.equal(rows[0]!.company_id, owner.companyId);
  assert.equal(rows[0]!.actor_id, owner.userId);
  assert.equal(rows[0]!.target_type, 'session');
  assert.equal(rows[0]!.target_id, sid(a));
  assert.equal(rows[0]!.ip, '127.0.0.1');
  assert.equal(rows[0]!.request_id, 'revoke-one-1');
  assert.deepEqual(JSON.parse(String(rows[0]!.data)), { current: false });
  const reasons = await sql(app, 'select revoked_reason from sessions where id = ?', [sid(a)]);
  assert.equal(reasons[0]!.revoked_reason, 'revoked_by_user');
});

test('revoking the current session ends the caller\'s own token', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const a = await login(app, owner.email);
  const res = await revokeOne(app, a.access_token, sid(a));
  assert.equal(res.statusCode, 204);
  assert.match([res.headers['set-cookie']].flat().join('\n'), /service_token=;/);
  assertCode(await profile(app, a.access_token), 401, 'token_invalid');
});

test("another user's or another company's session answers 404 and stays alive; a malformed id is 422", async (t) => {
  const app = await build(t);
  const a = await seedOwner(app, undefined, 'A');
  const b = await seedOwner(app, undefined, 'B');
  const colleague = await createUser(app, a.companyId);
  const mine = await login(app, a.email);
  const colleagues = await login(app, colleague);
  const foreign = await login(app, b.email);

  for (const victim of [colleagues, foreign]) {
    assertCode(await revokeOne(app, mine.access_token, sid(victim)), 404, 'not_found');
    const viaGraphql = await gql(app, mine.access_token, 'mutation($id: ID!) { revokeSession(id: $id) }', { id: sid(victim) });
    assert.equal(viaGraphql.errors?.[0]?.extensions.code, 'not_found');
    assert.equal((await profile(app, victim.access_token)).statusCode, 200);
  }
  assertCode(await revokeOne(app, mine.access_token, '00000000-0000-4000-8000-000000000000'), 404, 'not_found');
  const malformed = await revokeOne(app, mine.access_token, 'not-a-uuid');
  assertCode(malformed, 422, 'validation_error');
  assert.deepEqual(malformed.json().errors[0].loc, ['path', 'session_id']);
  // GraphQL holds the id to a UUID as REST does, before the resolver runs.
  const gqlMalformed = await gql(app, mine.access_token, 'mutation { revokeSession(id: "not-a-uuid") }');
  assert.equal(gqlMalformed.errors?.[0]?.extensions.code, 'validation_error');

  // Nobody else's sessions show in a list.
  const list = (await listSessions(app, mine.access_token)).json() as { items: SessionItem[] };
  assert.deepEqual(list.items.map((s) => s.id), [sid(mine)]);
  const none = await sql(app, "select id from audit_events where action = 'session.revoked'");
  assert.equal(none.length, 0);
});

test('POST /me/sessions/revoke-all ends every session of the caller at once, its own included; audited with a count', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const colleague = await createUser(app, owner.companyId);
  const mine = [await login(app, owner.email), await login(app, owner.email), await login(app, owner.email)];
  const other = await login(app, colleague);
  for (const tokens of mine) assert.equal((await profile(app, tokens.access_token)).statusCode, 200);

  const revokedIds: string[] = [];
  const off = app.kernel.events.subscribe('session.revoked', (e) => revokedIds.push(e.sessionId));
  t.after(off);
  const res = await app.inject({
    method: 'POST',
    url: '/v1/me/sessions/revoke-all',
    headers: { ...bearer(mine[1]!.access_token), 'x-request-id': 'revoke-all-1' },
  });
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(res.json(), { revoked: 3 });
  assert.match([res.headers['set-cookie']].flat().join('\n'), /service_token=;/);
  assert.deepEqual(revokedIds.sort(), mine.map(sid).sort());

  for (const tokens of mine) {
    assertCode(await profile(app, tokens.access_token), 401, 'token_invalid');
    assertCode(await refresh(app, tokens.refresh_token), 401, 'token_invalid');
  }
  assertCode(await revokeAll(app, mine[0]!.access_token), 401, 'token_invalid');
  assert.equal((await profile(app, other.access_token)).statusCode, 200);

  const rows = await sql(app, "select actor_id, target_type, target_id, request_id, data from audit_events where action = 'session.revoked_all'");
  assert.equal(rows.length, 1);
  assert.equal(rows[0]!.actor_id, owner.userId);
  assert.equal(rows[0]!.target_type, 'user');
  assert.equal(rows[0]!.target_id, owner.userId);
  assert.equal(rows[0]!.request_id, 'revoke-all-1');
  assert.deepEqual(JSON.parse(String(rows[0]!.data)), { count: 3 });

  // Signing in again starts afresh.
  const again = await login(app, owner.email);
  const list = (await listSessions(app, again.access_token, '', '/api/v1')).json() as { items: SessionItem[]; total: number };
  assert.equal(list.total, 1);
  const viaApi = await revokeAll(app, again.access_token, '/api/v1');
  assert.deepEqual(viaApi.json(), { revoked: 1 });
});

test('GraphQL: mySessions, revokeSession and revokeAllSessions', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const a = await loginAs(app, owner.email, SAFARI_IOS);
  const b = await loginAs(app, owner.email);
  const c = await loginAs(app, owner.email);

  const listed = await gql(app, b.access_token, '{ mySessions { items { id device userAgent ip createdAt lastSeenAt current } page perPage total } }');
  assert.equal(listed.errors, undefined, JSON.stringify(listed.errors));
  const page = listed.data!.mySessions as { items: { id: string; device: string | null; current: boolean; ip: string }[]; page: number; perPage: number; total: number };
  assert.deepEqual({ page: page.page, perPage: page.perPage, total: page.total }, { page: 1, perPage: 50, total: 3 });
  assert.deepEqual(page.items.map((s) => s.id), [sid(c), sid(b), sid(a)]);
  assert.deepEqual(page.items.map((s) => s.current), [false, true, false]);
  assert.equal(page.items[2]!.device, 'Safari on iOS');
  assert.equal(page.items[2]!.ip, '127.0.0.1');

  const revoked = await gql(app, b.access_token, 'mutation($id: ID!) { revokeSession(id: $id) }', { id: sid(a) });
  assert.deepEqual(revoked, { data: { revokeSession: true } });
  assertCode(await profile(app, a.access_token), 401, 'token_invalid');

  const all = await gql(app, b.access_token, 'mutation { revokeAllSessions }');
  assert.deepEqual(all, { data: { revokeAllSessions: 2 } });
  assertCode(await profile(app, b.access_token), 401, 'token_invalid');
  assertCode(await profile(app, c.access_token), 401, 'token_invalid');
  const kinds = await sql<{ action: string }>(app, "select action from audit_events where action like 'session.%' order by created_at");
  assert.deepEqual(kinds.map((k) => k.action), ['session.revoked', 'session.revoked_all']);
});

test('a company API key has no sessions: 403 forbidden on every session operation', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const tokens = await login(app, owner.email);
  const { key } = await createCompanyKey(app, owner.companyId);

  assertCode(await listSessions(app, key), 403, 'forbidden');
  assertCode(await revokeOne(app, key, sid(tokens)), 403, 'forbidden');
  assertCode(await revokeAll(app, key), 403, 'forbidden');
  for (const query of ['{ mySessions { total } }', `mutation { revokeSession(id: "${sid(tokens)}") }`, 'mutation { revokeAllSessions }']) {
    assert.equal((await gql(app, key, query)).errors?.[0]?.extensions.code, 'forbidden', query);
  }
  assert.equal((await profile(app, tokens.access_token)).statusCode, 200);
  // Without any credential: 401.
  assertCode(await app.inject({ url: '/v1/me/sessions' }), 401, 'unauthenticated');
  assertCode(await app.inject({ method: 'POST', url: '/v1/me/sessions/revoke-all' }), 401, 'unauthenticated');
});

test('revoke-all closes the caller\'s open subscriptions with 4401', async (t) => {
  const cleanups: (() => unknown)[] = [];
  const app = await build({ after: (fn: () => unknown) => cleanups.push(fn) });
  const owner = await seedOwner(app);
  const watcher = await login(app, owner.email);
  const other = await login(app, owner.email);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const closed: number[] = [];
  const client = createClient({
    url: `ws://127.0.0.1:${port}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${watcher.access_token}` },
    retryAttempts: 0,
    shouldRetry: () => false,
    on: { closed: (event) => closed.push((event as { code: number }).code) },
  });
  t.after(async () => {
    await client.dispose();
    for (const fn of cleanups) await fn();
  });
  client.subscribe({ query: 'subscription { auditEvents { action } }' }, { next: () => undefined, error: () => undefined, complete: () => undefined });
  const listeners = () =>
    (app.kernel.events as unknown as { emitter: { listenerCount(topic: string): number } }).emitter.listenerCount('audit.recorded');
  await until(() => listeners() === 1, 'the subscription to attach');

  const res = await revokeAll(app, other.access_token);
  assert.deepEqual(res.json(), { revoked: 2 });
  await until(() => closed.length > 0, 'the socket to close');
  assert.deepEqual(closed, [4401]);
});

test('refresh token theft: a rotated token replayed after the grace window revokes the whole session', async (t) => {
  const app = await build(t, { refreshReuseGraceSeconds: 0 });
  const owner = await seedOwner(app);
  const first = await login(app, owner.email);
  const rotated = await refresh(app, first.refresh_token);
  assert.equal(rotated.statusCode, 200);
  const newest = rotated.json() as Tokens;
  assert.equal((await profile(app, newest.access_token)).statusCode, 200);

  const revokedIds: string[] = [];
  const off = app.kernel.events.subscribe('session.revoked', (e) => revokedIds.push(e.sessionId));
  t.after(off);
  const replay = await app.inject({
    method: 'POST',
    url: '/v1/auth/refresh',
    headers: { 'x-request-id': 'theft-1' },
    payload: { refresh_token: first.refresh_token },
  });
  assertCode(replay, 401, 'token_invalid');
  assert.deepEqual(revokedIds, [sid(first)]);

  // The thief's and the owner's newest tokens both fail now.
  assertCode(await refresh(app, newest.refresh_token), 401, 'token_invalid');
  assertCode(await profile(app, newest.access_token), 401, 'token_invalid');
  assertCode(await profile(app, first.access_token), 401, 'token_invalid');

  const sessions = await sql(app, 'select revoked_at, revoked_reason from sessions where id = ?', [sid(first)]);
  assert.ok(sessions[0]!.revoked_at);
  assert.equal(sessions[0]!.revoked_reason, 'refresh_token_reused');
  const audit = await sql(app, "select actor_id, target_id, request_id, data from audit_events where action = 'auth.refresh_token_reused'");
  assert.equal(audit.length, 1);
  assert.equal(audit[0]!.actor_id, owner.userId);
  assert.equal(audit[0]!.target_id, sid(first));
  assert.equal(audit[0]!.request_id, 'theft-1');
  assert.deepEqual(JSON.parse(String(audit[0]!.data)), { sessionRevoked: true });

  // Other sessions of the user are not touched; signing in again works.
  const fresh = await login(app, owner.email);
  assert.equal((await profile(app, fresh.access_token)).statusCode, 200);
});

test('with the default grace window, N parallel refreshes: exactly one wins, the losers do not revoke the session', async (t) => {
  const app = await build(t);
  assert.equal(app.domains.identity.config.refreshReuseGraceSeconds, 30);
  const owner = await seedOwner(app);
  const tokens = await login(app, owner.email);
  const results = await Promise.all(Array.from({ length: 8 }, () => refresh(app, tokens.refresh_token)));
  const winners = results.filter((r) => r.statusCode === 200);
  assert.equal(winners.length, 1, results.map((r) => r.statusCode).join(','));
  for (const loser of results.filter((r) => r.statusCode !== 200)) assertCode(loser, 401, 'token_invalid');
  const winner = winners[0]!.json() as Tokens;

  // A loser's replay inside the window is still just a 401; its retry with the newer token works.
  assertCode(await refresh(app, tokens.refresh_token), 401, 'token_invalid');
  assert.equal((await profile(app, winner.access_token)).statusCode, 200);
  assert.equal((await profile(app, tokens.access_token)).statusCode, 200);
  const retried = await refresh(app, winner.refresh_token);
  assert.equal(retried.statusCode, 200, retried.body);
  assert.equal((await profile(app, (retried.json() as Tokens).access_token)).statusCode, 200);

  const sessions = await sql(app, 'select revoked_at from sessions');
  assert.deepEqual(sessions, [{ revoked_at: null }]);
  const reused = await sql(app, "select id from audit_events where action = 'auth.refresh_token_reused'");
  assert.equal(reused.length, 0);
});
