import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { build, seedOwner, sql } from './helper';
import {
  ALLOWED_REDIRECT,
  callback,
  CLIENTS,
  cookiePair,
  googleClaims,
  microsoftClaims,
  setCookie,
  signIn,
  ssoConfig,
  startFlow,
  startMockProvider,
  TENANT_A,
  TENANT_B,
  type MockProvider,
} from './oidc-mock';
import { loadSsoConfig } from '../src/domains/identity/sso.config';

const PUBLIC_URL = 'http://127.0.0.1:8080';
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
  assert.ok(String(res.json().type).endsWith(`/errors/${code}`));
}

async function ssoApp(t: Parameters<typeof build>[0]) {
  return build(t, { sso: ssoConfig(google, microsoft) });
}

/** The reason of the latest auth.sso_failed audit event. */
async function lastFailure(app: FastifyInstance): Promise<Record<string, unknown>> {
  const rows = await sql<{ data: string | Record<string, unknown> }>(
    app,
    "select data from audit_events where action = 'auth.sso_failed' order by created_at desc, rowid desc limit 1",
  );
  assert.ok(rows[0], 'no auth.sso_failed audit event');
  const data = rows[0].data;
  return typeof data === 'string' ? JSON.parse(data) : data;
}

async function invite(
  app: FastifyInstance,
  companyId: string,
  email: string,
  options: { role?: string; status?: string; expiresInSeconds?: number } = {},
): Promise<string> {
  const id = randomBytes(16).toString('hex');
  const now = Date.now();
  await sql(
    app,
    'insert into invitations (id, company_id, email, role, token_hash, status, expires_at, created_at) values (?, ?, ?, ?, ?, ?, ?, ?)',
    [id, companyId, email, options.role ?? 'member', sha256(id), options.status ?? 'pending', now + (options.expiresInSeconds ?? 86_400) * 1000, now],
  );
  return id;
}

const origin = { origin: PUBLIC_URL };

function sessionCookieOf(res: LightMyRequestResponse): string {
  return cookiePair(setCookie(res, 'service_token'));
}

test('an unknown provider is 404 not_found; a known one without credentials is 404 sso_provider_not_configured', async (t) => {
  const app = await build(t, { sso: ssoConfig(null, null) });
  assertCode(await app.inject({ url: '/v1/auth/github/start' }), 404, 'not_found');
  for (const provider of ['google', 'microsoft']) {
    for (const prefix of ['/v1', '/api/v1']) {
      assertCode(await app.inject({ url: `${prefix}/auth/${provider}/start` }), 404, 'sso_provider_not_configured');
      assertCode(await app.inject({ url: `${prefix}/auth/${provider}/callback?code=x&state=y` }), 404, 'sso_provider_not_configured');
    }
  }
});

test('start redirects to the consent screen with PKCE, state and nonce, and keeps only the state hash for 300 s', async (t) => {
  const app = await ssoApp(t);
  const { start, authorizationUrl, state } = await startFlow(app, 'google');
  assert.equal(authorizationUrl.origin + authorizationUrl.pathname, `${google.origin}/authorize`);
  const q = authorizationUrl.searchParams;
  assert.equal(q.get('response_type'), 'code');
  assert.equal(q.get('client_id'), CLIENTS.google.clientId);
  assert.equal(q.get('scope'), 'openid email');
  assert.equal(q.get('redirect_uri'), `${PUBLIC_URL}/v1/auth/google/callback`);
  assert.equal(q.get('code_challenge_method'), 'S256');
  assert.match(q.get('code_challenge')!, /^[A-Za-z0-9_-]{43}$/);
  assert.ok(state.length >= 32);
  assert.ok(q.get('nonce')!.length >= 32);
  assert.notEqual(q.get('nonce'), state);

  const bind = setCookie(start, 'atrium_sso_state')!;
  assert.match(bind, /HttpOnly/);
  assert.match(bind, /SameSite=Lax/);
  assert.match(bind, /Max-Age=300/);
  assert.match(bind, /Path=\/v1\/auth\/google\/callback/);
  assert.doesNotMatch(bind, /Secure/);

  const rows = await sql<{ state_hash: string; provider: string; expires_at: number; created_at: number; used_at: null; nonce: string }>(
    app,
    'select * from sso_states',
  );
  assert.equal(rows.length, 1);
  assert.equal(rows[0]!.state_hash, sha256(state));
  assert.equal(rows[0]!.provider, 'google');
  assert.equal(rows[0]!.expires_at - rows[0]!.created_at, 300_000);
  assert.equal(rows[0]!.used_at, null);
  assert.ok(!JSON.stringify(rows).includes(state), 'the plaintext state is not stored');

  const ms = await startFlow(app, 'microsoft', '', '/api/v1');
  assert.equal(ms.authorizationUrl.searchParams.get('scope'), 'User.Read openid');
  assert.equal(ms.authorizationUrl.searchParams.get('redirect_uri'), `${PUBLIC_URL}/api/v1/auth/microsoft/callback`);
});

