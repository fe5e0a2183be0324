import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { bearer, build, createCompanyKey, login, PASSWORD, seedOwner } from './helper';
import {
  ALLOWED_REDIRECT,
  callback,
  cookiePair,
  googleClaims,
  microsoftClaims,
  setCookie,
  ssoConfig,
  startMockProvider,
  type MockProvider,
  type StartedFlow,
} from './oidc-mock';
import { awayFromStepBoundary, codeAt, resetReplayGuard, sql, totp, wrongCode } from './totp';
import { inContext } from '../src/boot';
import { STEP_UP_MAX_AGE_SECONDS } from '../src/domains/identity/recent-authentication';
import type { AppError } from '../src/errors/catalog';
import { withQuery } from '../src/domains/identity/sso.service';

/**
 * Single sign-on and MFA: a provider sign-in of a user with MFA on leaves a
 * browser-bound challenge instead of a session (POST /auth/sso/mfa answers
 * it), and SSO users step up through the provider (intent=step_up).
 */

const PUBLIC_URL = 'http://127.0.0.1:8080';
const origin = { origin: PUBLIC_URL };
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

let google: MockProvider;
let microsoft: MockProvider;

before(async () => {
  google = await startMockProvider('google');
  microsoft = await startMockProvider('microsoft');
});
after(async () => {
  await google.stop();
  await microsoft.stop();
});

function assertCode(res: LightMyRequestResponse, status: number, code: string) {
  assert.equal(res.statusCode, status, res.body);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  assert.equal(res.json().code, code, res.body);
}

async function ssoApp(t: Parameters<typeof build>[0]) {
  return build(t, { sso: ssoConfig(google, microsoft) });
}

/** The data of the latest audit event with `action`. */
async function lastAudit(app: FastifyInstance, action: string): Promise<Record<string, unknown>> {
  const rows = await sql<{ data: string | null }>(app, 'select data from audit_events where action = ? order by created_at desc, rowid desc limit 1', [
    action,
  ]);
  assert.ok(rows[0], `no ${action} audit event`);
  return rows[0].data ? JSON.parse(rows[0].data) : {};
}

const countSessions = async (app: FastifyInstance, userId: string) =>
  Number((await sql<{ n: number }>(app, 'select count(*) as n from sessions where user_id = ?', [userId]))[0]!.n);

/** Start with the caller's own headers (its cookie or Bearer token, for a step-up). */
async function startWith(app: FastifyInstance, provider: string, query: string, headers: Record<string, string> = {}): Promise<StartedFlow> {
  const start = await app.inject({ method: 'GET', url: `/v1/auth/${provider}/start${query}`, headers });
  if (start.statusCode !== 302) throw new Error(`start answered ${start.statusCode}: ${start.body}`);
  const authorizationUrl = new URL(String(start.headers.location));
  return {
    start,
    authorizationUrl,
    stateCookie: cookiePair(setCookie(start, 'atrium_sso_state')),
    state: authorizationUrl.searchParams.get('state')!,
  };
}

/** A whole browser round trip: start, the provider's consent (with `claims`), callback with the browser's cookies. */
async function roundTrip(
  app: FastifyInstance,
  mock: MockProvider,
  provider: 'google' | 'microsoft',
  claims: (payload: Record<string, unknown>) => void,
  options: { query?: string; startHeaders?: Record<string, string>; browserCookies?: string } = {},
) {
  const flow = await startWith(app, provider, options.query ?? '', options.startHeaders);
  mock.nextIdToken(claims);
  const location = await mock.authorize(flow.authorizationUrl.href);
  const cookie = [flow.stateCookie, options.browserCookies].filter(Boolean).join('; ');
  const res = await callback(app, location, cookie);
  return { res, flow, location };
}

/** The challenge of an MFA redirect and the browser's binding cookie. */
function challengeOf(res: LightMyRequestResponse) {
  assert.equal(res.statusCode, 302, res.body);
  const location = new URL(String(res.headers.location), PUBLIC_URL);
  const challenge = location.searchParams.get('challenge');
  assert.ok(challenge, `no challenge in ${res.headers.location}`);
  return { location, challenge, cookie: cookiePair(setCookie(res, 'atrium_sso_mfa')) };
}

