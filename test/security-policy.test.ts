import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { createClient } from 'graphql-ws';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { assertCode, bearer, build, createCompanyKey, login, PASSWORD, seedOwner, seedUser, sql } from './helper';
import { inContext } from '../src/boot';
import { cookiePair, googleClaims, setCookie, signIn, ssoConfig, startMockProvider, type MockProvider } from './oidc-mock';
import { totp } from './totp';
import Database from 'better-sqlite3';
import { EXTERNAL_WRITES_SEEN_MS } from '../src/db/change-signal';

const POLICY = '/v1/admin/security/policy';
const DEFAULTS = {
  mfa_required: false,
  min_password_length: 12,
  session_idle_timeout_minutes: null,
  allowed_sso_providers: ['google', 'microsoft'],
  sso_signup_email_domains: [],
  ip_allowlist: [],
  api_key_max_age_days: null,
};

const put = (app: FastifyInstance, token: string, payload: unknown, options: { method?: 'PUT' | 'PATCH'; ip?: string; query?: string } = {}) =>
  app.inject({
    method: options.method ?? 'PUT',
    url: `${POLICY}${options.query ?? ''}`,
    headers: bearer(token),
    payload: payload as Record<string, unknown>,
    ...(options.ip ? { remoteAddress: options.ip } : {}),
  });

async function gql(app: FastifyInstance, token: string, query: string, variables: Record<string, unknown> = {}) {
  const res = await app.inject({ method: 'POST', url: '/graphql', headers: bearer(token), payload: { query, variables } });
  return res.json() as { data: Record<string, unknown> | null; errors?: { extensions: { code: string } }[] };
}

test('GET answers the defaults; PUT and PATCH change only the fields given; audited with the changes; GraphQL alike', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);

  const initial = await app.inject({ url: POLICY, headers: bearer(token) });
  assert.equal(initial.statusCode, 200, initial.body);
  assert.deepEqual(initial.json(), { company_id: owner.companyId, ...DEFAULTS, updated_at: null, updated_by: null });

  const first = await put(app, token, { min_password_length: 16, sso_signup_email_domains: ['@Example.COM'] });
  assert.equal(first.statusCode, 200, first.body);
  assert.equal(first.json().min_password_length, 16);
  assert.deepEqual(first.json().sso_signup_email_domains, ['example.com']);
  assert.equal(first.json().updated_by, owner.userId);
  assert.ok(first.json().updated_at);

  const second = await put(app, token, { session_idle_timeout_minutes: 30, allowed_sso_providers: ['microsoft'] }, { method: 'PATCH' });
  assert.equal(second.statusCode, 200, second.body);
  assert.deepEqual(
    { ...(second.json() as Record<string, unknown>), updated_at: undefined },
    {
      ...DEFAULTS,
      company_id: owner.companyId,
      min_password_length: 16,
      sso_signup_email_domains: ['example.com'],
      session_idle_timeout_minutes: 30,
      allowed_sso_providers: ['microsoft'],
      updated_at: undefined,
      updated_by: owner.userId,
    },
  );
  // null turns the idle timeout off again; the other fields stay.
  const third = await put(app, token, { session_idle_timeout_minutes: null }, { method: 'PATCH', query: '' });
  assert.equal(third.json().session_idle_timeout_minutes, null);
  assert.equal(third.json().min_password_length, 16);
  assert.deepEqual((await app.inject({ url: `/api${POLICY}`, headers: bearer(token) })).json(), third.json());

  const audit = await sql<{ data: string; actor_id: string; target_id: string }>(
    app,
    "select data, actor_id, target_id from audit_events where action = 'security_policy.updated' order by created_at, rowid",
  );
  assert.equal(audit.length, 3);
  assert.equal(audit[0]!.actor_id, owner.userId);
  assert.equal(audit[0]!.target_id, owner.companyId);
  assert.deepEqual(JSON.parse(audit[1]!.data).changes, {
    session_idle_timeout_minutes: { from: null, to: 30 },
    allowed_sso_providers: { from: ['google', 'microsoft'], to: ['microsoft'] },
  });
  // A PUT that changes nothing is not audited.
  await put(app, token, { min_password_length: 16 });
  assert.equal((await sql(app, "select 1 from audit_events where action = 'security_policy.updated'")).length, 3);

  const viaGraphql = await gql(
    app,
    token,
    'mutation($input: SecurityPolicyInput!) { updateSecurityPolicy(input: $input) { mfaRequired apiKeyMaxAgeDays minPasswordLength } }',
    { input: { apiKeyMaxAgeDays: 90 } },
  );
  assert.deepEqual(viaGraphql.data?.updateSecurityPolicy, { mfaRequired: false, apiKeyMaxAgeDays: 90, minPasswordLength: 16 });
  const read = await gql(app, token, '{ securityPolicy { companyId apiKeyMaxAgeDays allowedSsoProviders } }');
  assert.deepEqual(read.data?.securityPolicy, { companyId: owner.companyId, apiKeyMaxAgeDays: 90, allowedSsoProviders: ['microsoft'] });
});

