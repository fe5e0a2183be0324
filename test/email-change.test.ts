import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt } from 'jose';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { assertSearchKeysInStep, bearer, build, createCompanyKey, login, PASSWORD, seedOwner } from './helper';
import { sql } from './totp';
import { loadConfig } from '../src/config';
import { issueOneTimeToken } from '../src/domains/identity/one-time-tokens';
import { PASSWORD_RESET_PURPOSE } from '../src/domains/identity/password-reset.service';

function assertCode(res: LightMyRequestResponse, status: number, code: string) {
  assert.equal(res.statusCode, status, res.body);
  assert.ok(String(res.json().type).endsWith(`/errors/${code}`), `expected ${code}, got ${res.body}`);
}

const post = (app: FastifyInstance, url: string, token?: string, payload?: object) =>
  app.inject({ method: 'POST', url, ...(token ? { headers: bearer(token) } : {}), ...(payload ? { payload } : {}) });
const requestChange = (app: FastifyInstance, token: string, newEmail: string, prefix = '/v1') =>
  post(app, `${prefix}/me/email`, token, { new_email: newEmail });
const confirm = (app: FastifyInstance, token: string) => post(app, '/v1/me/email/confirm', undefined, { token });
const profile = (app: FastifyInstance, token: string) => app.inject({ url: '/v1/me/profile', headers: bearer(token) });
const loginStatus = async (app: FastifyInstance, email: string) =>
  (await post(app, '/v1/auth/login', undefined, { email, password: PASSWORD })).statusCode;

/** Moves the session's last authentication `seconds` into the past. */
async function ageSession(app: FastifyInstance, token: string, seconds: number) {
  await sql(app, 'update sessions set authenticated_at = ? where id = ?', [Date.now() - seconds * 1000, decodeJwt(token).sid]);
}

interface Mail {
  to_address: string;
  template: string;
  subject: string;
  text: string;
}

async function mails(app: FastifyInstance): Promise<Mail[]> {
  return sql<Mail>(app, 'select to_address, template, subject, text from mail_outbox order by created_at, id');
}

/** The token of the newest confirmation link mailed to `to`. */
async function linkToken(app: FastifyInstance, to: string): Promise<string> {
  const mail = (await mails(app)).filter((m) => m.to_address === to && m.template === 'email_verification').at(-1);
  assert.ok(mail, `no email_verification mail to ${to}`);
  const match = /\/app\/confirm-email\?token=([A-Za-z0-9_-]+)/.exec(mail.text);
  assert.ok(match, mail.text);
  return match[1]!;
}

async function auditActions(app: FastifyInstance, userId: string) {
  return sql<{ action: string; data: string | null }>(
    app,
    'select action, data from audit_events where target_id = ? order by created_at, id',
    [userId],
  );
}

const fresh = (label: string) => `${label}-${Math.random().toString(36).slice(2)}@example.com`;

