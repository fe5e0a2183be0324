import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { bearer, build, createCompanyKey, login, PASSWORD, seedOwner, seedUser, sql } from './helper';
import { inContext } from '../src/boot';

const WRONG = 'wrong-password-123';

function assertCode(res: LightMyRequestResponse, status: number, code: string) {
  assert.equal(res.statusCode, status, res.body);
  assert.equal(res.json().code, code, res.body);
  assert.ok(String(res.json().type).endsWith(`/errors/${code}`), res.body);
}

/** The body without what differs on every request anyway. */
function strip(res: LightMyRequestResponse) {
  const { request_id: _ignored, ...rest } = res.json();
  return rest;
}

const attempt = (app: FastifyInstance, email: string, password: string, options: { prefix?: string; ip?: string } = {}) =>
  app.inject({
    method: 'POST',
    url: `${options.prefix ?? '/v1'}/auth/login`,
    payload: { email, password },
    ...(options.ip ? { remoteAddress: options.ip } : {}),
  });

/** Lets the running delay or lock of every address end now, as if the time had passed. */
async function expireBlocks(app: FastifyInstance) {
  await sql(app, 'update login_throttles set blocked_until = ? where blocked_until is not null', [Date.now() - 1000]);
}

/** Both addresses get the same answer: status, code, body (but its request id) and Retry-After. */
function assertSame(real: LightMyRequestResponse, ghost: LightMyRequestResponse, what: string) {
  assert.equal(real.statusCode, ghost.statusCode, what);
  assert.deepEqual(strip(real), strip(ghost), what);
  assert.equal(real.headers['retry-after'], ghost.headers['retry-after'], what);
  assert.equal(real.headers['content-type'], ghost.headers['content-type'], what);
}

test('failed logins: delays from the 5th failure, a lock at the 10th, identical for a real and an unknown email', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const ghost = 'nobody-here@example.com';
  const both = async (password: string, what: string) => {
    const real = await attempt(app, owner.email, password);
    const unknown = await attempt(app, ghost, password);
    assertSame(real, unknown, what);
    return real;
  };

  for (let n = 1; n <= 5; n++) assertCode(await both(WRONG, `failure ${n}`), 401, 'invalid_credentials');
  // From the 5th failure on, the next attempt waits 2^(n-5) seconds.
  for (let n = 5; n <= 9; n++) {
    const early = await both(WRONG, `early attempt after failure ${n}`);
    assertCode(early, 429, 'rate_limited');
    assert.equal(early.headers['retry-after'], String(2 ** (n - 5)), `after failure ${n}`);
    assert.equal(early.json().retry_after_seconds, 2 ** (n - 5));
    // The right password is refused too while the wait runs: it is not even tried.
    assertCode(await attempt(app, owner.email, PASSWORD), 429, 'rate_limited');
    await expireBlocks(app);
    const next = await both(WRONG, `failure ${n + 1}`);
    if (n + 1 < 10) assertCode(next, 401, 'invalid_credentials');
    else {
      assertCode(next, 429, 'account_locked');
      assert.equal(next.headers['retry-after'], String(15 * 60));
    }
  }

  // Locked: every attempt, the right password included, for 15 minutes.
  const locked = await both(PASSWORD, 'locked, right password for the real one');
  assertCode(locked, 429, 'account_locked');
  const retryAfter = Number(locked.headers['retry-after']);
  assert.ok(retryAfter > 890 && retryAfter <= 900, String(retryAfter));
  assertCode(await attempt(app, owner.email, PASSWORD, { prefix: '/api/v1' }), 429, 'account_locked');
  // Per address, not per client: another IP is locked out all the same.
  assertCode(await attempt(app, owner.email, PASSWORD, { ip: '203.0.113.9' }), 429, 'account_locked');
  // GraphQL signs in through the same core.
  const gql = await app.inject({
    method: 'POST',
    url: '/graphql',
    payload: { query: 'mutation($i: LoginInput!) { login(input: $i) { accessToken } }', variables: { i: { email: owner.email, password: PASSWORD } } },
  });
  assert.equal(gql.json().errors[0].extensions.code, 'account_locked');

  // The lock was audited once per address, filed under the company when there is one.
  const locks = await sql<{ company_id: string | null; actor_label: string }>(
    app,
    "select company_id, actor_label from audit_events where action = 'auth.account_locked' order by actor_label",
  );
  assert.deepEqual(locks, [
    { company_id: null, actor_label: ghost },
    { company_id: owner.companyId, actor_label: owner.email },
  ]);
  const refused = await sql(app, "select id from audit_events where action = 'auth.login_failed' and data like '%account_locked%'");
  assert.ok(refused.length >= 2);
  // The table keys addresses by HMAC: no email in it.
  assert.ok(!JSON.stringify(await sql(app, 'select * from login_throttles')).includes('example.com'));

  // The lock ends; a failure after it locks again at once, for both.
  await expireBlocks(app);
  assertCode(await both(WRONG, 'first failure after the lock'), 429, 'account_locked');

  // After the lock, the right password signs in and starts the count again from zero.
  await expireBlocks(app);
  assert.equal((await attempt(app, owner.email, PASSWORD)).statusCode, 200);
  for (let n = 1; n <= 5; n++) assertCode(await attempt(app, owner.email, WRONG), 401, 'invalid_credentials');
  assertCode(await attempt(app, owner.email, WRONG), 429, 'rate_limited');
  // The unknown address keeps its lock (it never signs in).
  await expireBlocks(app);
  assertCode(await attempt(app, ghost, WRONG), 429, 'account_locked');
});