test('validation: 422 with loc for a bad CIDR, an unknown provider, out-of-range numbers and unknown fields; nothing changes', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  const locs = (res: LightMyRequestResponse) => (res.json().errors as { loc: unknown[] }[]).map((e) => e.loc);

  const bad = await put(app, token, {
    ip_allowlist: ['127.0.0.1/32', '10.0.0.0/33', 'not-an-ip', '2001:db8::/129'],
    sso_signup_email_domains: ['example.com', 'not a domain'],
  });
  assertCode(bad, 422, 'validation_error');
  const sorted = (list: unknown[][]) => list.map((l) => JSON.stringify(l)).sort();
  assert.deepEqual(sorted(locs(bad)), sorted([
    ['body', 'sso_signup_email_domains', 1],
    ['body', 'ip_allowlist', 1],
    ['body', 'ip_allowlist', 2],
    ['body', 'ip_allowlist', 3],
  ]));

  const provider = await put(app, token, { allowed_sso_providers: ['google', 'github'] });
  assertCode(provider, 422, 'validation_error');
  assert.deepEqual(locs(provider), [['body', 'allowed_sso_providers', 1]]);
  for (const [field, value] of [
    ['min_password_length', 11],
    ['min_password_length', 129],
    ['session_idle_timeout_minutes', 4],
    ['session_idle_timeout_minutes', 43_201],
    ['api_key_max_age_days', 0],
    ['mfa_required', 'yes'],
  ] as const) {
    const res = await put(app, token, { [field]: value }, { method: 'PATCH' });
    assertCode(res, 422, 'validation_error');
    assert.deepEqual(locs(res), [['body', field]], `${field}=${value}`);
  }
  const unknown = await put(app, token, { mfa_required: true, password_expiry_days: 30 });
  assertCode(unknown, 422, 'validation_error');
  assert.deepEqual(locs(unknown), [['body', 'password_expiry_days']]);

  // GraphQL: the same core checks, with the same loc.
  const viaGraphql = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers: bearer(token),
    payload: { query: 'mutation { updateSecurityPolicy(input: { ipAllowlist: ["300.1.1.1"] }) { ipAllowlist } }' },
  });
  const error = viaGraphql.json().errors[0];
  assert.equal(error.extensions.code, 'validation_error');

  // An allow-list that leaves out the caller's own address would lock them out.
  const lockout = await put(app, token, { ip_allowlist: ['192.168.0.0/16'] }, { ip: '10.1.2.3' });
  assertCode(lockout, 422, 'validation_error');
  assert.deepEqual(locs(lockout), [['body', 'ip_allowlist']]);

  const after = await app.inject({ url: POLICY, headers: bearer(token) });
  assert.deepEqual({ ...(after.json() as Record<string, unknown>), company_id: undefined, updated_at: undefined, updated_by: undefined }, {
    ...DEFAULTS,
    company_id: undefined,
    updated_at: undefined,
    updated_by: undefined,
  });
});

