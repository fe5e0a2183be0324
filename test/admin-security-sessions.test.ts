import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { assertCode, bearer, build, createCompanyKey, login, PASSWORD, seedOwner, seedUser, sql } from './helper';
import { inContext } from '../src/boot';

const SESSIONS = '/v1/admin/security/sessions';
const FIREFOX_LINUX = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0';

async function loginAs(app: FastifyInstance, email: string, userAgent?: string) {
  await new Promise((resolve) => setTimeout(resolve, 3));
  const res = await app.inject({
    method: 'POST',
    url: '/v1/auth/login',
    headers: userAgent ? { 'user-agent': userAgent } : {},
    payload: { email, password: PASSWORD },
    remoteAddress: '10.0.0.7',
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as { access_token: string; refresh_token: string };
}

test("the company's active sessions, newest first, paged with a Link header; revoked and other companies' sessions left out", async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const member = await seedUser(app, owner.companyId);
  const stranger = await seedOwner(app, undefined, 'Elsewhere');
  const ownerToken = (await loginAs(app, owner.email)).access_token;
  const memberFirst = await loginAs(app, member.email, FIREFOX_LINUX);
  await loginAs(app, member.email);
  await loginAs(app, stranger.email);
  // A revoked session is not active.
  await app.inject({ method: 'POST', url: '/v1/auth/logout', headers: bearer(memberFirst.access_token) });

  const res = await app.inject({ url: SESSIONS, headers: bearer(ownerToken) });
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json();
  assert.equal(body.total, 2);
  assert.equal(body.per_page, 50);
  assert.equal(body.page, 1);
  assert.deepEqual(body.items.map((s: { email: string }) => s.email), [member.email, owner.email]);
  const [first] = body.items;
  assert.deepEqual(Object.keys(first).sort(), ['created_at', 'device', 'email', 'id', 'ip', 'last_seen_at', 'user_agent', 'user_id']);
  assert.equal(first.user_id, member.userId);
  assert.equal(first.ip, '10.0.0.7');

  const paged = await app.inject({ url: `${SESSIONS}?per_page=1&page=2`, headers: bearer(ownerToken) });
  assert.equal(paged.json().items.length, 1);
  assert.equal(paged.json().items[0].email, owner.email);
  const link = String(paged.headers.link);
  assert.match(link, /per_page=1&page=1>; rel="first"/);
  assert.match(link, /per_page=1&page=1>; rel="prev"/);
  assert.match(link, /per_page=1&page=2>; rel="last"/);
  assertCode(await app.inject({ url: `${SESSIONS}?per_page=101`, headers: bearer(ownerToken) }), 422, 'validation_error');

  // The device is read from the user agent.
  await loginAs(app, member.email, FIREFOX_LINUX);
  const newest = (await app.inject({ url: `${SESSIONS}?per_page=1`, headers: bearer(ownerToken) })).json().items[0];
  assert.equal(newest.device, 'Firefox on Linux');

  // GraphQL answers the same list.
  const gql = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers: bearer(ownerToken),
    payload: { query: '{ companySessions(perPage: 10) { total perPage items { email userId } } }' },
  });
  assert.equal(gql.json().data.companySessions.total, 3);
  assert.equal(gql.json().data.companySessions.perPage, 10);
});

test('sessions: owner, admin and company key may; a member 403; another company only for a superadmin', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const member = await seedUser(app, owner.companyId);
  const admin = await seedUser(app, owner.companyId, 'admin');
  const other = await seedOwner(app, undefined, 'Other');
  const { key } = await createCompanyKey(app, owner.companyId);
  await inContext(app.kernel.orm, () =>
    app.domains.identity.accounts.createCompanyWithOwner({ email: 'root@example.com', password: PASSWORD, company: 'Platform', superadmin: true }),
  );
  const ownerToken = (await login(app, owner.email)).access_token;
  const adminToken = (await login(app, admin.email)).access_token;
  const memberToken = (await login(app, member.email)).access_token;
  await login(app, other.email);
  const superToken = (await login(app, 'root@example.com')).access_token;

  for (const token of [ownerToken, adminToken, key]) {
    const res = await app.inject({ url: SESSIONS, headers: bearer(token) });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().total, 3);
  }
  assertCode(await app.inject({ url: SESSIONS, headers: bearer(memberToken) }), 403, 'forbidden');
  assertCode(await app.inject({ url: `${SESSIONS}?company_id=${other.companyId}`, headers: bearer(ownerToken) }), 404, 'not_found');
  assertCode(await app.inject({ url: `${SESSIONS}?company_id=${other.companyId}`, headers: bearer(key) }), 404, 'not_found');
  const bySuper = await app.inject({ url: `/api${SESSIONS}?company_id=${other.companyId}`, headers: bearer(superToken) });
  assert.equal(bySuper.statusCode, 200, bySuper.body);
  assert.deepEqual(bySuper.json().items.map((s: { email: string }) => s.email), [other.email]);
  assertCode(await app.inject({ url: SESSIONS }), 401, 'unauthenticated');
});