const answer = (app: FastifyInstance, payload: object, cookie?: string, headers: Record<string, string> = origin, prefix = '/v1') =>
  app.inject({ method: 'POST', url: `${prefix}/auth/sso/mfa`, headers: { ...headers, ...(cookie ? { cookie } : {}) }, payload });

/** Enrols MFA for a signed-in caller (Bearer or cookie headers); the replay guard is reset so the current step works again. */
async function enrol(app: FastifyInstance, headers: Record<string, string>, userId: string) {
  const setup = await app.inject({ method: 'POST', url: '/v1/me/mfa/setup', headers });
  assert.equal(setup.statusCode, 200, setup.body);
  const { secret, recovery_codes: recoveryCodes } = setup.json() as { secret: string; recovery_codes: string[] };
  const verified = await app.inject({ method: 'POST', url: '/v1/me/mfa/verify', headers, payload: { totp_code: totp(secret) } });
  assert.equal(verified.statusCode, 200, verified.body);
  await resetReplayGuard(app, userId);
  return { secret, recoveryCodes };
}

/** An owner with a password and MFA on, about to sign in with Google (linked by verified email). */
async function mfaOwner(app: FastifyInstance, email = `mfa-${randomBytes(4).toString('hex')}@example.com`) {
  const owner = await seedOwner(app, email);
  const { access_token: token } = await login(app, owner.email);
  const { secret, recoveryCodes } = await enrol(app, bearer(token), owner.userId);
  return { ...owner, secret, recoveryCodes, claims: googleClaims(`g-${owner.email}`, owner.email) };
}

async function inviteUser(app: FastifyInstance, companyId: string, email: string) {
  const id = randomBytes(16).toString('hex');
  const now = Date.now();
  await sql(
    app,
    'insert into invitations (id, company_id, email, role, token_hash, status, expires_at, created_at) values (?, ?, ?, ?, ?, ?, ?, ?)',
    [id, companyId, email, 'member', sha256(id), 'pending', now + 86_400_000, now],
  );
}

/** A user created by SSO from an invitation: no password anyone knows. Returns their browser session cookie. */
async function ssoOnlyUser(app: FastifyInstance, companyId: string, sub: string, email: string) {
  await inviteUser(app, companyId, email);
  const { res } = await roundTrip(app, google, 'google', googleClaims(sub, email));
  assert.equal(res.statusCode, 302, res.body);
  const cookie = cookiePair(setCookie(res, 'service_token'));
  const profile = await app.inject({ url: '/v1/me/profile', headers: { cookie } });
  assert.equal(profile.statusCode, 200, profile.body);
  return { cookie, userId: profile.json().id as string, sessionId: await sessionOfCookie(app, cookie) };
}

async function sessionOfCookie(app: FastifyInstance, cookie: string): Promise<string> {
  const token = decodeURIComponent(cookie.slice(cookie.indexOf('=') + 1));
  const [row] = await sql<{ id: string }>(app, 'select id from sessions where cookie_token_hash = ?', [sha256(token)]);
  assert.ok(row, 'no session for this cookie');
  return row.id;
}

async function ageSession(app: FastifyInstance, sessionId: string, seconds: number) {
  await sql(app, 'update sessions set authenticated_at = ? where id = ?', [Date.now() - seconds * 1000, sessionId]);
}

async function authenticatedAt(app: FastifyInstance, sessionId: string): Promise<number> {
  const [row] = await sql<{ authenticated_at: number }>(app, 'select authenticated_at from sessions where id = ?', [sessionId]);
  return Number(row!.authenticated_at);
}

/** Whether the step-up policy lets this browser session through right now. */
async function passesStepUpPolicy(app: FastifyInstance, cookie: string): Promise<boolean> {
  return inContext(app.kernel.orm, async () => {
    const principal = await app.domains.identity.sessionCookies.authenticate(decodeURIComponent(cookie.slice(cookie.indexOf('=') + 1)));
    try {
      await app.domains.identity.stepUp.requireRecentAuthentication(principal);
      return true;
    } catch (error) {
      if ((error as AppError).code === 'step_up_required') return false;
      throw error;
    }
  });
}

