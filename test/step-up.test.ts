import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt } from 'jose';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { bearer, build, createCompanyKey, login, PASSWORD, seedOwner } from './helper';
import { codeAt, resetReplayGuard, sql, totp, wrongCode } from './totp';
import { inContext } from '../src/boot';
import { requireRecentAuthentication, STEP_UP_MAX_AGE_SECONDS } from '../src/domains/identity/recent-authentication';
import { AppError } from '../src/errors/catalog';

function assertCode(res: LightMyRequestResponse, status: number, code: string) {
  assert.equal(res.statusCode, status, res.body);
  assert.ok(String(res.json().type).endsWith(`/errors/${code}`), `expected ${code}, got ${res.body}`);
}

const post = (app: FastifyInstance, url: string, token?: string, payload?: object) =>
  app.inject({ method: 'POST', url, ...(token ? { headers: bearer(token) } : {}), ...(payload ? { payload } : {}) });

const stepUp = (app: FastifyInstance, token: string, payload: object) => post(app, '/v1/auth/step-up', token, payload);
const disable = (app: FastifyInstance, token: string) => post(app, '/v1/me/mfa/disable', token);
const profile = (app: FastifyInstance, token: string) => app.inject({ url: '/v1/me/profile', headers: bearer(token) });

/** Moves the session's last authentication `seconds` into the past, as if it were that old. */
async function ageSession(app: FastifyInstance, token: string, seconds: number) {
  const sid = decodeJwt(token).sid as string;
  await sql(app, 'update sessions set authenticated_at = ? where id = ?', [Date.now() - seconds * 1000, sid]);
}

async function enrol(app: FastifyInstance, token: string, userId: string) {
  const setup = (await post(app, '/v1/me/mfa/setup', token)).json() as { secret: string; recovery_codes: string[] };
  const verified = await post(app, '/v1/me/mfa/verify', token, { totp_code: totp(setup.secret) });
  assert.equal(verified.statusCode, 200, verified.body);
  await resetReplayGuard(app, userId);
  return { secret: setup.secret, recoveryCodes: setup.recovery_codes };
}