test('changing the email needs an authentication within 5 minutes; then it mails the new and the old address', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  const newEmail = fresh('new');

  await ageSession(app, token, 600);
  const refused = await requestChange(app, token, newEmail);
  assertCode(refused, 403, 'step_up_required');
  assert.equal((await mails(app)).length, 0);

  const stepped = await post(app, '/v1/auth/step-up', token, { password: PASSWORD });
  assert.equal(stepped.statusCode, 200, stepped.body);
  const before = Date.now();
  const res = await requestChange(app, token, `  ${newEmail.toUpperCase()} `);
  assert.equal(res.statusCode, 202, res.body);
  const body = res.json();
  assert.deepEqual(Object.keys(body).sort(), ['expires_at', 'new_email']);
  assert.equal(body.new_email, newEmail);
  const ttl = Date.parse(body.expires_at) - before;
  assert.ok(ttl > 24 * 3600_000 - 5000 && ttl < 24 * 3600_000 + 5000, `expires in ${ttl} ms`);

  const sent = await mails(app);
  const verification = sent.find((m) => m.template === 'email_verification');
  assert.equal(verification?.to_address, newEmail);
  assert.ok(verification.text.includes(`${app.config.publicUrl}/app/confirm-email?token=`), verification.text);
  assert.match(verification.text, /expires in 1 day/);
  const notice = sent.find((m) => m.template === 'email_change_requested');
  assert.equal(notice?.to_address, owner.email);
  assert.ok(notice.text.includes(newEmail), 'the notice names the requested address');
  assert.ok(!notice.text.includes('token='), 'the old address never gets the link');

  // Nothing changes before the confirmation; only the hash of the token is stored.
  assert.equal((await profile(app, token)).json().email, owner.email);
  const token32 = await linkToken(app, newEmail);
  assert.equal(Buffer.from(token32, 'base64url').length, 32);
  const rows = await sql<{ token_hash: string; data: string }>(
    app,
    "select token_hash, data from one_time_tokens where user_id = ? and purpose = 'email_change'",
    [owner.userId],
  );
  assert.equal(rows.length, 1);
  assert.match(rows[0]!.token_hash, /^[0-9a-f]{64}$/);
  assert.ok(!rows[0]!.token_hash.includes(token32));
  assert.deepEqual(JSON.parse(rows[0]!.data), { newEmail });
  assert.deepEqual((await auditActions(app, owner.userId)).map((r) => r.action).filter((a) => a.startsWith('user.')), [
    'user.email_change_requested',
  ]);
});

test('confirming sets the new email without a session: the new one signs in, the old one no longer; the link works once', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  const newEmail = fresh('moved');
  assert.equal((await requestChange(app, token, newEmail, '/api/v1')).statusCode, 202);
  const link = await linkToken(app, newEmail);
  // A password-reset link mailed to the old address before the change.
  await issueOneTimeToken(app.kernel.orm.em.fork(), { userId: owner.userId, purpose: PASSWORD_RESET_PURPOSE, ttlSeconds: 1800 });

  const confirmed = await confirm(app, link);
  assert.equal(confirmed.statusCode, 204, confirmed.body);
  assert.equal(confirmed.body, '');
  assert.equal(await loginStatus(app, newEmail), 200);
  assert.equal(await loginStatus(app, owner.email), 401);
  // The session that asked stays signed in and sees the new address at once (cached credentials dropped).
  const me = (await profile(app, token)).json();
  assert.equal(me.email, newEmail);
  const gqlMe = await app.inject({ method: 'POST', url: '/graphql', headers: bearer(token), payload: { query: '{ me { user { email } } }' } });
  assert.equal(gqlMe.json().data.me.user.email, newEmail);
  // The change is a native update: it sets the email's search key too.
  await assertSearchKeysInStep(app);

  assertCode(await confirm(app, link), 400, 'email_change_token_invalid');
  assertCode(await confirm(app, 'not-a-token'), 400, 'email_change_token_invalid');
  assertCode(await post(app, '/v1/me/email/confirm', undefined, {}), 422, 'validation_error');

  const audit = await auditActions(app, owner.userId);
  const changed = audit.find((r) => r.action === 'user.email_changed');
  assert.ok(changed, audit.map((r) => r.action).join(', '));
  assert.deepEqual(JSON.parse(changed.data!), { oldEmail: owner.email, newEmail });
  const [{ n }] = await sql<{ n: number }>(
    app,
    "select count(*) as n from one_time_tokens where purpose = 'email_change' and used_at is not null",
  );
  assert.equal(Number(n), 1);
  const [{ n: resetLinks }] = await sql<{ n: number }>(
    app,
    'select count(*) as n from one_time_tokens where purpose = ? and used_at is null and expires_at > ?',
    [PASSWORD_RESET_PURPOSE, Date.now()],
  );
  assert.equal(Number(resetLinks), 0, 'reset links mailed to the old address stop working');
});