test('MFA on: the SSO callback opens no session; a wrong code is 401, the right one sets the cookie; the challenge works once', async (t) => {
  const app = await ssoApp(t);
  const owner = await mfaOwner(app);
  await awayFromStepBoundary();
  const sessionsBefore = await countSessions(app, owner.userId);

  const { res } = await roundTrip(app, google, 'google', owner.claims);
  assert.equal(setCookie(res, 'service_token'), undefined, 'no session cookie before the code');
  assert.equal(await countSessions(app, owner.userId), sessionsBefore, 'no session row before the code');
  const { location, challenge, cookie } = challengeOf(res);
  assert.equal(`${location.origin}${location.pathname}`, `${PUBLIC_URL}/app/mfa`);
  assert.equal([...location.searchParams.keys()].join(), 'challenge');
  assert.equal(Buffer.from(challenge, 'base64url').length, 32);
  const binding = setCookie(res, 'atrium_sso_mfa')!;
  assert.match(binding, /HttpOnly/);
  assert.match(binding, /SameSite=Lax/);
  assert.match(binding, /Max-Age=300/);
  assert.match(binding, /Path=\/v1\/auth\/sso\/mfa/);
  assert.match(setCookie(res, 'atrium_sso_state')!, /Max-Age=0/);

  // Only the hash is kept, for 300 seconds.
  const rows = await sql<{ challenge_hash: string; user_id: string; intent: string; created_at: number; expires_at: number }>(
    app,
    'select * from sso_mfa_challenges',
  );
  assert.equal(rows.length, 1);
  assert.equal(rows[0]!.challenge_hash, sha256(challenge));
  assert.equal(rows[0]!.user_id, owner.userId);
  assert.equal(rows[0]!.intent, 'login');
  assert.equal(rows[0]!.expires_at - rows[0]!.created_at, 300_000);
  assert.ok(!JSON.stringify(rows).includes(challenge));
  assert.equal((await lastAudit(app, 'auth.sso_mfa_challenged')).intent, 'login');
  // Matched by verified email, but nothing about the account changes before the code: not linked yet.
  assert.equal((await sql(app, 'select id from user_identities')).length, 0);

  // A wrong code: 401, no cookie, audited; the challenge stays usable.
  const wrong = await answer(app, { challenge, totp_code: wrongCode(owner.secret) }, cookie);
  assertCode(wrong, 401, 'mfa_invalid');
  assert.equal(setCookie(wrong, 'service_token'), undefined);
  assert.equal(setCookie(wrong, 'atrium_sso_mfa'), undefined, 'the binding survives a wrong code');
  assert.equal(await countSessions(app, owner.userId), sessionsBefore);
  const failure = await lastAudit(app, 'auth.mfa_failed');
  assert.equal(failure.context, 'sso_login');
  assert.equal(failure.method, 'totp');
  assert.equal((await sql(app, 'select id from user_identities')).length, 0);

  // The right code: 200 {redirect_to}, the session cookie, the binding cleared.
  const code = totp(owner.secret);
  const ok = await answer(app, { challenge, totp_code: code }, cookie);
  assert.equal(ok.statusCode, 200, ok.body);
  assert.deepEqual(ok.json(), { redirect_to: `${PUBLIC_URL}/app` });
  const line = setCookie(ok, 'service_token')!;
  assert.match(line, /HttpOnly/);
  assert.match(line, /SameSite=Lax/);
  assert.match(setCookie(ok, 'atrium_sso_mfa')!, /Max-Age=0/);
  const session = cookiePair(line);
  const profile = await app.inject({ url: '/v1/me/profile', headers: { cookie: session } });
  assert.equal(profile.statusCode, 200, profile.body);
  assert.equal(profile.json().id, owner.userId);
  assert.equal(await countSessions(app, owner.userId), sessionsBefore + 1);
  assert.equal((await lastAudit(app, 'auth.login')).method, 'sso');
  assert.deepEqual(await sql(app, 'select provider, subject, user_id from user_identities'), [
    { provider: 'google', subject: `g-${owner.email}`, user_id: owner.userId },
  ]);
  assert.equal((await lastAudit(app, 'user.sso_linked')).subject, `g-${owner.email}`);

  // Single use: the same challenge again (even with another valid code) is refused.
  const replay = await answer(app, { challenge, totp_code: codeAt(owner.secret, 1) }, cookie);
  assertCode(replay, 400, 'sso_state_invalid');
  assert.equal(setCookie(replay, 'service_token'), undefined);
  assert.equal((await lastAudit(app, 'auth.sso_failed')).reason, 'challenge_replayed');
  // The code itself was spent too: a password login cannot reuse it.
  const reuse = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: owner.email, password: PASSWORD, totp_code: code } });
  assertCode(reuse, 401, 'mfa_invalid');
});