test('a successful login resets the count', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  for (let round = 0; round < 3; round++) {
    for (let n = 1; n <= 4; n++) assertCode(await attempt(app, owner.email, WRONG), 401, 'invalid_credentials');
    assert.equal((await attempt(app, owner.email, PASSWORD)).statusCode, 200, `round ${round}`);
  }
  assert.deepEqual(await sql(app, 'select * from login_throttles'), []);
  // The email is normalized: case and spaces do not make a second count.
  for (let n = 1; n <= 5; n++) {
    assertCode(await attempt(app, n % 2 ? owner.email.toUpperCase() : ` ${owner.email} `, WRONG), 401, 'invalid_credentials');
  }
  assertCode(await attempt(app, owner.email, WRONG), 429, 'rate_limited');
});

test('wrong passwords at step-up count with sign-in\'s: delayed from the 5th, locked at the 10th, so a stolen token is no way around the guard', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  const stepUp = (password: string) => app.inject({ method: 'POST', url: '/v1/auth/step-up', headers: bearer(token), payload: { password } });
  for (let n = 1; n <= 5; n++) assertCode(await stepUp(WRONG), 401, 'invalid_credentials');
  // The same count as sign-in: the next attempt of either waits, the right password too.
  assertCode(await stepUp(PASSWORD), 429, 'rate_limited');
  assertCode(await attempt(app, owner.email, PASSWORD), 429, 'rate_limited');
  for (let n = 6; n <= 10; n++) {
    await expireBlocks(app);
    const res = await stepUp(WRONG);
    assertCode(res, n < 10 ? 401 : 429, n < 10 ? 'invalid_credentials' : 'account_locked');
  }
  await expireBlocks(app);
  // A right step-up clears the count, as a right sign-in does.
  assert.equal((await stepUp(PASSWORD)).statusCode, 200);
  assert.deepEqual(await sql(app, 'select * from login_throttles'), []);
});

test('failures far apart do not add up; thresholds are configurable', async (t) => {
  const app = await build(t, {
    loginThrottle: { delayAfterFailures: 2, maxDelaySeconds: 3, lockAfterFailures: 5, lockSeconds: 60, failureMemorySeconds: 3600 },
  });
  const owner = await seedOwner(app);
  assertCode(await attempt(app, owner.email, WRONG), 401, 'invalid_credentials');
  assertCode(await attempt(app, owner.email, WRONG), 401, 'invalid_credentials');
  const early = await attempt(app, owner.email, WRONG);
  assertCode(early, 429, 'rate_limited');
  assert.equal(early.headers['retry-after'], '1');
  // Two hours later the streak is forgotten.
  await sql(app, 'update login_throttles set last_failure_at = ?, blocked_until = null', [Date.now() - 2 * 3600_000]);
  assertCode(await attempt(app, owner.email, WRONG), 401, 'invalid_credentials');
  assertCode(await attempt(app, owner.email, WRONG), 401, 'invalid_credentials');
  assertCode(await attempt(app, owner.email, WRONG), 429, 'rate_limited');
  // The delay is capped (2^2 = 4 > 3).
  for (const expected of ['2', '3']) {
    await expireBlocks(app);
    assertCode(await attempt(app, owner.email, WRONG), 401, 'invalid_credentials');
    assert.equal((await attempt(app, owner.email, WRONG)).headers['retry-after'], expected);
  }
  await expireBlocks(app);
  const lock = await attempt(app, owner.email, WRONG);
  assertCode(lock, 429, 'account_locked');
  assert.equal(lock.headers['retry-after'], '60');
});

test('concurrent attempts cannot slip past the lock together', async (t) => {
  const app = await build(t, {
    loginThrottle: { delayAfterFailures: 0, maxDelaySeconds: 60, lockAfterFailures: 3, lockSeconds: 900, failureMemorySeconds: 3600 },
  });
  const owner = await seedOwner(app);
  const results = await Promise.all(Array.from({ length: 12 }, () => attempt(app, owner.email, WRONG)));
  // Exactly 3 attempts were checked against the password (the third one locked); all others were refused unchecked.
  assert.equal(results.filter((r) => r.statusCode === 401).length, 2, results.map((r) => r.statusCode).join(','));
  for (const r of results) assert.ok(r.statusCode === 401 || r.statusCode === 429, r.body);
  const [locks] = await sql<{ n: number }>(app, "select count(*) as n from audit_events where action = 'auth.account_locked'");
  assert.equal(Number(locks!.n), 1);
  const [row] = await sql<{ failures: number }>(app, 'select failures from login_throttles');
  assert.equal(row!.failures, 3);
});