/** Sets the company's session idle timeout through the admin API. */
async function setIdleTimeout(app: FastifyInstance, token: string, minutes: number): Promise<void> {
  const res = await app.inject({ method: 'PATCH', url: '/v1/admin/security/policy', headers: bearer(token), payload: { session_idle_timeout_minutes: minutes } });
  assert.equal(res.statusCode, 200, res.body);
}

test('sessions idle past the company policy are not listed', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const member = await seedUser(app, owner.companyId);
  const ownerToken = (await login(app, owner.email)).access_token;
  await login(app, member.email);
  await setIdleTimeout(app, ownerToken, 15);
  await sql(app, 'update sessions set last_seen_at = ? where user_id = ?', [Date.now() - 20 * 60_000, member.userId]);
  const res = await app.inject({ url: SESSIONS, headers: bearer(ownerToken) });
  assert.deepEqual(res.json().items.map((s: { email: string }) => s.email), [owner.email]);
});

test('a session idle past the company policy counts on no admin view: the overview, active_session_count, the user\'s sessions and their own list agree with this list', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const member = await seedUser(app, owner.companyId);
  const stranger = await seedOwner(app, undefined, 'No idle timeout');
  await inContext(app.kernel.orm, () =>
    app.domains.identity.accounts.createCompanyWithOwner({ email: 'root@example.com', password: PASSWORD, company: 'Platform', superadmin: true }),
  );
  const ownerToken = (await loginAs(app, owner.email)).access_token;
  await loginAs(app, member.email);
  const fresh = await loginAs(app, member.email);
  await loginAs(app, stranger.email);
  const superToken = (await loginAs(app, 'root@example.com')).access_token;
  await setIdleTimeout(app, ownerToken, 15);
  // The member's first session and the stranger's only one were last seen 20 minutes ago.
  const [idle, live] = await sql<{ id: string }>(app, 'select id from sessions where user_id = ? order by created_at, rowid', [member.userId]);
  const twentyMinutesAgo = Date.now() - 20 * 60_000;
  await sql(app, 'update sessions set last_seen_at = ? where id = ? or user_id = ?', [twentyMinutesAgo, idle!.id, stranger.userId]);
  const get = async (url: string, token = ownerToken) => {
    const res = await app.inject({ url, headers: bearer(token) });
    assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
    return res.json();
  };

  const [ownerSession] = await sql<{ id: string }>(app, 'select id from sessions where user_id = ?', [owner.userId]);
  assert.deepEqual((await get(SESSIONS)).items.map((s: { id: string }) => s.id), [live!.id, ownerSession!.id]);
  assert.equal((await get('/v1/admin/overview')).active_sessions, 2);
  const list = await get('/v1/admin/users');
  assert.equal(list.items.find((u: { id: string }) => u.id === member.userId).active_session_count, 1);
  assert.equal((await get(`/v1/admin/users/${member.userId}`)).active_session_count, 1);
  const sessions = await get(`/v1/admin/users/${member.userId}/sessions`);
  assert.equal(sessions.total, 1);
  assert.deepEqual(sessions.items.map((s: { id: string }) => s.id), [live!.id]);
  const own = await get('/v1/me/sessions', fresh.access_token);
  assert.deepEqual(own.items.map((s: { id: string }) => s.id), [live!.id]);

  // Each company's own policy: the stranger's company has no idle timeout, so its old session still counts.
  const all = await get('/v1/admin/users?per_page=100', superToken);
  const count = (id: string) => all.items.find((u: { id: string }) => u.id === id).active_session_count;
  assert.equal(count(member.userId), 1);
  assert.equal(count(stranger.userId), 1);
  assert.equal((await get(`/v1/admin/users/${stranger.userId}/sessions`, superToken)).total, 1);
});