test('roles: owner, admin and company key may; a member is 403; another company only for a superadmin', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const other = await seedOwner(app, undefined, 'Other');
  const admin = await seedUser(app, owner.companyId, 'admin');
  const member = await seedUser(app, owner.companyId, 'member');
  const { key } = await createCompanyKey(app, owner.companyId);
  await inContext(app.kernel.orm, () =>
    app.domains.identity.accounts.createCompanyWithOwner({ email: 'ops@example.com', password: PASSWORD, company: 'Platform', superadmin: true }),
  );
  const adminToken = (await login(app, admin.email)).access_token;
  const memberToken = (await login(app, member.email)).access_token;
  const ownerToken = (await login(app, owner.email)).access_token;
  const superToken = (await login(app, 'ops@example.com')).access_token;

  for (const token of [ownerToken, adminToken, key]) {
    assert.equal((await app.inject({ url: POLICY, headers: bearer(token) })).statusCode, 200);
    assert.equal((await put(app, token, { mfa_required: false })).statusCode, 200);
  }
  const byKey = await put(app, key, { api_key_max_age_days: 365 });
  assert.equal(byKey.statusCode, 200, byKey.body);
  assertCode(await app.inject({ url: POLICY, headers: bearer(memberToken) }), 403, 'forbidden');
  assertCode(await put(app, memberToken, { mfa_required: true }), 403, 'forbidden');
  assertCode(await app.inject({ url: POLICY }), 401, 'unauthenticated');

  // Naming another company: 403 for its owner's peers, allowed for a superadmin.
  // Another company's id is 404 to anyone but a superadmin, as every id a caller may not see.
  assertCode(await app.inject({ url: `${POLICY}?company_id=${other.companyId}`, headers: bearer(ownerToken) }), 404, 'not_found');
  const bySuper = await put(app, superToken, { min_password_length: 20 }, { query: `?company_id=${other.companyId}` });
  assert.equal(bySuper.statusCode, 200, bySuper.body);
  assert.equal(bySuper.json().company_id, other.companyId);
  const otherToken = (await login(app, other.email)).access_token;
  assert.equal((await app.inject({ url: POLICY, headers: bearer(otherToken) })).json().min_password_length, 20);
  assert.equal((await app.inject({ url: POLICY, headers: bearer(ownerToken) })).json().min_password_length, 12);
  assertCode(
    await app.inject({ url: `${POLICY}?company_id=${randomUUID()}`, headers: bearer(superToken) }),
    404,
    'not_found',
  );
});

test('mfa_required: a user without MFA signs in but may only enrol (and read the profile, sign out) until enrolled', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const member = await seedUser(app, owner.companyId);
  const ownerToken = (await login(app, owner.email)).access_token;
  assert.equal((await put(app, ownerToken, { mfa_required: true })).statusCode, 200);

  const { access_token: token } = await login(app, member.email);
  assertCode(await app.inject({ url: '/v1/me/sessions', headers: bearer(token) }), 403, 'mfa_enrollment_required');
  assertCode(await app.inject({ url: POLICY, headers: bearer(ownerToken) }), 403, 'mfa_enrollment_required');
  assert.equal((await app.inject({ url: '/v1/me/profile', headers: bearer(token) })).statusCode, 200);
  const blocked = await gql(app, token, '{ me { __typename } mySessions { total } }');
  assert.equal(blocked.errors?.[0]?.extensions.code, 'mfa_enrollment_required');
  assert.ok((await gql(app, token, '{ me { __typename } }')).data?.me);
  // Public operations are untouched.
  assert.equal((await app.inject({ url: '/v1/health', headers: bearer(token) })).statusCode, 200);

  const setup = await app.inject({ method: 'POST', url: '/v1/me/mfa/setup', headers: bearer(token) });
  assert.equal(setup.statusCode, 200, setup.body);
  const verified = await app.inject({
    method: 'POST',
    url: '/v1/me/mfa/verify',
    headers: bearer(token),
    payload: { totp_code: totp(setup.json().secret) },
  });
  assert.equal(verified.statusCode, 200, verified.body);
  assert.equal((await app.inject({ url: '/v1/me/sessions', headers: bearer(token) })).statusCode, 200);

  // Turning the rule off frees the others at once.
  await sql(app, 'update security_policies set mfa_required = 0');
  app.kernel.events.publish('security_policy.changed', { companyId: owner.companyId, version: 99 });
  assert.equal((await app.inject({ url: POLICY, headers: bearer(ownerToken) })).statusCode, 200);
});

