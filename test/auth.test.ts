import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { decodeJwt } from 'jose';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { bearer, build, createCompanyKey, login, PASSWORD, seedOwner, sql } from './helper';
import { inContext } from '../src/boot';
import { hashPassword } from '../src/auth/password';
import { User } from '../src/domains/identity/user.entity';
import { Company } from '../src/domains/identity/company.entity';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

function assertCode(res: LightMyRequestResponse, status: number, code: string) {
  assert.equal(res.statusCode, status, res.body);
  assert.ok(String(res.json().type).endsWith(`/errors/${code}`), `expected ${code}, got ${res.body}`);
}

const refresh = (app: FastifyInstance, token: string, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url: '/v1/auth/refresh', headers, payload: { refresh_token: token } });

const profile = (app: FastifyInstance, token: string) => app.inject({ url: '/v1/me/profile', headers: bearer(token) });

/** Runs SQL on a fresh unit of work, outside any request. */
/** Adds a member to a company directly in the database (no invitation flow needed here). */
async function seedMember(app: FastifyInstance, companyId: string, email: string) {
  await inContext(app.kernel.orm, async () => {
    const em = app.kernel.orm.em.fork();
    const company = await em.findOneOrFail(Company, { id: companyId });
    em.create(User, { company, email, role: 'member', passwordHash: await hashPassword(PASSWORD, 1024) });
    await em.flush();
  });
  return email;
}

interface AuditItem {
  action: string;
  actorType: string;
  actorId: string | null;
  actorLabel: string | null;
  ip: string | null;
  requestId: string | null;
  companyId: string | null;
}

async function auditLog(app: FastifyInstance, token: string) {
  const res = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers: bearer(token),
    payload: {
      query: '{ auditLog(perPage: 100) { items { action actorType actorId actorLabel ip requestId companyId } total } }',
    },
  });
  return res.json() as { data: { auditLog: { items: AuditItem[]; total: number } } | null; errors?: { extensions: { code: string } }[] };
}

test('login returns exactly access_token, refresh_token and user {id, email, role}', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const res = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: owner.email, password: PASSWORD } });
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const body = res.json();
  assert.deepEqual(Object.keys(body).sort(), ['access_token', 'refresh_token', 'user']);
  assert.deepEqual(Object.keys(body.user).sort(), ['email', 'id', 'role']);
  assert.deepEqual(body.user, { id: owner.userId, email: owner.email, role: 'owner' });
  // 32 random bytes, base64url.
  assert.equal(Buffer.from(body.refresh_token, 'base64url').length, 32);
});

test('the access token is a JWT with sub, cid, role, sid and exp = iat + 900', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  const header = JSON.parse(Buffer.from(access_token.split('.')[0]!, 'base64url').toString());
  assert.equal(header.alg, 'HS256');
  const claims = decodeJwt(access_token);
  assert.equal(claims.sub, owner.userId);
  assert.equal(claims.cid, owner.companyId);
  assert.equal(claims.role, 'owner');
  assert.equal(typeof claims.sid, 'string');
  assert.equal(typeof claims.iat, 'number');
  assert.equal(claims.exp, claims.iat! + 900);
  assert.ok(Math.abs(claims.iat! - Date.now() / 1000) < 30);
});

test('unknown email and wrong password both give 401 invalid_credentials with identical bodies', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const unknown = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: 'nobody@example.com', password: PASSWORD } });
  const wrong = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: owner.email, password: 'wrong-password-1' } });
  assertCode(unknown, 401, 'invalid_credentials');
  assertCode(wrong, 401, 'invalid_credentials');
  const strip = (res: LightMyRequestResponse) => {
    const { request_id: _ignored, ...rest } = res.json();
    return rest;
  };
  assert.deepEqual(strip(unknown), strip(wrong));
  assert.equal(unknown.headers['content-type'], wrong.headers['content-type']);
});

test('login email is case-insensitive and trimmed', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app, 'Mixed.Case@Example.com');
  for (const email of ['mixed.case@example.com', 'MIXED.CASE@EXAMPLE.COM', '  Mixed.Case@example.COM ']) {
    const res = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email, password: PASSWORD } });
    assert.equal(res.statusCode, 200, email);
    assert.equal(res.json().user.id, owner.userId);
    assert.equal(res.json().user.email, 'mixed.case@example.com');
  }
});

test('login finds an address in either Unicode normal form (NFC or NFD): one address, stored in NFC', async (t) => {
  const app = await build(t);
  const nfc = 'j\u00f6hn@example.com';
  const nfd = 'jo\u0308hn@example.com';
  const owner = await seedOwner(app, nfd.toUpperCase());
  for (const email of [nfc, nfd, ` ${nfd.toUpperCase()}`]) {
    const res = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email, password: PASSWORD } });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().user.id, owner.userId);
    assert.equal(res.json().user.email, nfc);
  }
});