test('an expired challenge, a challenge from another browser and an answer from a foreign origin are refused', async (t) => {
  const app = await ssoApp(t);
  const owner = await mfaOwner(app);
  await awayFromStepBoundary();

  // Another browser: the challenge (say, from a leaked URL) without its binding cookie, or with another one.
  const { res } = await roundTrip(app, google, 'google', owner.claims);
  const { challenge, cookie } = challengeOf(res);
  assertCode(await answer(app, { challenge, totp_code: totp(owner.secret) }), 400, 'sso_state_invalid');
  assert.equal((await lastAudit(app, 'auth.sso_failed')).reason, 'challenge_not_bound');
  const other = challengeOf((await roundTrip(app, google, 'google', owner.claims)).res);
  const crossed = await answer(app, { challenge, totp_code: totp(owner.secret) }, other.cookie);
  assertCode(crossed, 400, 'sso_state_invalid');
  assert.equal(setCookie(crossed, 'service_token'), undefined);
  // A forged challenge bound to itself is unknown.
  const forged = randomBytes(32).toString('base64url');
  assertCode(await answer(app, { challenge: forged, totp_code: totp(owner.secret) }, `atrium_sso_mfa=${forged}`), 400, 'sso_state_invalid');
  assert.equal((await lastAudit(app, 'auth.sso_failed')).reason, 'challenge_unknown');

  // Not from an allowed origin (cross-site page, or none): 403 before anything is looked at.
  assertCode(await answer(app, { challenge, totp_code: totp(owner.secret) }, cookie, { origin: 'https://evil.example.net' }), 403, 'csrf_rejected');
  assertCode(await answer(app, { challenge, totp_code: totp(owner.secret) }, cookie, {}), 403, 'csrf_rejected');
  assertCode(await answer(app, { challenge }, cookie), 422, 'validation_error');

  // None of that spent it: the rightful browser finishes.
  const ok = await answer(app, { challenge, totp_code: totp(owner.secret) }, cookie);
  assert.equal(ok.statusCode, 200, ok.body);
  assert.ok(setCookie(ok, 'service_token'));

  // Expired: past its 300 seconds.
  const late = challengeOf((await roundTrip(app, google, 'google', owner.claims)).res);
  await sql(app, 'update sso_mfa_challenges set expires_at = ? where challenge_hash = ?', [Date.now() - 1000, sha256(late.challenge)]);
  const expired = await answer(app, { challenge: late.challenge, totp_code: codeAt(owner.secret, 1) }, late.cookie);
  assertCode(expired, 400, 'sso_state_invalid');
  assert.match(setCookie(expired, 'atrium_sso_mfa')!, /Max-Age=0/);
  assert.equal((await lastAudit(app, 'auth.sso_failed')).reason, 'challenge_expired');
  assert.equal(setCookie(expired, 'service_token'), undefined);
});