test('min_password_length: a password reset shorter than the policy is 422; a long enough one is accepted', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const member = await seedUser(app, owner.companyId);
  const ownerToken = (await login(app, owner.email)).access_token;
  assert.equal((await put(app, ownerToken, { min_password_length: 20 })).statusCode, 200);

  await app.inject({ method: 'POST', url: '/v1/auth/password-reset/request', payload: { email: member.email } });
  await app.kernel.worker.drain();
  const [mail] = await sql<{ text: string }>(app, "select text from mail_outbox where template = 'password_reset'");
  const token = /reset-password\?token=([A-Za-z0-9_-]+)/.exec(mail!.text)![1]!;
  const short = await app.inject({
    method: 'POST',
    url: '/v1/auth/password-reset/confirm',
    payload: { token, new_password: 'fifteen-chars-x' },
  });
  assertCode(short, 422, 'validation_error');
  assert.deepEqual(short.json().errors[0].loc, ['body', 'new_password']);
  const ok = await app.inject({
    method: 'POST',
    url: '/v1/auth/password-reset/confirm',
    payload: { token, new_password: 'twenty-characters-long!' },
  });
  assert.ok(ok.statusCode < 300, ok.body);
  // Existing passwords still sign in.
  assert.equal((await login(app, owner.email)).user.email, owner.email);
});

test('session_idle_timeout_minutes: a session idle past the timeout is 401 token_invalid and ended; an active one lives', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const member = await seedUser(app, owner.companyId);
  const ownerToken = (await login(app, owner.email)).access_token;
  assert.equal((await put(app, ownerToken, { session_idle_timeout_minutes: 5 })).statusCode, 200);

  const idle = await login(app, member.email);
  const busy = await login(app, member.email);
  // The busy session is used now (cached, with in-memory activity); then both look idle in the database.
  assert.equal((await app.inject({ url: '/v1/me/profile', headers: bearer(busy.access_token) })).statusCode, 200);
  await sql(app, 'update sessions set last_seen_at = ? where user_id = ?', [Date.now() - 10 * 60_000, member.userId]);

  const refused = await app.inject({ url: '/v1/me/profile', headers: bearer(idle.access_token) });
  assertCode(refused, 401, 'token_invalid');
  assert.match(refused.json().detail, /without activity/);
  // The session is over: its refresh token cannot revive it.
  assertCode(
    await app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refresh_token: idle.refresh_token } }),
    401,
    'token_invalid',
  );
  const [row] = await sql<{ revoked_reason: string }>(app, 'select revoked_reason from sessions where id = (select id from sessions where user_id = ? order by created_at limit 1)', [member.userId]);
  assert.equal(row!.revoked_reason, 'idle_timeout');
  // The cached session was used a moment ago on this node: the later of the two last-seen values counts.
  assert.equal((await app.inject({ url: '/v1/me/profile', headers: bearer(busy.access_token) })).statusCode, 200);

  // Without the rule, idleness does not matter.
  assert.equal((await put(app, ownerToken, { session_idle_timeout_minutes: null })).statusCode, 200);
  const other = await login(app, member.email);
  await sql(app, 'update sessions set last_seen_at = ? where revoked_at is null', [Date.now() - 10 * 60_000]);
  assert.equal((await app.inject({ url: '/v1/me/profile', headers: bearer(other.access_token) })).statusCode, 200);
});