test('disabling MFA needs an authentication within 5 minutes; step-up (password + TOTP) grants it', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  const { secret } = await enrol(app, token, owner.userId);
  // Warm the credential cache first: it must not answer for authenticated_at.
  assert.equal((await profile(app, token)).statusCode, 200);

  await ageSession(app, token, STEP_UP_MAX_AGE_SECONDS + 60);
  const refused = await disable(app, token);
  assertCode(refused, 403, 'step_up_required');
  assert.equal(refused.json().max_age_seconds, 300);
  assert.equal((await profile(app, token)).json().mfa_enabled, true);

  // MFA is on: the password alone is not enough, and the password is judged first.
  assertCode(await stepUp(app, token, { password: PASSWORD }), 401, 'mfa_required');
  assertCode(await stepUp(app, token, { password: 'wrong-password-1', totp_code: totp(secret) }), 401, 'invalid_credentials');
  assertCode(await stepUp(app, token, { password: PASSWORD, totp_code: wrongCode(secret) }), 401, 'mfa_invalid');
  assertCode(await disable(app, token), 403, 'step_up_required');

  const before = Date.now();
  const res = await stepUp(app, token, { password: PASSWORD, totp_code: totp(secret) });
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json();
  assert.deepEqual(Object.keys(body).sort(), ['access_token', 'authenticated_at', 'step_up_expires_at']);
  const authenticatedAt = Date.parse(body.authenticated_at);
  assert.ok(authenticatedAt >= before - 1000 && authenticatedAt <= Date.now() + 1000);
  assert.equal(Date.parse(body.step_up_expires_at) - authenticatedAt, 300_000);
  // A new access token of the same session, carrying the time of the step-up.
  const claims = decodeJwt(body.access_token);
  assert.equal(claims.sid, decodeJwt(token).sid);
  assert.equal(claims.sub, owner.userId);
  assert.equal(claims.auth_time, Math.floor(authenticatedAt / 1000));
  const [row] = await sql<{ authenticated_at: number }>(app, 'select authenticated_at from sessions where id = ?', [claims.sid]);
  assert.equal(Number(row!.authenticated_at), authenticatedAt);

  // The session is the source of truth: even the old access token of this session may now disable MFA.
  const disabled = await disable(app, token);
  assert.equal(disabled.statusCode, 204, disabled.body);
  assert.equal(disabled.body, '');
  assert.equal((await profile(app, body.access_token)).json().mfa_enabled, false);
  const [user] = await sql<{ mfa_enabled: number; mfa_secret: string | null; mfa_pending_secret: string | null }>(
    app,
    'select mfa_enabled, mfa_secret, mfa_pending_secret from users where id = ?',
    [owner.userId],
  );
  assert.deepEqual({ ...user }, { mfa_enabled: 0, mfa_secret: null, mfa_pending_secret: null });
  const [{ n }] = await sql<{ n: number }>(app, 'select count(*) as n from mfa_recovery_codes where user_id = ?', [owner.userId]);
  assert.equal(Number(n), 0);
  assert.equal((await post(app, '/v1/auth/login', undefined, { email: owner.email, password: PASSWORD })).statusCode, 200);
  assertCode(await disable(app, body.access_token), 409, 'conflict');

  const actions = (await sql<{ action: string }>(app, 'select action from audit_events order by created_at')).map((r) => r.action);
  for (const action of ['mfa.enabled', 'auth.step_up_failed', 'auth.mfa_failed', 'auth.step_up', 'mfa.disabled']) {
    assert.ok(actions.includes(action), `${action} missing from ${actions.join(', ')}`);
  }
});

test('a login within the last 5 minutes counts; a recovery code also steps up', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  const { recoveryCodes } = await enrol(app, token, owner.userId);

  await ageSession(app, token, STEP_UP_MAX_AGE_SECONDS + 1);
  const viaRecovery = await stepUp(app, token, { password: PASSWORD, totp_code: recoveryCodes[0] });
  assert.equal(viaRecovery.statusCode, 200, viaRecovery.body);
  assertCode(await stepUp(app, token, { password: PASSWORD, totp_code: recoveryCodes[0] }), 401, 'mfa_invalid');

  // Four minutes old is recent enough.
  await ageSession(app, token, 4 * 60);
  assert.equal((await disable(app, token)).statusCode, 204);
});

test('step-up shares the TOTP replay guard with login', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  const { secret } = await enrol(app, token, owner.userId);
  const code = codeAt(secret, 0);
  const signedIn = await post(app, '/v1/auth/login', undefined, { email: owner.email, password: PASSWORD, totp_code: code });
  assert.equal(signedIn.statusCode, 200);
  assertCode(await stepUp(app, token, { password: PASSWORD, totp_code: code }), 401, 'mfa_invalid');
  assert.equal((await stepUp(app, token, { password: PASSWORD, totp_code: codeAt(secret, 1) })).statusCode, 200);
});

test('without MFA, step-up needs only the password; a wrong one is 401 invalid_credentials', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  await ageSession(app, token, 3600);
  const wrong = await stepUp(app, token, { password: 'wrong-password-1' });
  assertCode(wrong, 401, 'invalid_credentials');
  const [{ authenticated_at: stale }] = await sql<{ authenticated_at: number }>(
    app,
    'select authenticated_at from sessions where id = ?',
    [decodeJwt(token).sid],
  );
  assert.ok(Date.now() - Number(stale) >= 3_600_000 - 5_000, 'a failed step-up must not refresh the session');
  assertCode(await stepUp(app, token, {}), 422, 'validation_error');
  const ok = await stepUp(app, token, { password: PASSWORD });
  assert.equal(ok.statusCode, 200, ok.body);
  // Another session of the same user is not stepped up by it.
  const other = await login(app, owner.email);
  await ageSession(app, other.access_token, 3600);
  await inContext(app.kernel.orm, async () => {
    const fresh = await app.domains.identity.auth.authenticate(token);
    const old = await app.domains.identity.auth.authenticate(other.access_token);
    assert.equal((await requireRecentAuthentication(app.kernel.orm, fresh)).userId, owner.userId);
    await assert.rejects(requireRecentAuthentication(app.kernel.orm, old), (e: AppError) => e.code === 'step_up_required');
    await assert.rejects(app.domains.identity.stepUp.requireRecentAuthentication(old), (e: AppError) => e.status === 403);
  });
});