test('an expired link fails; a newer request replaces the older one; DELETE /me/email cancels', async (t) => {
  const app = await build(t, { emailChangeTokenTtlMinutes: 30 });
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);

  const first = fresh('first');
  const res = await requestChange(app, token, first);
  assert.equal(res.statusCode, 202);
  const ttl = Date.parse(res.json().expires_at) - Date.now();
  assert.ok(ttl > 29 * 60_000 && ttl <= 30 * 60_000, `EMAIL_CHANGE_TOKEN_TTL_MINUTES honoured (${ttl} ms)`);
  assert.match((await mails(app)).find((m) => m.to_address === first)!.text, /expires in 30 minutes/);
  const firstLink = await linkToken(app, first);

  const second = fresh('second');
  assert.equal((await requestChange(app, token, second)).statusCode, 202);
  const secondLink = await linkToken(app, second);
  assertCode(await confirm(app, firstLink), 400, 'email_change_token_invalid');

  await sql(app, "update one_time_tokens set expires_at = ? where user_id = ? and purpose = 'email_change'", [Date.now() - 1000, owner.userId]);
  assertCode(await confirm(app, secondLink), 400, 'email_change_token_invalid');
  assert.equal((await profile(app, token)).json().email, owner.email);

  const third = fresh('third');
  assert.equal((await requestChange(app, token, third)).statusCode, 202);
  const thirdLink = await linkToken(app, third);
  const cancelled = await app.inject({ method: 'DELETE', url: '/v1/me/email', headers: bearer(token) });
  assert.equal(cancelled.statusCode, 204, cancelled.body);
  assertCode(await confirm(app, thirdLink), 400, 'email_change_token_invalid');
  // A cancelled (or replaced) link leaves the outbox at once.
  for (const [address, link] of [[first, firstLink], [third, thirdLink]]) {
    assert.ok(!(await mails(app)).find((m) => m.to_address === address)!.text.includes(link!), `${address}'s mail no longer holds its link`);
  }
  assert.equal((await app.inject({ method: 'DELETE', url: '/v1/me/email', headers: bearer(token) })).statusCode, 204);
  assert.equal(await loginStatus(app, owner.email), 200);
});

test('an address another account uses is refused (409 email_taken), at request and at confirmation', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const other = await seedOwner(app, fresh('other'), 'Other Co');
  const { access_token: token } = await login(app, owner.email);

  const taken = await requestChange(app, token, other.email.toUpperCase());
  assertCode(taken, 409, 'email_taken');
  assert.ok(!taken.body.includes('Other Co') && !taken.body.includes(other.userId), 'nothing about the other account');
  assertCode(await requestChange(app, token, owner.email), 422, 'validation_error');
  for (const bad of ['no-at-sign', 'a@b', 'a b@example.com', 'x<y>@example.com']) {
    assertCode(await requestChange(app, token, bad), 422, 'validation_error');
  }
  assert.equal((await mails(app)).length, 0);

  // Free when asked, taken before the link is opened: the unique index decides.
  const contested = fresh('contested');
  assert.equal((await requestChange(app, token, contested)).statusCode, 202);
  const link = await linkToken(app, contested);
  await sql(app, 'update users set email = ? where id = ?', [contested, other.userId]);
  assertCode(await confirm(app, link), 409, 'email_taken');
  assert.equal((await profile(app, token)).json().email, owner.email);
  // Rolled back: once the address is free again the same link still works.
  await sql(app, 'update users set email = ? where id = ?', [other.email, other.userId]);
  assert.equal((await confirm(app, link)).statusCode, 204);
  assert.equal(await loginStatus(app, contested), 200);
});

test('an address another account uses in another Unicode normal form is the same address: 409 email_taken', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  await seedOwner(app, 'j\u00f6hn@example.com', 'Other Co');
  const { access_token: token } = await login(app, owner.email);
  assertCode(await requestChange(app, token, 'jo\u0308hn@example.com'), 409, 'email_taken');
  assert.equal((await mails(app)).length, 0);
});