test('the challenge honours redirect_uri and the /api/v1 prefix, takes a recovery code, and five wrong codes spend it', async (t) => {
  const app = await ssoApp(t);
  const owner = await mfaOwner(app);

  // Started under /api/v1 with an allow-listed redirect_uri.
  const startApi = await app.inject({ url: `/api/v1/auth/google/start?redirect_uri=${encodeURIComponent(ALLOWED_REDIRECT)}` });
  const authUrl = new URL(String(startApi.headers.location));
  google.nextIdToken(owner.claims);
  const res = await callback(app, await google.authorize(authUrl.href), cookiePair(setCookie(startApi, 'atrium_sso_state')));
  const { location, challenge, cookie } = challengeOf(res);
  assert.equal(`${location.origin}${location.pathname}`, ALLOWED_REDIRECT);
  assert.match(setCookie(res, 'atrium_sso_mfa')!, /Path=\/api\/v1\/auth\/sso\/mfa/);
  const ok = await answer(app, { challenge, totp_code: owner.recoveryCodes[0]!.toLowerCase() }, cookie, origin, '/api/v1');
  assert.equal(ok.statusCode, 200, ok.body);
  assert.equal(ok.json().redirect_to, ALLOWED_REDIRECT);
  assert.ok(setCookie(ok, 'service_token'));
  const used = await lastAudit(app, 'mfa.recovery_code_used');
  assert.equal(used.context, 'sso_login');

  // A spent recovery code is a wrong code; five wrong codes use the challenge up.
  const next = challengeOf((await roundTrip(app, google, 'google', owner.claims)).res);
  assertCode(await answer(app, { challenge: next.challenge, totp_code: owner.recoveryCodes[0]! }, next.cookie), 401, 'mfa_invalid');
  for (let i = 0; i < 4; i++) {
    assertCode(await answer(app, { challenge: next.challenge, totp_code: wrongCode(owner.secret) }, next.cookie), 401, 'mfa_invalid');
  }
  const exhausted = await answer(app, { challenge: next.challenge, totp_code: owner.recoveryCodes[1]! }, next.cookie);
  assertCode(exhausted, 400, 'sso_state_invalid');
  assert.equal((await lastAudit(app, 'auth.sso_failed')).reason, 'challenge_exhausted');
  // The refused attempt did not spend that recovery code.
  const [{ n }] = await sql<{ n: number }>(app, 'select count(*) as n from mfa_recovery_codes where user_id = ? and used_at is null', [owner.userId]);
  assert.equal(Number(n), 7);
});

test("a sign-in under /api/v1 sends Atrium's MFA page to answer under /api/v1, where its binding cookie goes", async (t) => {
  const app = await ssoApp(t);
  const owner = await mfaOwner(app);
  const startApi = await app.inject({ url: '/api/v1/auth/google/start' });
  google.nextIdToken(owner.claims);
  const res = await callback(app, await google.authorize(new URL(String(startApi.headers.location)).href), cookiePair(setCookie(startApi, 'atrium_sso_state')));
  const { location, challenge, cookie } = challengeOf(res);
  assert.equal(`${location.origin}${location.pathname}`, `${PUBLIC_URL}/app/mfa`);
  assert.equal(location.searchParams.get('api'), '/api/v1');
  assert.match(setCookie(res, 'atrium_sso_mfa')!, /Path=\/api\/v1\/auth\/sso\/mfa/);
  await awayFromStepBoundary();
  // The page answers where it was told; a browser would not send the cookie to /v1 (its path), so that answer fails.
  assertCode(await answer(app, { challenge, totp_code: totp(owner.secret) }, undefined, origin, '/v1'), 400, 'sso_state_invalid');
  await resetReplayGuard(app, owner.userId);
  const ok = await answer(app, { challenge, totp_code: totp(owner.secret) }, cookie, origin, '/api/v1');
  assert.equal(ok.statusCode, 200, ok.body);
  assert.ok(setCookie(ok, 'service_token'));
});

test('concurrent answers to one challenge: exactly one opens a session', async (t) => {
  const app = await ssoApp(t);
  const owner = await mfaOwner(app);
  await awayFromStepBoundary();
  const { challenge, cookie } = challengeOf((await roundTrip(app, google, 'google', owner.claims)).res);
  const results = await Promise.all(
    [totp(owner.secret), owner.recoveryCodes[0]!, owner.recoveryCodes[1]!, codeAt(owner.secret, 1)].map((code) =>
      answer(app, { challenge, totp_code: code }, cookie),
    ),
  );
  assert.equal(results.filter((r) => r.statusCode === 200).length, 1, results.map((r) => r.body).join('\n'));
  assert.equal(results.filter((r) => setCookie(r, 'service_token')).length, 1);
});