test('an API key cannot step up or pass the recent-authentication policy: a clear problem, not a crash', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { key } = await createCompanyKey(app, owner.companyId);
  const res = await stepUp(app, key, { password: PASSWORD });
  assertCode(res, 400, 'bad_request');
  assert.match(res.json().detail, /API key/);
  assertCode(await disable(app, key), 403, 'forbidden');
  await inContext(app.kernel.orm, async () => {
    const principal = await app.domains.identity.auth.authenticate(key);
    await assert.rejects(requireRecentAuthentication(app.kernel.orm, principal), (e: AppError) => e.code === 'forbidden');
  });
  assertCode(await stepUp(app, '', { password: PASSWORD }), 401, 'unauthenticated');
  await assert.rejects(requireRecentAuthentication(app.kernel.orm, { kind: 'anonymous' }), (e: AppError) => e.code === 'unauthenticated');
});

test('/auth/step-up spends the auth rate-limit budget', async (t) => {
  const app = await build(t, { rateLimit: { windowSeconds: 60, authenticated: 10_000, moduleKey: 10_000, anonymous: 10_000, auth: 2, feedback: 10_000 } });
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  const res = await stepUp(app, token, { password: 'wrong-password-1' });
  assert.match(String(res.headers['ratelimit-policy']), /^"auth";q=2;/);
  assertCode(await stepUp(app, token, { password: PASSWORD }), 429, 'rate_limited');
});

test('GraphQL: disableMfa needs stepUp; stepUp returns a new access token', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  const { secret } = await enrol(app, token, owner.userId);
  const gql = (query: string, variables: object = {}, auth = token) =>
    app.inject({ method: 'POST', url: '/graphql', headers: bearer(auth), payload: { query, variables } });

  await ageSession(app, token, 600);
  const refused = (await gql('mutation { disableMfa }')).json();
  assert.equal(refused.errors[0].extensions.code, 'step_up_required');
  assert.equal(refused.errors[0].extensions.http.status, 403);

  const doc = 'mutation($i: StepUpInput!) { stepUp(input: $i) { accessToken authenticatedAt stepUpExpiresAt } }';
  const missing = (await gql(doc, { i: { password: PASSWORD } })).json();
  assert.equal(missing.errors[0].extensions.code, 'mfa_required');
  const wrong = (await gql(doc, { i: { password: 'wrong-password-1', totpCode: totp(secret) } })).json();
  assert.equal(wrong.errors[0].extensions.code, 'invalid_credentials');
  const ok = (await gql(doc, { i: { password: PASSWORD, totpCode: totp(secret) } })).json();
  assert.equal(ok.errors, undefined, JSON.stringify(ok.errors));
  const { accessToken } = ok.data.stepUp;
  assert.equal(decodeJwt(accessToken).sid, decodeJwt(token).sid);

  const disabled = (await gql('mutation { disableMfa }', {}, accessToken)).json();
  assert.equal(disabled.errors, undefined, JSON.stringify(disabled.errors));
  assert.equal(disabled.data.disableMfa, true);
  assert.equal((await gql('{ me { user { mfaEnabled } } }')).json().data.me.user.mfaEnabled, false);
});