test('ip_allowlist: users and keys of the company outside the list get 403 ip_not_allowed; IPv4 and IPv6; other companies unaffected', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const stranger = await seedOwner(app, undefined, 'Elsewhere');
  const { key } = await createCompanyKey(app, owner.companyId);
  const ownerToken = (await login(app, owner.email)).access_token;
  const strangerToken = (await login(app, stranger.email)).access_token;
  const set = await put(app, ownerToken, { ip_allowlist: ['10.0.0.0/8', '2001:db8::/32'] }, { ip: '10.1.2.3' });
  assert.equal(set.statusCode, 200, set.body);
  assert.deepEqual(set.json().ip_allowlist, ['10.0.0.0/8', '2001:db8::/32']);

  const from = (token: string, ip: string, url = '/v1/me/profile') => app.inject({ url, headers: bearer(token), remoteAddress: ip });
  assert.equal((await from(ownerToken, '10.1.2.3')).statusCode, 200);
  assert.equal((await from(key, '10.200.0.1')).statusCode, 200);
  assert.equal((await from(ownerToken, '2001:db8::1')).statusCode, 200);
  assert.equal((await from(ownerToken, '::ffff:10.9.9.9')).statusCode, 200);
  for (const ip of ['192.168.1.1', '11.0.0.1', '2001:db9::1', '127.0.0.1']) {
    const res = await from(ownerToken, ip);
    assertCode(res, 403, 'ip_not_allowed');
    assert.match(res.json().detail, new RegExp(ip.replace(/[.:]/g, '\\$&')));
  }
  assertCode(await from(key, '192.168.1.1'), 403, 'ip_not_allowed');
  const viaGraphql = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers: bearer(ownerToken),
    remoteAddress: '192.168.1.1',
    payload: { query: '{ me { __typename } }' },
  });
  assert.equal(viaGraphql.json().errors[0].extensions.code, 'ip_not_allowed');
  // Another company has no list; public routes do not care.
  assert.equal((await from(strangerToken, '192.168.1.1')).statusCode, 200);
  assert.equal((await app.inject({ url: '/v1/health', headers: bearer(ownerToken), remoteAddress: '192.168.1.1' })).statusCode, 200);

  // Emptying the list (from inside it) opens every address again at once.
  assert.equal((await put(app, ownerToken, { ip_allowlist: [] }, { ip: '10.1.2.3' })).statusCode, 200);
  assert.equal((await from(ownerToken, '192.168.1.1')).statusCode, 200);
});

test('ip_allowlist holds for the ways into a session: sign-in, refresh and an invitation\'s acceptance from outside are 403 and open nothing', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const inside = '10.1.2.3';
  const outside = '192.168.1.1';
  const first = await login(app, owner.email);
  assert.equal((await put(app, first.access_token, { ip_allowlist: ['10.0.0.0/8'] }, { ip: inside })).statusCode, 200);
  const sessions = async () => (await sql<{ n: number }>(app, 'select count(*) as n from sessions where company_id = ?', [owner.companyId]))[0]!.n;
  const before = await sessions();

  const signIn = (ip: string, password = PASSWORD) => app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: owner.email, password }, remoteAddress: ip });
  assertCode(await signIn(outside), 403, 'ip_not_allowed');
  // A wrong password from outside is the same 401 as anywhere: the address is judged only once the credentials are right.
  assertCode(await signIn(outside, 'not-the-password-at-all'), 401, 'invalid_credentials');
  assert.equal(await sessions(), before, 'no session opened');

  const refresh = (ip: string, token: string) => app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refresh_token: token }, remoteAddress: ip });
  assertCode(await refresh(outside, first.refresh_token), 403, 'ip_not_allowed');
  // Refused, the refresh token was not spent: it still works from inside.
  assert.equal((await refresh(inside, first.refresh_token)).statusCode, 200);
  assert.equal((await signIn(inside)).statusCode, 200);

  // An invitation accepted from outside creates no user and stays pending.
  const invited = 'invitee@example.com';
  const sent = await app.inject({ method: 'POST', url: '/v1/admin/invitations', headers: bearer(first.access_token), payload: { email: invited, role: 'member' }, remoteAddress: inside });
  assert.equal(sent.statusCode, 201, sent.body);
  await app.kernel.worker.drain();
  const [mail] = await sql<{ text: string }>(app, "select text from mail_outbox where to_address = ? and template = 'invitation'", [invited]);
  const token = /accept-invitation\?token=([A-Za-z0-9_-]+)/.exec(mail!.text)![1]!;
  const acceptFrom = (ip: string) => app.inject({ method: 'POST', url: '/v1/invitations/accept', payload: { token, password: 'a-long-enough-password' }, remoteAddress: ip });
  assertCode(await acceptFrom(outside), 403, 'ip_not_allowed');
  assert.deepEqual(await sql(app, 'select id from users where email = ?', [invited]), []);
  assert.equal((await acceptFrom(inside)).statusCode, 201);
});