test('admin unlock: owner or admin of the company, its API key or a superadmin; another company 404, a member 403', async (t) => {
  const app = await build(t, {
    loginThrottle: { delayAfterFailures: 0, maxDelaySeconds: 60, lockAfterFailures: 3, lockSeconds: 900, failureMemorySeconds: 3600 },
  });
  const a = await seedOwner(app, 'owner-a@example.com', 'Company A');
  const b = await seedOwner(app, 'owner-b@example.com', 'Company B');
  const member = await seedUser(app, a.companyId, 'member');
  const adminA = await seedUser(app, a.companyId, 'admin');
  const operator = await inContext(app.kernel.orm, () =>
    app.domains.identity.accounts.createCompanyWithOwner({ email: 'ops@example.com', password: PASSWORD, company: 'Platform', superadmin: true }),
  );
  const ownerA = await login(app, a.email);
  const ownerB = await login(app, b.email);
  const memberTokens = await login(app, member.email);
  const adminTokens = await login(app, adminA.email);
  const superTokens = await login(app, 'ops@example.com');
  const { key } = await createCompanyKey(app, a.companyId);

  const lockMember = async () => {
    for (let n = 1; n <= 3; n++) await attempt(app, member.email, WRONG);
    assertCode(await attempt(app, member.email, PASSWORD), 429, 'account_locked');
  };
  const unlock = (token: string, userId: string, prefix = '/v1') =>
    app.inject({ method: 'POST', url: `${prefix}/admin/users/${userId}/unlock`, headers: bearer(token) });

  await lockMember();
  // A member may not, not even for themselves; asked before anything is looked up.
  assertCode(await unlock(memberTokens.access_token, member.userId), 403, 'forbidden');
  assertCode(await unlock(memberTokens.access_token, b.userId), 403, 'forbidden');
  // Another company's user is absent; so is an unknown id. Nothing of the user leaks.
  const foreign = await unlock(ownerB.access_token, member.userId);
  assertCode(foreign, 404, 'not_found');
  assert.ok(!foreign.body.includes(member.email));
  assertCode(await unlock(ownerB.access_token, '00000000-0000-4000-8000-000000000000'), 404, 'not_found');
  assertCode(await unlock(ownerA.access_token, 'not-a-uuid'), 422, 'validation_error');
  assertCode(await app.inject({ method: 'POST', url: `/v1/admin/users/${member.userId}/unlock` }), 401, 'unauthenticated');
  assertCode(await attempt(app, member.email, PASSWORD), 429, 'account_locked');

  // The owner of the company can.
  const done = await unlock(ownerA.access_token, member.userId);
  assert.equal(done.statusCode, 200, done.body);
  assert.deepEqual(done.json(), { user_id: member.userId, was_locked: true, failures: 3 });
  assert.equal((await attempt(app, member.email, PASSWORD)).statusCode, 200);
  // Nothing to unlock: still 200, was_locked false.
  assert.deepEqual((await unlock(ownerA.access_token, member.userId, '/api/v1')).json(), { user_id: member.userId, was_locked: false, failures: 0 });

  // An admin of the company, its API key, and a superadmin from elsewhere can too.
  for (const [who, token] of [['admin', adminTokens.access_token], ['api key', key], ['superadmin', superTokens.access_token]] as const) {
    await lockMember();
    const res = await unlock(token, member.userId, who === 'api key' ? '/api/v1' : '/v1');
    assert.equal(res.statusCode, 200, `${who}: ${res.body}`);
    assert.equal(res.json().was_locked, true, who);
    assert.equal((await attempt(app, member.email, PASSWORD)).statusCode, 200, who);
  }

  // GraphQL: unlockUser.
  await lockMember();
  const gql = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers: bearer(ownerA.access_token),
    payload: { query: 'mutation($id: ID!) { unlockUser(userId: $id) { userId wasLocked failures } }', variables: { id: member.userId } },
  });
  assert.deepEqual(gql.json().data.unlockUser, { userId: member.userId, wasLocked: true, failures: 3 });
  const foreignGql = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers: bearer(ownerB.access_token),
    payload: { query: 'mutation($id: ID!) { unlockUser(userId: $id) { userId } }', variables: { id: member.userId } },
  });
  assert.equal(foreignGql.json().errors[0].extensions.code, 'not_found');

  // Audited in the user's company, with the actor.
  const audited = await sql<{ company_id: string; actor_type: string; actor_id: string | null }>(
    app,
    "select company_id, actor_type, actor_id from audit_events where action = 'user.unlocked' order by rowid",
  );
  assert.equal(audited.length, 6);
  assert.ok(audited.every((r) => r.company_id === a.companyId));
  assert.deepEqual(audited.map((r) => r.actor_type), ['user', 'user', 'user', 'api_key', 'user', 'user']);
  assert.equal(audited[4]!.actor_id, operator.user.id);
});