test('redirect_uri must be on the allow-list (400 otherwise); an allowed one is where the callback lands', async (t) => {
  const app = await ssoApp(t);
  for (const bad of ['https://evil.example.com/', `${ALLOWED_REDIRECT}/more`, `${ALLOWED_REDIRECT}?x=1`, '/app', 'javascript:alert(1)', '', 'x'.repeat(5000)]) {
    const res = await app.inject({ url: `/v1/auth/google/start?redirect_uri=${encodeURIComponent(bad)}` });
    assertCode(res, 400, 'redirect_uri_not_allowed');
    assert.equal(setCookie(res, 'atrium_sso_state'), undefined);
  }
  const owner = await seedOwner(app, 'redirect@example.com');
  const { res } = await signIn(app, google, 'google', googleClaims('g-redirect', owner.email), `?redirect_uri=${encodeURIComponent(ALLOWED_REDIRECT)}`);
  assert.equal(res.statusCode, 302, res.body);
  assert.equal(res.headers.location, ALLOWED_REDIRECT);
});

test('google: links an existing user by verified email, then signs in by subject; the cookie authenticates REST and GraphQL', async (t) => {
  const app = await ssoApp(t);
  const owner = await seedOwner(app, 'Ada@Example.com');

  const first = await signIn(app, google, 'google', googleClaims('google-sub-1', 'ADA@example.com'));
  assert.equal(first.res.statusCode, 302, first.res.body);
  assert.equal(first.res.headers.location, `${PUBLIC_URL}/app`);
  const line = setCookie(first.res, 'service_token')!;
  assert.match(line, /HttpOnly/);
  assert.match(line, /SameSite=Lax/);
  assert.match(line, /Path=\//);
  assert.match(line, /Max-Age=\d{7}/);
  assert.doesNotMatch(line, /Secure/, 'PUBLIC_URL is http here');
  assert.match(setCookie(first.res, 'atrium_sso_state')!, /Max-Age=0/);
  const cookie = sessionCookieOf(first.res);
  const token = decodeURIComponent(cookie.split('=')[1]!);
  assert.equal(Buffer.from(token, 'base64url').length, 32);

  const identities = await sql(app, 'select provider, subject, user_id, email from user_identities');
  assert.deepEqual(identities, [{ provider: 'google', subject: 'google-sub-1', user_id: owner.userId, email: 'ada@example.com' }]);
  const sessions = await sql<{ cookie_token_hash: string }>(app, 'select cookie_token_hash from sessions where cookie_token_hash is not null');
  assert.deepEqual(sessions.map((s) => s.cookie_token_hash), [sha256(token)]);

  const profile = await app.inject({ url: '/v1/me/profile', headers: { cookie } });
  assert.equal(profile.statusCode, 200, profile.body);
  assert.equal(profile.json().id, owner.userId);
  assert.equal(profile.json().auth_method, 'session');

  const gql = await app.inject({ method: 'POST', url: '/graphql', headers: { cookie, ...origin }, payload: { query: '{ me { user { id email } } }' } });
  assert.equal(gql.statusCode, 200, gql.body);
  assert.deepEqual(gql.json().data.me.user, { id: owner.userId, email: 'ada@example.com' });

  // Second sign-in: the same Google account, now with an unverified (even different) email, is found by subject.
  const second = await signIn(app, google, 'google', googleClaims('google-sub-1', 'someone-else@example.com', { email_verified: false }));
  assert.equal(second.res.statusCode, 302, second.res.body);
  const again = await app.inject({ url: '/v1/me/profile', headers: { cookie: sessionCookieOf(second.res) } });
  assert.equal(again.json().id, owner.userId);
  assert.equal((await sql(app, 'select id from user_identities')).length, 1);

  const actions = await sql<{ action: string; data: string }>(app, "select action, data from audit_events where action in ('auth.login', 'user.sso_linked') order by created_at");
  assert.deepEqual(actions.map((a) => a.action), ['user.sso_linked', 'auth.login', 'auth.login']);
  for (const login of actions.filter((a) => a.action === 'auth.login')) assert.equal(JSON.parse(login.data).method, 'sso');
});

test('google: an unverified email links nothing (403 sso_email_unverified)', async (t) => {
  const app = await ssoApp(t);
  await seedOwner(app, 'victim@example.com');
  for (const extra of [{ email_verified: false }, { email_verified: 'true' }, { email_verified: undefined }]) {
    const { res } = await signIn(app, google, 'google', googleClaims('attacker', 'victim@example.com', extra));
    assertCode(res, 403, 'sso_email_unverified');
    assert.equal(setCookie(res, 'service_token'), undefined);
  }
  assert.equal((await sql(app, 'select id from user_identities')).length, 0);
  assert.equal((await lastFailure(app)).reason, 'email_unverified');
});

test('sign-up without an invitation is refused (403 sso_account_not_found) and audited', async (t) => {
  const app = await ssoApp(t);
  const { res } = await signIn(app, google, 'google', googleClaims('newcomer', 'newcomer@example.com'));
  assertCode(res, 403, 'sso_account_not_found');
  assert.equal(setCookie(res, 'service_token'), undefined);
  assert.equal((await sql(app, "select id from users where email = 'newcomer@example.com'")).length, 0);
  const failure = await lastFailure(app);
  assert.equal(failure.reason, 'no_invitation');
  assert.equal(failure.provider, 'google');
});

test('sign-up with a pending invitation creates the user in its company with its role and accepts it', async (t) => {
  const app = await ssoApp(t);
  const owner = await seedOwner(app, 'boss@example.com', 'Invite Co');
  const invitationId = await invite(app, owner.companyId, 'new.hire@example.com', { role: 'admin' });

  const { res } = await signIn(app, microsoft, 'microsoft', microsoftClaims(microsoft, 'ms-new-hire', 'New.Hire@example.com', { name: 'New Hire' }));
  assert.equal(res.statusCode, 302, res.body);
  const cookie = sessionCookieOf(res);
  const profile = (await app.inject({ url: '/v1/me/profile', headers: { cookie } })).json();
  assert.equal(profile.email, 'new.hire@example.com');
  assert.equal(profile.role, 'admin');
  assert.equal(profile.name, 'New Hire');
  assert.equal(profile.company.id, owner.companyId);

  const [inv] = await sql<{ status: string; accepted_at: number | null }>(app, 'select status, accepted_at from invitations where id = ?', [invitationId]);
  assert.equal(inv!.status, 'accepted');
  assert.ok(inv!.accepted_at);
  const [identity] = await sql<{ subject: string }>(app, 'select subject from user_identities');
  assert.equal(identity!.subject, `${TENANT_A}:ms-new-hire`);
  const actions = (await sql<{ action: string; company_id: string }>(app, 'select action, company_id from audit_events')).filter((a) =>
    ['user.created_via_sso', 'invitation.accepted', 'auth.login'].includes(a.action),
  );
  assert.deepEqual(actions.map((a) => a.action).sort(), ['auth.login', 'invitation.accepted', 'user.created_via_sso']);
  for (const a of actions) assert.equal(a.company_id, owner.companyId);

  // The invitation is spent: the user signs in again by subject; no second user.
  const again = await signIn(app, microsoft, 'microsoft', microsoftClaims(microsoft, 'ms-new-hire', 'new.hire@example.com'));
  assert.equal(again.res.statusCode, 302, again.res.body);
  assert.equal((await sql(app, "select id from users where email = 'new.hire@example.com'")).length, 1);
});

test('an expired or revoked invitation does not let anyone sign up', async (t) => {
  const app = await ssoApp(t);
  const owner = await seedOwner(app);
  await invite(app, owner.companyId, 'late@example.com', { expiresInSeconds: -60 });
  await invite(app, owner.companyId, 'revoked@example.com', { status: 'revoked' });
  await invite(app, owner.companyId, 'old@example.com', { status: 'expired' });

  for (const [email, reason] of [
    ['late@example.com', 'invitation_expired'],
    ['revoked@example.com', 'invitation_revoked'],
    ['old@example.com', 'invitation_expired'],
  ] as const) {
    const { res } = await signIn(app, google, 'google', googleClaims(`sub-${email}`, email));
    assertCode(res, 403, 'sso_account_not_found');
    assert.equal((await lastFailure(app)).reason, reason);
    assert.equal((await sql(app, 'select id from users where email = ?', [email])).length, 0);
  }
  const statuses = await sql<{ status: string }>(app, 'select status from invitations order by email');
  assert.deepEqual(statuses.map((s) => s.status).sort(), ['expired', 'pending', 'revoked']);
});

test('a bad state, a state from another browser, an expired state and a replayed state are refused (400 sso_state_invalid)', async (t) => {
  const app = await ssoApp(t);
  const owner = await seedOwner(app, 'states@example.com');

  // Bad: a state this server never issued (bound in the cookie, so it reaches the lookup).
  const forged = randomBytes(32).toString('base64url');
  const bad = await app.inject({ url: `/v1/auth/google/callback?code=abc&state=${forged}`, headers: { cookie: `atrium_sso_state=${forged}` } });
  assertCode(bad, 400, 'sso_state_invalid');
  assert.equal((await lastFailure(app)).reason, 'state_unknown');
  assertCode(await app.inject({ url: '/v1/auth/google/callback?code=abc' }), 400, 'sso_state_invalid');
  assert.equal((await lastFailure(app)).reason, 'state_missing');

  // A genuine state presented without (or with another) browser binding: login CSRF.
  const stolen = await startFlow(app, 'google');
  google.nextIdToken(googleClaims('g-states', owner.email));
  const stolenLocation = await google.authorize(stolen.authorizationUrl.href);
  assertCode(await callback(app, stolenLocation, undefined), 400, 'sso_state_invalid');
  assert.equal((await lastFailure(app)).reason, 'state_not_bound');
  assertCode(await callback(app, stolenLocation, 'atrium_sso_state=someone-else'), 400, 'sso_state_invalid');
  // It was not spent by the refusals: the rightful browser can still finish.
  assert.equal((await callback(app, stolenLocation, stolen.stateCookie)).statusCode, 302);

  // Expired: past its 300 seconds.
  const late = await startFlow(app, 'google');
  await sql(app, 'update sso_states set expires_at = ? where state_hash = ?', [Date.now() - 1000, sha256(late.state)]);
  google.nextIdToken(googleClaims('g-states', owner.email));
  const lateLocation = await google.authorize(late.authorizationUrl.href);
  assertCode(await callback(app, lateLocation, late.stateCookie), 400, 'sso_state_invalid');
  assert.equal((await lastFailure(app)).reason, 'state_expired');

  // Replayed: a state works once, even with the right cookie.
  const { res, location, flow } = await signIn(app, google, 'google', googleClaims('g-states', owner.email));
  assert.equal(res.statusCode, 302, res.body);
  const replay = await callback(app, location, flow.stateCookie);
  assertCode(replay, 400, 'sso_state_invalid');
  assert.equal((await lastFailure(app)).reason, 'state_replayed');
  assert.equal(setCookie(replay, 'service_token'), undefined);

  // A google state is no good at the microsoft callback.
  const crossed = await startFlow(app, 'google');
  const crossedRes = await app.inject({
    url: `/v1/auth/microsoft/callback?code=abc&state=${encodeURIComponent(crossed.state)}`,
    headers: { cookie: crossed.stateCookie },
  });
  assertCode(crossedRes, 400, 'sso_state_invalid');
  assert.equal((await lastFailure(app)).reason, 'state_provider_mismatch');
});

test('concurrent callbacks with one state: exactly one signs in', async (t) => {
  const app = await ssoApp(t);
  const owner = await seedOwner(app, 'race@example.com');
  const flow = await startFlow(app, 'google');
  google.nextIdToken(googleClaims('g-race', owner.email));
  const location = await google.authorize(flow.authorizationUrl.href);
  const results = await Promise.all(Array.from({ length: 5 }, () => callback(app, location, flow.stateCookie)));
  assert.deepEqual(results.map((r) => r.statusCode).sort(), [302, 400, 400, 400, 400]);
});

test('the ID token is validated: wrong nonce, issuer, audience, expiry and signature are refused (401 sso_failed)', async (t) => {
  const app = await ssoApp(t);
  const owner = await seedOwner(app, 'tokens@example.com');
  const base = googleClaims('g-tokens', owner.email);
  const cases: [string, (p: Record<string, unknown>, h: Record<string, unknown>) => void][] = [
    ['nonce_mismatch', (p) => Object.assign(base(p), { nonce: 'not-the-nonce-we-sent' })],
    ['issuer_mismatch', (p) => Object.assign(base(p), { iss: 'http://127.0.0.1:1/evil' })],
    ['audience_mismatch', (p) => Object.assign(base(p), { aud: 'someone-elses-client' })],
    ['id_token_expired', (p) => Object.assign(base(p), { exp: Math.floor(Date.now() / 1000) - 3600, iat: Math.floor(Date.now() / 1000) - 7200 })],
    ['signature_invalid', (p, h) => Object.assign(base(p), void (h.kid = 'a-key-the-provider-never-published'))],
  ];
  for (const [reason, claims] of cases) {
    const { res } = await signIn(app, google, 'google', claims);
    assertCode(res, 401, 'sso_failed');
    assert.equal(setCookie(res, 'service_token'), undefined);
    assert.equal((await lastFailure(app)).reason, reason, reason);
  }

  // A token whose payload was altered after signing.
  const flow = await startFlow(app, 'google');
  google.nextIdToken(base);
  google.nextTokenResponse((response) => {
    const body = response.body as Record<string, string>;
    const [header, payload, signature] = body.id_token!.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    claims.sub = 'someone-else';
    body.id_token = [header, Buffer.from(JSON.stringify(claims)).toString('base64url'), signature].join('.');
  });
  const tampered = await callback(app, await google.authorize(flow.authorizationUrl.href), flow.stateCookie);
  assertCode(tampered, 401, 'sso_failed');
  assert.equal((await lastFailure(app)).reason, 'signature_invalid');

  // The provider refused the code.
  const refusedFlow = await startFlow(app, 'google');
  google.nextTokenResponse((response) => {
    response.statusCode = 400;
    response.body = { error: 'invalid_grant' };
  });
  const refused = await callback(app, await google.authorize(refusedFlow.authorizationUrl.href), refusedFlow.stateCookie);
  assertCode(refused, 401, 'sso_failed');
  assert.equal((await lastFailure(app)).reason, 'token_exchange_failed');

  // PKCE: the provider checks the verifier against the challenge of the authorization request.
  const pkceFlow = await startFlow(app, 'google');
  await sql(app, 'update sso_states set code_verifier = ? where state_hash = ?', ['x'.repeat(64), sha256(pkceFlow.state)]);
  google.nextIdToken(base);
  const pkce = await callback(app, await google.authorize(pkceFlow.authorizationUrl.href), pkceFlow.stateCookie);
  assertCode(pkce, 401, 'sso_failed');
  assert.equal((await lastFailure(app)).reason, 'token_exchange_failed');

  // The user declined at the consent screen.
  const declinedFlow = await startFlow(app, 'google');
  google.nextAuthorizeRedirect((redirect) => {
    redirect.url.searchParams.delete('code');
    redirect.url.searchParams.set('error', 'access_denied');
  });
  const declined = await callback(app, await google.authorize(declinedFlow.authorizationUrl.href), declinedFlow.stateCookie);
  assertCode(declined, 401, 'sso_failed');
  assert.equal((await lastFailure(app)).reason, 'provider_error');
  assert.equal((await sql(app, 'select id from user_identities')).length, 0);
});

test('microsoft: the issuer is the template with the token\'s own GUID tid; links by verified email, then by subject', async (t) => {
  const app = await ssoApp(t);
  const owner = await seedOwner(app, 'grace@contoso.example');

  const first = await signIn(app, microsoft, 'microsoft', microsoftClaims(microsoft, 'ms-sub-1', 'Grace@Contoso.example'));
  assert.equal(first.res.statusCode, 302, first.res.body);
  assert.equal(first.res.headers.location, `${PUBLIC_URL}/app`);
  const cookie = sessionCookieOf(first.res);
  assert.equal((await app.inject({ url: '/v1/me/profile', headers: { cookie } })).json().id, owner.userId);
  assert.deepEqual(await sql(app, 'select provider, subject from user_identities'), [{ provider: 'microsoft', subject: `${TENANT_A}:ms-sub-1` }]);

  // Later, by subject: no email claim at all.
  const second = await signIn(app, microsoft, 'microsoft', microsoftClaims(microsoft, 'ms-sub-1', 'x@y.example', { email: undefined, xms_edov: undefined }));
  assert.equal(second.res.statusCode, 302, second.res.body);
  assert.equal((await app.inject({ url: '/graphql', method: 'POST', headers: { cookie: sessionCookieOf(second.res), ...origin }, payload: { query: '{ me { user { id } } }' } })).json().data.me.user.id, owner.userId);

  // The same subject in another tenant is another account: not linked (its email is unverified here).
  const otherTenant = await signIn(app, microsoft, 'microsoft', microsoftClaims(microsoft, 'ms-sub-1', owner.email, { xms_edov: false }, TENANT_B));
  assertCode(otherTenant.res, 403, 'sso_email_unverified');
});

test('microsoft: wrong tenant issuer, a non-GUID or missing tid, the raw template and unverified email are refused', async (t) => {
  const app = await ssoApp(t);
  const owner = await seedOwner(app, 'ms-checks@contoso.example');
  const base = (extra: Record<string, unknown>, tid?: string) => microsoftClaims(microsoft, 'ms-checks', owner.email, extra, tid);
  const cases: [string, number, string, (p: Record<string, unknown>) => void][] = [
    // Signed for tenant A, claiming tenant B's issuer (or the reverse).
    ['issuer_mismatch', 401, 'sso_failed', base({ iss: `${microsoft.origin}/${TENANT_B}/v2.0` })],
    ['issuer_mismatch', 401, 'sso_failed', base({ iss: `${microsoft.origin}/common/v2.0` })],
    ['tenant_invalid', 401, 'sso_failed', base({ tid: 'common', iss: `${microsoft.origin}/common/v2.0` })],
    ['tenant_invalid', 401, 'sso_failed', base({ tid: '../evil', iss: `${microsoft.origin}/../evil/v2.0` })],
    ['tenant_invalid', 401, 'sso_failed', base({ tid: undefined, iss: `${microsoft.origin}/undefined/v2.0` })],
    // The template itself is never a valid issuer.
    ['tenant_invalid', 401, 'sso_failed', base({ tid: undefined, iss: `${microsoft.origin}/{tenantid}/v2.0` })],
    ['issuer_mismatch', 401, 'sso_failed', base({ iss: `${microsoft.origin}/{tenantid}/v2.0` })],
    // preferred_username and an email without xms_edov prove nothing.
    ['email_unverified', 403, 'sso_email_unverified', base({ xms_edov: undefined })],
    ['email_unverified', 403, 'sso_email_unverified', base({ xms_edov: false, email: undefined })],
    ['nonce_mismatch', 401, 'sso_failed', base({ nonce: 'wrong' })],
  ];
  for (const [reason, status, code, claims] of cases) {
    const { res } = await signIn(app, microsoft, 'microsoft', claims);
    assertCode(res, status, code);
    assert.equal((await lastFailure(app)).reason, reason, JSON.stringify(claims({})));
  }
  assert.equal((await sql(app, 'select id from user_identities')).length, 0);
});

test('a suspended user is refused (403 account_suspended); a user already linked to another account of the provider gets 409', async (t) => {
  const app = await ssoApp(t);
  const owner = await seedOwner(app, 'linked@example.com');
  assert.equal((await signIn(app, google, 'google', googleClaims('g-one', owner.email))).res.statusCode, 302);
  assertCode((await signIn(app, google, 'google', googleClaims('g-two', owner.email))).res, 409, 'conflict');

  await sql(app, "update users set status = 'suspended' where id = ?", [owner.userId]);
  assertCode((await signIn(app, google, 'google', googleClaims('g-one', owner.email))).res, 403, 'account_suspended');
  assert.equal((await lastFailure(app)).reason, 'user_suspended');
});

test('a provider that cannot be reached is 502 sso_provider_unavailable, and is retried on the next start', async (t) => {
  const app = await build(t, {
    sso: { ...ssoConfig(google, microsoft), google: { issuer: 'http://127.0.0.1:9/nothing-listens-here', ...CLIENTS.google } },
  });
  assertCode(await app.inject({ url: '/v1/auth/google/start' }), 502, 'sso_provider_unavailable');
  assertCode(await app.inject({ url: '/v1/auth/google/start' }), 502, 'sso_provider_unavailable');
  assert.equal((await lastFailure(app)).reason, 'discovery_failed');
});

test('a provider out of order at the callback (a 5xx from its token endpoint, or down) is 502 sso_provider_unavailable, not 401 sso_failed', async (t) => {
  // A provider of this test's own, so that it can be stopped.
  const provider = await startMockProvider('google');
  t.after(() => provider.stop().catch(() => undefined));
  const app = await build(t, { sso: ssoConfig(provider, null) });
  const owner = await seedOwner(app, 'outage@example.com');
  const consented = async (edit?: Parameters<MockProvider['nextTokenResponse']>[0]) => {
    const flow = await startFlow(app, 'google');
    provider.nextIdToken(googleClaims('g-outage', owner.email));
    if (edit) provider.nextTokenResponse(edit);
    return { flow, location: await provider.authorize(flow.authorizationUrl.href) };
  };

  for (const [status, body] of [[500, { error: 'server_error' }], [503, '']] as const) {
    const { flow, location } = await consented((response) => {
      response.statusCode = status;
      response.body = body;
    });
    const res = await callback(app, location, flow.stateCookie);
    assertCode(res, 502, 'sso_provider_unavailable');
    assert.equal(setCookie(res, 'service_token'), undefined);
    assert.equal((await lastFailure(app)).reason, 'provider_unavailable');
  }
  // A refusal of the code is still a failed sign-in.
  const refused = await consented((response) => {
    response.statusCode = 400;
    response.body = { error: 'invalid_grant' };
  });
  assertCode(await callback(app, refused.location, refused.flow.stateCookie), 401, 'sso_failed');

  const { flow, location } = await consented();
  await provider.stop();
  assertCode(await callback(app, location, flow.stateCookie), 502, 'sso_provider_unavailable');
  assert.equal((await lastFailure(app)).reason, 'provider_unreachable');
  assert.equal((await sql(app, 'select id from sessions')).length, 0);
});

test('discovery must name the configured issuer; only the workplace provider may have a {tenantid} template', async (t) => {
  // The workplace mock's multi-tenant document, configured for the consumer provider: refused.
  const templated = await build(t, {
    sso: { ...ssoConfig(google, microsoft), google: { issuer: `${microsoft.issuer}/.well-known/openid-configuration`, ...CLIENTS.google } },
  });
  assertCode(await templated.inject({ url: '/v1/auth/google/start' }), 502, 'sso_provider_unavailable');
  // A document that names another issuer than the configured one: refused.
  const other = await build(t, {
    sso: { ...ssoConfig(google, microsoft), google: { issuer: `${google.origin}/elsewhere`, ...CLIENTS.google } },
  });
  assertCode(await other.inject({ url: '/v1/auth/google/start' }), 502, 'sso_provider_unavailable');
  // An explicit discovery URL whose document names the configured issuer is fine.
  const explicit = await build(t, {
    sso: { ...ssoConfig(google, microsoft), google: { issuer: `${google.origin}/.well-known/openid-configuration`, ...CLIENTS.google } },
  });
  assert.equal((await explicit.inject({ url: '/v1/auth/google/start' })).statusCode, 302);
});

test('issuers must be https; plain http only on a loopback host', () => {
  assert.throws(() => loadSsoConfig({ SSO_GOOGLE_ISSUER: 'http://accounts.example.com' }), /SSO_GOOGLE_ISSUER must be an https URL/);
  assert.throws(() => loadSsoConfig({ SSO_MICROSOFT_ISSUER: 'not a url' }), /SSO_MICROSOFT_ISSUER must be a URL/);
  assert.throws(() => loadSsoConfig({ SSO_REDIRECT_ALLOWLIST: 'javascript:alert(1)' }), /SSO_REDIRECT_ALLOWLIST/);
  for (const issuer of ['http://127.0.0.1:4000', 'http://localhost:4000/x', 'http://[::1]:4000', 'https://idp.example.com']) {
    assert.equal(loadSsoConfig({ SSO_GOOGLE_ISSUER: issuer }).google.issuer, issuer);
  }
  const defaults = loadSsoConfig({});
  assert.equal(defaults.google.issuer, 'https://accounts.google.com');
  assert.equal(defaults.microsoft.issuer, 'https://login.microsoftonline.com/common/v2.0');
  assert.equal(defaults.google.clientId, undefined);
  assert.deepEqual(loadSsoConfig({ SSO_REDIRECT_ALLOWLIST: 'https://a.example/x, /app/welcome' }).redirectAllowlist, ['https://a.example/x', '/app/welcome']);
});

test('over https the session cookie is Secure', async (t) => {
  const app = await build(t, { sso: ssoConfig(google, microsoft), publicUrl: 'https://atrium.example.com' });
  const owner = await seedOwner(app, 'secure@example.com');
  const flow = await startFlow(app, 'google');
  assert.match(setCookie(flow.start, 'atrium_sso_state')!, /; Secure/);
  assert.equal(flow.authorizationUrl.searchParams.get('redirect_uri'), 'https://atrium.example.com/v1/auth/google/callback');
  google.nextIdToken(googleClaims('g-secure', owner.email));
  const res = await callback(app, await google.authorize(flow.authorizationUrl.href), flow.stateCookie);
  assert.equal(res.statusCode, 302, res.body);
  assert.equal(res.headers.location, 'https://atrium.example.com/app');
  assert.match(setCookie(res, 'service_token')!, /HttpOnly; SameSite=Lax; Secure/);
});