test('api_key_max_age_days: a company key older than the limit is 401 token_invalid, even while cached', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const ownerToken = (await login(app, owner.email)).access_token;
  const old = await createCompanyKey(app, owner.companyId, 'old key');
  const fresh = await createCompanyKey(app, owner.companyId, 'fresh key');
  await sql(app, 'update api_keys set created_at = ? where id = ?', [Date.now() - 40 * 86_400_000, old.id]);
  // Both keys are resolved (and cached) before the rule exists.
  assert.equal((await app.inject({ url: '/v1/me/profile', headers: bearer(old.key) })).statusCode, 200);
  assert.equal((await put(app, ownerToken, { api_key_max_age_days: 30 })).statusCode, 200);

  const refused = await app.inject({ url: '/v1/me/profile', headers: bearer(old.key) });
  assertCode(refused, 401, 'token_invalid');
  assert.match(refused.json().detail, /older than the 30 days/);
  assert.equal((await app.inject({ url: '/v1/me/profile', headers: bearer(fresh.key) })).statusCode, 200);
});

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

test('allowed_sso_providers, sso_signup_email_domains and ip_allowlist: SSO sign-in with a refused provider, sign-up outside the domains, from outside the networks, 403', async (t) => {
  const app = await build(t, { sso: ssoConfig(google, microsoft) });
  const owner = await seedOwner(app, 'sso-owner@example.com');
  const ownerToken = (await login(app, owner.email)).access_token;
  const lastFailure = async () => {
    const [row] = await sql<{ data: string }>(app, "select data from audit_events where action = 'auth.sso_failed' order by created_at desc, rowid desc limit 1");
    return JSON.parse(row!.data) as Record<string, unknown>;
  };

  assert.equal((await signIn(app, google, 'google', googleClaims('g-owner', owner.email))).res.statusCode, 302);
  assert.equal((await put(app, ownerToken, { allowed_sso_providers: ['microsoft'], sso_signup_email_domains: ['example.com'] })).statusCode, 200);
  // A linked account, and an existing user matched by email, are both refused.
  assertCode((await signIn(app, google, 'google', googleClaims('g-owner', owner.email))).res, 403, 'forbidden');
  assert.equal((await lastFailure()).reason, 'provider_not_allowed');

  // Sign-up through an invitation: the email's domain must be allowed (google allowed again for this).
  assert.equal((await put(app, ownerToken, { allowed_sso_providers: ['google', 'microsoft'] })).statusCode, 200);
  const now = Date.now();
  for (const email of ['hire@other.org', 'hire@example.com']) {
    const id = randomBytes(16).toString('hex');
    await sql(
      app,
      'insert into invitations (id, company_id, email, role, token_hash, status, expires_at, created_at) values (?, ?, ?, ?, ?, ?, ?, ?)',
      [id, owner.companyId, email, 'member', createHash('sha256').update(id).digest('hex'), 'pending', now + 86_400_000, now],
    );
  }
  assertCode((await signIn(app, google, 'google', googleClaims('g-other', 'hire@other.org'))).res, 403, 'forbidden');
  assert.equal((await lastFailure()).reason, 'email_domain_not_allowed');
  assert.equal((await sql(app, "select 1 from users where email = 'hire@other.org'")).length, 0);
  const [invitation] = await sql<{ status: string }>(app, "select status from invitations where email = 'hire@other.org'");
  assert.equal(invitation!.status, 'pending');
  assert.equal((await signIn(app, google, 'google', googleClaims('g-hire', 'hire@example.com'))).res.statusCode, 302);

  // An allow-list that leaves the sign-in's address (loopback here) out refuses single sign-on too, before any session.
  assert.equal((await put(app, ownerToken, { ip_allowlist: ['10.0.0.0/8'] }, { ip: '10.1.2.3' })).statusCode, 200);
  assertCode((await signIn(app, google, 'google', googleClaims('g-owner', owner.email))).res, 403, 'ip_not_allowed');
  assert.equal((await lastFailure()).reason, 'ip_not_allowed');
});