test('a user without MFA still signs in directly (no challenge)', async (t) => {
  const app = await ssoApp(t);
  const owner = await seedOwner(app, 'plain@example.com');
  const { res } = await roundTrip(app, google, 'google', googleClaims('g-plain', owner.email));
  assert.equal(res.statusCode, 302, res.body);
  assert.equal(res.headers.location, `${PUBLIC_URL}/app`);
  assert.ok(setCookie(res, 'service_token'));
  assert.equal(setCookie(res, 'atrium_sso_mfa'), undefined);
});

test('an SSO-only user steps up through the provider (prompt=login, max_age=0); the step-up policy then passes', async (t) => {
  const app = await ssoApp(t);
  const boss = await seedOwner(app, 'boss@example.com');
  const user = await ssoOnlyUser(app, boss.companyId, 'g-sso-only', 'sso.only@example.com');
  await ageSession(app, user.sessionId, STEP_UP_MAX_AGE_SECONDS + 60);
  assert.equal(await passesStepUpPolicy(app, user.cookie), false);

  const { res, flow } = await roundTrip(app, google, 'google', googleClaims('g-sso-only', 'sso.only@example.com', { auth_time: Math.floor(Date.now() / 1000) - 5 }), {
    query: '?intent=step_up',
    startHeaders: { cookie: user.cookie },
    browserCookies: user.cookie,
  });
  const q = flow.authorizationUrl.searchParams;
  assert.equal(q.get('prompt'), 'login');
  assert.equal(q.get('max_age'), '0');
  const [state] = await sql<{ intent: string; session_id: string }>(app, 'select intent, session_id from sso_states where state_hash = ?', [sha256(flow.state)]);
  assert.deepEqual({ ...state }, { intent: 'step_up', session_id: user.sessionId });

  assert.equal(res.statusCode, 302, res.body);
  assert.equal(res.headers.location, `${PUBLIC_URL}/app`);
  assert.equal(setCookie(res, 'service_token'), undefined, 'the same session goes on; no new cookie');
  assert.ok(Date.now() - (await authenticatedAt(app, user.sessionId)) < 10_000);
  assert.equal(await passesStepUpPolicy(app, user.cookie), true);
  const audit = await lastAudit(app, 'auth.step_up');
  assert.equal(audit.method, 'sso');
  assert.equal(audit.provider, 'google');

  // A plain sign-in has no prompt=login.
  const plain = await startWith(app, 'google', '');
  assert.equal(plain.authorizationUrl.searchParams.get('prompt'), null);
  assert.equal(plain.authorizationUrl.searchParams.get('max_age'), null);
});

test('an SSO-only user with MFA steps up through the provider and the TOTP challenge, then can disable MFA', async (t) => {
  const app = await ssoApp(t);
  const boss = await seedOwner(app, 'boss2@example.com');
  const user = await ssoOnlyUser(app, boss.companyId, 'g-sso-mfa', 'sso.mfa@example.com');
  const cookieHeaders = { cookie: user.cookie, ...origin };
  const { secret } = await enrol(app, cookieHeaders, user.userId);
  await awayFromStepBoundary();
  await ageSession(app, user.sessionId, STEP_UP_MAX_AGE_SECONDS + 60);
  const disable = () => app.inject({ method: 'POST', url: '/v1/me/mfa/disable', headers: cookieHeaders });
  assertCode(await disable(), 403, 'step_up_required');

  const { res } = await roundTrip(app, google, 'google', googleClaims('g-sso-mfa', 'sso.mfa@example.com'), {
    query: `?intent=step_up&redirect_uri=${encodeURIComponent(ALLOWED_REDIRECT)}`,
    startHeaders: { cookie: user.cookie },
    browserCookies: user.cookie,
  });
  const { location, challenge, cookie } = challengeOf(res);
  assert.equal(`${location.origin}${location.pathname}`, ALLOWED_REDIRECT);
  assert.equal(setCookie(res, 'service_token'), undefined);
  // The provider alone is not enough when MFA is on.
  assertCode(await disable(), 403, 'step_up_required');
  const [row] = await sql<{ intent: string; session_id: string }>(app, 'select intent, session_id from sso_mfa_challenges');
  assert.deepEqual({ ...row }, { intent: 'step_up', session_id: user.sessionId });

  const browser = `${user.cookie}; ${cookie}`;
  assertCode(await answer(app, { challenge, totp_code: wrongCode(secret) }, browser), 401, 'mfa_invalid');
  assert.equal((await lastAudit(app, 'auth.mfa_failed')).context, 'sso_step_up');
  assertCode(await disable(), 403, 'step_up_required');
  const ok = await answer(app, { challenge, totp_code: totp(secret) }, browser);
  assert.equal(ok.statusCode, 200, ok.body);
  assert.deepEqual(ok.json(), { redirect_to: ALLOWED_REDIRECT });
  assert.equal(setCookie(ok, 'service_token'), undefined, 'a step-up sets no new session cookie');
  assert.equal(await passesStepUpPolicy(app, user.cookie), true);

  const disabled = await disable();
  assert.equal(disabled.statusCode, 204, disabled.body);
  assert.equal((await app.inject({ url: '/v1/me/profile', headers: { cookie: user.cookie } })).json().mfa_enabled, false);
});