test('refresh rotates: the new pair works, the presented token is spent (401 token_invalid)', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const first = await login(app, owner.email);
  const res = await refresh(app, first.refresh_token);
  assert.equal(res.statusCode, 200);
  const second = res.json();
  assert.deepEqual(Object.keys(second).sort(), ['access_token', 'refresh_token']);
  assert.notEqual(second.refresh_token, first.refresh_token);
  assert.equal(decodeJwt(second.access_token).sid, decodeJwt(first.access_token).sid);
  assert.equal((await profile(app, second.access_token)).statusCode, 200);

  assertCode(await refresh(app, first.refresh_token), 401, 'token_invalid');
  const third = await refresh(app, second.refresh_token);
  assert.equal(third.statusCode, 200);
  assertCode(await refresh(app, 'never-issued'), 401, 'token_invalid');
});

test('concurrent refreshes with one token: exactly one 200, nine 401 token_invalid, and the winner\'s token works', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { refresh_token } = await login(app, owner.email);
  const results = await Promise.all(Array.from({ length: 10 }, () => refresh(app, refresh_token)));
  const winners = results.filter((r) => r.statusCode === 200);
  const losers = results.filter((r) => r.statusCode !== 200);
  assert.equal(winners.length, 1, results.map((r) => r.statusCode).join(','));
  assert.equal(losers.length, 9);
  for (const loser of losers) assertCode(loser, 401, 'token_invalid');
  const winner = winners[0]!.json();
  assert.equal((await profile(app, winner.access_token)).statusCode, 200);
  const next = await refresh(app, winner.refresh_token);
  assert.equal(next.statusCode, 200, next.body);
  // Exactly one successor was issued for the spent token.
  const rows = await sql<{ n: number }>(app, 'select count(*) as n from refresh_tokens');
  assert.equal(Number(rows[0]!.n), 3);
  // Losing a race inside the grace window is not reported as token reuse.
  const reused = await sql(app, "select id from audit_events where action = 'auth.refresh_token_reused'");
  assert.equal(reused.length, 0);
});

test('logout: 204, clears service_token, ends that session\'s access and refresh tokens at once, not other sessions', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const a = await login(app, owner.email);
  const b = await login(app, owner.email);
  // Warm any credential cache first: logout must still bite at once.
  assert.equal((await profile(app, a.access_token)).statusCode, 200);

  const res = await app.inject({ method: 'POST', url: '/v1/auth/logout', headers: bearer(a.access_token) });
  assert.equal(res.statusCode, 204);
  assert.equal(res.body, '');
  const cookie = [res.headers['set-cookie']].flat().join('\n');
  assert.match(cookie, /service_token=;/);
  assert.match(cookie, /Max-Age=0/i);

  assertCode(await profile(app, a.access_token), 401, 'token_invalid');
  assertCode(await refresh(app, a.refresh_token), 401, 'token_invalid');
  // A second logout with the dead token is refused too.
  assert.equal((await app.inject({ method: 'POST', url: '/v1/auth/logout', headers: bearer(a.access_token) })).statusCode, 401);

  assert.equal((await profile(app, b.access_token)).statusCode, 200);
  assert.equal((await refresh(app, b.refresh_token)).statusCode, 200);
});

test('logout without a credential is 401', async (t) => {
  const app = await build(t);
  assertCode(await app.inject({ method: 'POST', url: '/v1/auth/logout' }), 401, 'unauthenticated');
  assertCode(await app.inject({ method: 'POST', url: '/v1/auth/logout', headers: bearer('junk') }), 401, 'token_invalid');
});

test('an API key reads /v1/me/profile as the company: auth_method api_key, role admin, no user', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { key, id } = await createCompanyKey(app, owner.companyId, 'ci key');
  assert.ok(key.startsWith('svc_'));
  const res = await profile(app, key);
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json();
  assert.equal(body.auth_method, 'api_key');
  assert.equal(body.role, 'admin');
  assert.equal(body.id, null);
  assert.equal(body.email, null);
  assert.equal(body.company.id, owner.companyId);
  assert.equal(body.api_key.id, id);
  assert.equal(body.api_key.name, 'ci key');
  assert.ok(body.api_key.prefix.startsWith('svc_'));
  assert.ok(body.api_key.prefix.length < key.length);
});

test('an API key that is not in the database is 401 token_invalid', async (t) => {
  const app = await build(t);
  const unknownKey = 'svc_' + randomBytes(32).toString('base64url');
  assertCode(await profile(app, unknownKey), 401, 'token_invalid');
  assertCode(await profile(app, 'svc_'), 401, 'token_invalid');
});

test('refresh tokens and API keys are stored only as SHA-256 hashes, never in plaintext', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { refresh_token } = await login(app, owner.email);
  const { key } = await createCompanyKey(app, owner.companyId);

  const tokenRows = await sql(app, 'select * from refresh_tokens');
  assert.deepEqual(tokenRows.map((r) => r.token_hash), [sha256(refresh_token)]);
  assert.ok(!JSON.stringify(tokenRows).includes(refresh_token));

  const keyRows = await sql(app, 'select * from api_keys');
  assert.deepEqual(keyRows.map((r) => r.key_hash), [sha256(key)]);
  assert.ok(!JSON.stringify(keyRows).includes(key));
  // The audit trail does not leak them either.
  const audit = JSON.stringify(await sql(app, 'select * from audit_events'));
  assert.ok(!audit.includes(refresh_token) && !audit.includes(key));
});