/** A pending invitation of `email`, written as the invitation service stores one (its link is not needed: SSO sign-up finds it by address). */
async function pendingInvitation(app: FastifyInstance, companyId: string, email: string): Promise<void> {
  const id = randomBytes(16).toString('hex');
  const now = Date.now();
  await sql(
    app,
    'insert into invitations (id, company_id, email, role, token_hash, status, expires_at, created_at) values (?, ?, ?, ?, ?, ?, ?, ?)',
    [id, companyId, email, 'member', createHash('sha256').update(id).digest('hex'), 'pending', now + 86_400_000, now],
  );
}

test('sso_signup_email_domains are stored in NFC, as addresses are: a domain typed decomposed admits sign-up from an address at it', async (t) => {
  const app = await build(t, { sso: ssoConfig(google, null) });
  const owner = await seedOwner(app);
  const ownerToken = (await login(app, owner.email)).access_token;
  const decomposed = 'bu\u0308cher.example';
  const composed = 'b\u00fccher.example';
  const res = await put(app, ownerToken, { sso_signup_email_domains: [`@${decomposed.toUpperCase()}`, composed] });
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(res.json().sso_signup_email_domains, [composed]);

  const email = `hire@${composed}`;
  await pendingInvitation(app, owner.companyId, email);
  assert.equal((await signIn(app, google, 'google', googleClaims('g-hire', email))).res.statusCode, 302);
  assert.equal((await sql(app, 'select 1 from users where email = ?', [email])).length, 1);
});

test('an SSO sign-up domain typed as its A-label (xn--) is the domain of its Unicode addresses: stored once, and it admits them, also as a policy stored it before', async (t) => {
  const app = await build(t, { sso: ssoConfig(google, null) });
  const owner = await seedOwner(app);
  const ownerToken = (await login(app, owner.email)).access_token;
  const res = await put(app, ownerToken, { sso_signup_email_domains: ['XN--BCHER-KVA.example', 'b\u00fccher.example'] });
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(res.json().sso_signup_email_domains, ['b\u00fccher.example']);

  const invite = (email: string) => pendingInvitation(app, owner.companyId, email);
  await invite('hire@b\u00fccher.example');
  assert.equal((await signIn(app, google, 'google', googleClaims('g-hire', 'hire@b\u00fccher.example'))).res.statusCode, 302);

  // As the code before this stored an A-label typed by an admin.
  await sql(app, 'update security_policies set sso_signup_email_domains = ? where company_id = ?', [JSON.stringify(['xn--bcher-kva.example']), owner.companyId]);
  await invite('second@b\u00fccher.example');
  assert.equal((await signIn(app, google, 'google', googleClaims('g-second', 'second@b\u00fccher.example'))).res.statusCode, 302);
  assert.equal((await sql(app, 'select 1 from users where email like ?', ['%@b\u00fccher.example'])).length, 2);
});

test('session_idle_timeout_minutes holds for the session cookie too: an idle cookie session is 401 token_invalid and ended, not revived', async (t) => {
  const app = await build(t, { sso: ssoConfig(google, null) });
  const owner = await seedOwner(app);
  const member = await seedUser(app, owner.companyId);
  const ownerToken = (await login(app, owner.email)).access_token;
  assert.equal((await put(app, ownerToken, { session_idle_timeout_minutes: 5 })).statusCode, 200);
  const browser = async (sub: string) => {
    const { res } = await signIn(app, google, 'google', googleClaims(sub, member.email));
    assert.equal(res.statusCode, 302, res.body);
    return cookiePair(setCookie(res, 'service_token'));
  };
  const origin = app.config.publicUrl;
  const profile = (cookie: string) => app.inject({ url: '/v1/me/profile', headers: { cookie } });
  const sessionOf = (id: string) => sql<{ revoked_reason: string | null; last_seen_at: number }>(app, 'select revoked_reason, last_seen_at from sessions where id = ?', [id]);
  const sessionIds = async () => (await sql<{ id: string }>(app, 'select id from sessions where user_id = ? order by created_at, rowid', [member.userId])).map((r) => r.id);

  const idle = await browser('g-member');
  const busy = await browser('g-member');
  const [idleId, busyId] = await sessionIds();
  // The busy session is used now; then both look idle in the database.
  assert.equal((await profile(busy)).statusCode, 200);
  const tenMinutesAgo = Date.now() - 10 * 60_000;
  await sql(app, 'update sessions set last_seen_at = ? where user_id = ?', [tenMinutesAgo, member.userId]);

  const refused = await profile(idle);
  assertCode(refused, 401, 'token_invalid');
  assert.match(refused.json().detail, /without activity/);
  assert.equal((await sessionOf(idleId!))[0]!.revoked_reason, 'idle_timeout');
  // Ended, not revived: no later request (a write, GraphQL) gets through or moves its last_seen_at.
  const write = await app.inject({ method: 'PATCH', url: '/v1/me/profile', headers: { cookie: idle, origin }, payload: { name: 'Revived' } });
  assertCode(write, 401, 'token_invalid');
  const viaGraphql = await app.inject({ method: 'POST', url: '/graphql', headers: { cookie: idle, origin }, payload: { query: '{ me { role } }' } });
  assert.equal(viaGraphql.json().errors[0].extensions.code, 'token_invalid', viaGraphql.body);
  assert.equal((await sessionOf(idleId!))[0]!.last_seen_at, tenMinutesAgo);
  // The cookie session used a moment ago on this node lives: the later of the two last-seen values counts.
  assert.equal((await profile(busy)).statusCode, 200);
  assert.equal((await sessionOf(busyId!))[0]!.revoked_reason, null);
});