test('a step-up callback for another linked user, or an unlinked account, is refused and records nothing', async (t) => {
  const app = await ssoApp(t);
  const boss = await seedOwner(app, 'boss3@example.com');
  const alice = await ssoOnlyUser(app, boss.companyId, 'g-alice', 'alice@example.com');
  await ssoOnlyUser(app, boss.companyId, 'g-bob', 'bob@example.com');
  await ageSession(app, alice.sessionId, 3600);
  const before = await authenticatedAt(app, alice.sessionId);

  for (const [sub, email, linked] of [
    ['g-bob', 'bob@example.com', true],
    ['g-stranger', 'alice@example.com', false],
  ] as const) {
    const { res } = await roundTrip(app, google, 'google', googleClaims(sub, email), {
      query: '?intent=step_up',
      startHeaders: { cookie: alice.cookie },
      browserCookies: alice.cookie,
    });
    assertCode(res, 403, 'forbidden');
    assert.equal(setCookie(res, 'service_token'), undefined);
    const failure = await lastAudit(app, 'auth.sso_failed');
    assert.equal(failure.reason, 'step_up_account_mismatch');
    assert.equal(failure.linked, linked);
  }
  assert.equal(await authenticatedAt(app, alice.sessionId), before);
  assert.equal(await passesStepUpPolicy(app, alice.cookie), false);
  // A step-up never links or creates anything.
  assert.equal((await sql(app, "select id from user_identities where subject = 'g-stranger'")).length, 0);

  // A stale provider authentication (auth_time beyond 5 minutes) is refused too.
  const stale = await roundTrip(app, google, 'google', googleClaims('g-alice', 'alice@example.com', { auth_time: Math.floor(Date.now() / 1000) - 3600 }), {
    query: '?intent=step_up',
    startHeaders: { cookie: alice.cookie },
    browserCookies: alice.cookie,
  });
  assertCode(stale.res, 401, 'sso_failed');
  assert.equal((await lastAudit(app, 'auth.sso_failed')).reason, 'auth_time_stale');
  assert.equal(await authenticatedAt(app, alice.sessionId), before);

  // The session ended between start and callback.
  const flow = await startWith(app, 'google', '?intent=step_up', { cookie: alice.cookie });
  await sql(app, 'update sessions set revoked_at = ? where id = ?', [Date.now(), alice.sessionId]);
  google.nextIdToken(googleClaims('g-alice', 'alice@example.com'));
  const ended = await callback(app, await google.authorize(flow.authorizationUrl.href), flow.stateCookie);
  assertCode(ended, 401, 'token_invalid');
  assert.equal((await lastAudit(app, 'auth.sso_failed')).reason, 'step_up_session_ended');
});