test('a company API key cannot change an email', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { key } = await createCompanyKey(app, owner.companyId);
  assertCode(await requestChange(app, key, fresh('key')), 403, 'forbidden');
  assertCode(await app.inject({ method: 'DELETE', url: '/v1/me/email', headers: bearer(key) }), 403, 'forbidden');
  assertCode(await post(app, '/v1/me/email', undefined, { new_email: fresh('anon') }), 401, 'unauthenticated');
  assert.equal((await mails(app)).length, 0);
});

test('confirming spends the auth rate-limit budget (guessing tokens is bounded per IP)', async (t) => {
  const app = await build(t, { rateLimit: { windowSeconds: 60, authenticated: 10_000, moduleKey: 10_000, anonymous: 10_000, auth: 3, feedback: 10_000 } });
  const res = await confirm(app, 'guess-1');
  assert.match(String(res.headers['ratelimit-policy']), /^"auth";q=3;/);
  assertCode(res, 400, 'email_change_token_invalid');
  await confirm(app, 'guess-2');
  await confirm(app, 'guess-3');
  assertCode(await confirm(app, 'guess-4'), 429, 'rate_limited');
});

test('GraphQL: requestEmailChange needs stepUp; confirmEmailChange needs only the token', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  const gql = (query: string, variables: object = {}, auth?: string) =>
    app.inject({ method: 'POST', url: '/graphql', headers: auth ? bearer(auth) : {}, payload: { query, variables } });
  const newEmail = fresh('graph');
  const request = 'mutation($e: String!) { requestEmailChange(newEmail: $e) { newEmail expiresAt } }';

  await ageSession(app, token, 600);
  const refused = (await gql(request, { e: newEmail }, token)).json();
  assert.equal(refused.errors[0].extensions.code, 'step_up_required');
  assert.equal(refused.errors[0].extensions.http.status, 403);

  const stepped = (await gql('mutation { stepUp(input: { password: "' + PASSWORD + '" }) { accessToken } }', {}, token)).json();
  assert.equal(stepped.errors, undefined, JSON.stringify(stepped.errors));
  const ok = (await gql(request, { e: newEmail }, token)).json();
  assert.equal(ok.errors, undefined, JSON.stringify(ok.errors));
  assert.equal(ok.data.requestEmailChange.newEmail, newEmail);

  const taken = (await gql(request, { e: owner.email }, token)).json();
  assert.equal(taken.errors[0].extensions.code, 'validation_error');

  const doc = 'mutation($t: String!) { confirmEmailChange(token: $t) }';
  const link = await linkToken(app, newEmail);
  const confirmed = (await gql(doc, { t: link })).json();
  assert.equal(confirmed.errors, undefined, JSON.stringify(confirmed.errors));
  assert.equal(confirmed.data.confirmEmailChange, true);
  const again = (await gql(doc, { t: link })).json();
  assert.equal(again.errors[0].extensions.code, 'email_change_token_invalid');
  assert.equal(again.errors[0].extensions.http.status, 400);
  assert.equal((await gql('{ me { user { email } } }', {}, token)).json().data.me.user.email, newEmail);
  assert.equal((await gql('mutation { cancelEmailChange }', {}, token)).json().data.cancelEmailChange, false);
});

test('EMAIL_CHANGE_TOKEN_TTL_MINUTES defaults to one day', () => {
  assert.equal(loadConfig({}).emailChangeTokenTtlMinutes, 1440);
  assert.equal(loadConfig({ EMAIL_CHANGE_TOKEN_TTL_MINUTES: '60' }).emailChangeTokenTtlMinutes, 60);
  assert.throws(() => loadConfig({ EMAIL_CHANGE_TOKEN_TTL_MINUTES: '0' }), /EMAIL_CHANGE_TOKEN_TTL_MINUTES/);
});