test('the audit log records logins, failures, logouts, token reuse and key creation for the right company only', async (t) => {
  // No grace window: the replayed token below counts as reuse at once.
  const app = await build(t, { refreshReuseGraceSeconds: 0 });
  const a = await seedOwner(app, 'owner-a@example.com', 'Company A');
  const b = await seedOwner(app, 'owner-b@example.com', 'Company B');

  const loggedIn = await app.inject({
    method: 'POST',
    url: '/v1/auth/login',
    headers: { 'x-request-id': 'audit-login-1' },
    payload: { email: a.email, password: PASSWORD },
  });
  assert.equal(loggedIn.statusCode, 200);
  const session = loggedIn.json();
  await app.inject({
    method: 'POST',
    url: '/v1/auth/login',
    headers: { 'x-request-id': 'audit-fail-1' },
    payload: { email: a.email, password: 'wrong-password-1' },
  });
  const rotated = (await refresh(app, session.refresh_token)).json();
  // Logout first: the replay below is taken as theft and ends the session (see sessions.test.ts).
  const logout = await app.inject({
    method: 'POST',
    url: '/v1/auth/logout',
    headers: { ...bearer(rotated.access_token), 'x-request-id': 'audit-logout-1' },
  });
  assert.equal(logout.statusCode, 204);
  assertCode(await refresh(app, session.refresh_token, { 'x-request-id': 'audit-reuse-1' }), 401, 'token_invalid');
  const { id: keyId } = await createCompanyKey(app, a.companyId, 'audited key');

  const viewer = await login(app, a.email);
  const log = await auditLog(app, viewer.access_token);
  assert.equal(log.errors, undefined, JSON.stringify(log.errors));
  const items = log.data!.auditLog.items;
  const find = (action: string, requestId?: string) => {
    const item = items.find((i) => i.action === action && (requestId === undefined || i.requestId === requestId));
    assert.ok(item, `audit log lacks ${action} ${requestId ?? ''}: ${JSON.stringify(items.map((i) => i.action))}`);
    return item;
  };
  for (const item of items) assert.equal(item.companyId, a.companyId);

  const login1 = find('auth.login', 'audit-login-1');
  assert.equal(login1.ip, '127.0.0.1');
  assert.equal(login1.actorType, 'user');
  assert.equal(login1.actorId, a.userId);
  assert.equal(login1.actorLabel, a.email);

  const failed = find('auth.login_failed', 'audit-fail-1');
  assert.equal(failed.actorType, 'anonymous');
  assert.equal(failed.actorLabel, a.email);
  assert.equal(failed.ip, '127.0.0.1');

  const reused = find('auth.refresh_token_reused', 'audit-reuse-1');
  assert.equal(reused.actorId, a.userId);

  const loggedOut = find('auth.logout', 'audit-logout-1');
  assert.equal(loggedOut.actorId, a.userId);
  assert.equal(loggedOut.ip, '127.0.0.1');

  const created = find('api_key.created');
  assert.ok(created);
  const keyRows = await sql(app, "select target_id from audit_events where action = 'api_key.created'");
  assert.deepEqual(keyRows.map((r) => r.target_id), [keyId]);

  // The owner of another company sees only its own company's trail.
  const other = await login(app, b.email);
  const otherLog = await auditLog(app, other.access_token);
  assert.equal(otherLog.errors, undefined);
  const otherItems = otherLog.data!.auditLog.items;
  assert.ok(otherItems.length > 0);
  for (const item of otherItems) {
    assert.equal(item.companyId, b.companyId);
    assert.notEqual(item.actorId, a.userId);
    assert.ok(!['audit-login-1', 'audit-fail-1', 'audit-reuse-1', 'audit-logout-1'].includes(item.requestId ?? ''));
  }

  // A member of the other company sees none of them either.
  const memberEmail = await seedMember(app, b.companyId, 'member-b@example.com');
  const member = await login(app, memberEmail);
  const memberLog = await auditLog(app, member.access_token);
  const memberItems = memberLog.data?.auditLog.items ?? [];
  assert.ok(memberItems.every((i) => i.companyId === b.companyId));
  if (memberLog.errors) assert.equal(memberLog.errors[0]!.extensions.code, 'forbidden');
});

test('a failed login for an unknown email is audited without a company', async (t) => {
  const app = await build(t);
  await app.inject({
    method: 'POST',
    url: '/v1/auth/login',
    headers: { 'x-request-id': 'unknown-email-1' },
    payload: { email: 'ghost@example.com', password: 'whatever-1' },
  });
  const rows = await sql(app, "select company_id, action, ip from audit_events where request_id = 'unknown-email-1'");
  assert.deepEqual(rows, [{ company_id: null, action: 'auth.login_failed', ip: '127.0.0.1' }]);
});