test('step-up intent needs a signed-in user linked to the provider: none 401, API key 400, not linked 403; Bearer works', async (t) => {
  const app = await ssoApp(t);
  const owner = await seedOwner(app, 'owner-stepup@example.com');
  const stepUpStart = (provider: string, headers: Record<string, string> = {}) =>
    app.inject({ url: `/v1/auth/${provider}/start?intent=step_up`, headers });

  const anonymous = await stepUpStart('google');
  assertCode(anonymous, 401, 'unauthenticated');
  assert.equal(setCookie(anonymous, 'atrium_sso_state'), undefined);
  assertCode(await stepUpStart('google', { cookie: 'service_token=not-a-session' }), 401, 'token_invalid');
  assertCode(await stepUpStart('google', bearer('not-a-token')), 401, 'token_invalid');
  const { key } = await createCompanyKey(app, owner.companyId);
  assertCode(await stepUpStart('google', bearer(key)), 400, 'bad_request');
  assertCode(await app.inject({ url: '/v1/auth/google/start?intent=sideways' }), 422, 'validation_error');

  // A password user not linked to Google.
  const { access_token: token } = await login(app, owner.email);
  assertCode(await stepUpStart('google', bearer(token)), 403, 'forbidden');
  assert.equal((await sql(app, "select id from sso_states where intent = 'step_up'")).length, 0);

  // Linked (by a sign-in), the same Bearer caller may step up through Google; its session is the one recorded.
  const signIn = await roundTrip(app, google, 'google', googleClaims('g-owner', owner.email));
  assert.equal(signIn.res.statusCode, 302, signIn.res.body);
  const sid = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).sid as string;
  await ageSession(app, sid, 3600);
  // Linked to Google, not to Microsoft.
  assertCode(await stepUpStart('microsoft', bearer(token)), 403, 'forbidden');
  const { res } = await roundTrip(app, google, 'google', googleClaims('g-owner', owner.email), { query: '?intent=step_up', startHeaders: bearer(token) });
  assert.equal(res.statusCode, 302, res.body);
  assert.equal(res.headers.location, `${PUBLIC_URL}/app`);
  assert.ok(Date.now() - (await authenticatedAt(app, sid)) < 10_000);
  await inContext(app.kernel.orm, async () => {
    const principal = await app.domains.identity.auth.authenticate(token);
    assert.equal((await app.domains.identity.stepUp.requireRecentAuthentication(principal)).userId, owner.userId);
  });
});

test('microsoft: a step-up matches the tenant-qualified subject', async (t) => {
  const app = await ssoApp(t);
  const owner = await seedOwner(app, 'grace@contoso.example');
  const first = await roundTrip(app, microsoft, 'microsoft', microsoftClaims(microsoft, 'ms-grace', owner.email));
  assert.equal(first.res.statusCode, 302, first.res.body);
  const cookie = cookiePair(setCookie(first.res, 'service_token'));
  const sessionId = await sessionOfCookie(app, cookie);
  await ageSession(app, sessionId, 3600);
  // The same subject in another tenant is another account.
  const otherTenant = await roundTrip(
    app,
    microsoft,
    'microsoft',
    microsoftClaims(microsoft, 'ms-grace', owner.email, {}, '0a9b8c7d-6e5f-4a3b-9c2d-1e0f9a8b7c6d'),
    { query: '?intent=step_up', startHeaders: { cookie }, browserCookies: cookie },
  );
  assertCode(otherTenant.res, 403, 'forbidden');
  const { res } = await roundTrip(app, microsoft, 'microsoft', microsoftClaims(microsoft, 'ms-grace', owner.email), {
    query: '?intent=step_up',
    startHeaders: { cookie },
    browserCookies: cookie,
  });
  assert.equal(res.statusCode, 302, res.body);
  assert.equal(await passesStepUpPolicy(app, cookie), true);
});

test('the challenge is added to the landing URL or path without disturbing it', () => {
  assert.equal(withQuery('https://app.example.com/after', 'challenge', 'a-b_c'), 'https://app.example.com/after?challenge=a-b_c');
  assert.equal(withQuery('https://app.example.com/x?tab=1#top', 'challenge', 'c'), 'https://app.example.com/x?tab=1&challenge=c#top');
  assert.equal(withQuery('/app/welcome', 'challenge', 'c'), '/app/welcome?challenge=c');
  assert.equal(withQuery('/app/welcome?x=1', 'challenge', 'c'), '/app/welcome?x=1&challenge=c');
});