test('ip_allowlist applies to graphql-ws connections too: a socket from outside the list is closed with 4403 ip_not_allowed', async (t) => {
  const cleanups: (() => unknown)[] = [];
  const app = await build({ after: (fn: () => unknown) => cleanups.push(fn) });
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  assert.equal((await put(app, token, { ip_allowlist: ['10.0.0.0/8'] }, { ip: '10.1.2.3' })).statusCode, 200);
  // Loopback only: the socket comes from 127.0.0.1, outside the list.
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const closed: { code: number; reason: string }[] = [];
  const client = createClient({
    url: `ws://127.0.0.1:${port}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${token}` },
    retryAttempts: 0,
    shouldRetry: () => false,
    on: { closed: (event) => closed.push(event as { code: number; reason: string }) },
  });
  t.after(async () => {
    await client.dispose();
    for (const fn of cleanups) await fn();
  });
  client.subscribe({ query: 'subscription { auditEvents { action } }' }, { next: () => undefined, error: () => undefined, complete: () => undefined });
  const deadline = Date.now() + 3000;
  while (!closed.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.deepEqual(closed.map((c) => [c.code, String(c.reason)]), [[4403, 'ip_not_allowed']]);
});

test('a policy another process changed (a standalone subgraph, the CLI) applies within EXTERNAL_WRITES_SEEN_MS, cached credentials included', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const member = await seedUser(app, owner.companyId, 'member');
  const memberToken = (await login(app, member.email)).access_token;
  const { access_token } = await login(app, owner.email);
  const key = await createCompanyKey(app, owner.companyId);
  assert.equal((await put(app, access_token, { session_idle_timeout_minutes: 60 }, { method: 'PATCH' })).statusCode, 200);
  const read = (token: string) => app.inject({ url: '/v1/billing/credits', headers: bearer(token) });
  // Cached: the credential and the policy.
  for (const token of [access_token, key.key, memberToken]) assert.equal((await read(token)).statusCode, 200);

  const settle = () => new Promise((resolve) => setTimeout(resolve, EXTERNAL_WRITES_SEEN_MS + 20));
  const otherProcess = new Database(app.config.databaseFile);
  t.after(() => otherProcess.close());
  otherProcess.pragma('busy_timeout = 5000');
  otherProcess
    .prepare('update security_policies set ip_allowlist = ?, mfa_required = 1, version = version + 1 where company_id = ?')
    .run(JSON.stringify(['10.0.0.0/8']), owner.companyId);
  await settle();
  for (const token of [access_token, key.key, memberToken]) assertCode(await read(token), 403, 'ip_not_allowed');

  otherProcess.prepare("update security_policies set ip_allowlist = '[]', version = version + 1 where company_id = ?").run(owner.companyId);
  await settle();
  assertCode(await read(memberToken), 403, 'mfa_enrollment_required');
  assert.equal((await read(key.key)).statusCode, 200, 'a company key owes no enrolment');
});
