import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { assertCode, bearer, build, login, PASSWORD, seedOwner, sql } from './helper';
import { inContext } from '../src/boot';

const NEW_PASSWORD = 'a-brand-new-password-42';
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** Asks for a reset and waits for its job (lookup, token, mail) to run. */
async function requestReset(app: FastifyInstance, email: string, prefix = '/v1') {
  const res = await app.inject({ method: 'POST', url: `${prefix}/auth/password-reset/request`, payload: { email } });
  await app.kernel.worker.drain();
  return res;
}

const confirm = (app: FastifyInstance, token: string, newPassword = NEW_PASSWORD, prefix = '/v1') =>
  app.inject({ method: 'POST', url: `${prefix}/auth/password-reset/confirm`, payload: { token, new_password: newPassword } });

interface OutboxRow {
  to_address: string;
  template: string;
  subject: string;
  text: string;
  html: string;
}

const outbox = (app: FastifyInstance) =>
  sql<OutboxRow>(app, "select to_address, template, subject, text, html from mail_outbox where template = 'password_reset' order by rowid");

/** The token of the link in a reset mail. */
function tokenOf(app: FastifyInstance, mail: OutboxRow): string {
  const link = new RegExp(`${app.config.publicUrl.replace(/[.]/g, '\\.')}/app/reset-password\\?token=([A-Za-z0-9_-]+)`).exec(mail.text);
  assert.ok(link, mail.text);
  return link[1]!;
}

const tryLogin = (app: FastifyInstance, email: string, password: string) =>
  app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email, password } });

test('a reset request answers 202 with one body whether or not the email exists; only a real account gets mail', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);

  const unknown = await requestReset(app, 'nobody@example.com');
  assert.equal(unknown.statusCode, 202, unknown.body);
  assert.deepEqual(await outbox(app), []);
  assert.deepEqual(await sql(app, "select id from audit_events where action like 'auth.password_reset%'"), []);

  const real = await requestReset(app, ` ${owner.email.toUpperCase()} `);
  assert.equal(real.statusCode, 202);
  assert.deepEqual(real.json(), unknown.json());
  assert.deepEqual(Object.keys(real.json()), ['message']);
  assert.equal(real.headers['content-type'], unknown.headers['content-type']);

  const mails = await outbox(app);
  assert.equal(mails.length, 1);
  const [mail] = mails;
  assert.equal(mail!.to_address, owner.email);
  assert.equal(mail!.template, 'password_reset');
  const token = tokenOf(app, mail!);
  assert.equal(Buffer.from(token, 'base64url').length, 32);
  assert.match(mail!.text, /expires in 30 minutes/);
  assert.ok(mail!.html.includes(`/app/reset-password?token=${token}`));

  // Stored as a hash, with its lifetime; the plaintext is nowhere in the database.
  const rows = await sql<{ user_id: string; purpose: string; token_hash: string; expires_at: number; created_at: number; used_at: number | null }>(
    app,
    'select user_id, purpose, token_hash, expires_at, created_at, used_at from one_time_tokens',
  );
  assert.equal(rows.length, 1);
  assert.equal(rows[0]!.user_id, owner.userId);
  assert.equal(rows[0]!.purpose, 'password_reset');
  assert.equal(rows[0]!.token_hash, sha256(token));
  assert.equal(rows[0]!.used_at, null);
  assert.equal(Number(rows[0]!.expires_at) - Number(rows[0]!.created_at), 30 * 60_000);
  const everything = JSON.stringify([
    await sql(app, 'select * from one_time_tokens'),
    await sql(app, 'select * from audit_events'),
  ]);
  assert.ok(!everything.includes(token));

  const audited = await sql<{ company_id: string; target_id: string }>(
    app,
    "select company_id, target_id from audit_events where action = 'auth.password_reset_requested'",
  );
  assert.deepEqual(audited, [{ company_id: owner.companyId, target_id: owner.userId }]);

  // A malformed body is a 422 like anywhere else (that says nothing about accounts).
  assertCode(await app.inject({ method: 'POST', url: '/v1/auth/password-reset/request', payload: {} }), 422, 'validation_error');
});

test('confirming sets the new password, ends every session, and the token works once', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const first = await login(app, owner.email);
  const second = await login(app, owner.email);
  assert.equal((await app.inject({ url: '/v1/me/profile', headers: bearer(first.access_token) })).statusCode, 200);

  await requestReset(app, owner.email, '/api/v1');
  const token = tokenOf(app, (await outbox(app))[0]!);
  const done = await confirm(app, token);
  assert.equal(done.statusCode, 204, done.body);
  assert.equal(done.body, '');

  // Every session ended at once: access tokens (even cached ones) and refresh tokens.
  for (const tokens of [first, second]) {
    assertCode(await app.inject({ url: '/v1/me/profile', headers: bearer(tokens.access_token) }), 401, 'token_invalid');
    assertCode(
      await app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refresh_token: tokens.refresh_token } }),
      401,
      'token_invalid',
    );
  }
  const sessions = await sql<{ revoked_reason: string }>(app, 'select revoked_reason from sessions');
  assert.deepEqual(sessions.map((s) => s.revoked_reason), ['password_reset', 'password_reset']);

  assertCode(await tryLogin(app, owner.email, PASSWORD), 401, 'invalid_credentials');
  assert.equal((await tryLogin(app, owner.email, NEW_PASSWORD)).statusCode, 200);

  // Used: it never works again.
  assertCode(await confirm(app, token, 'yet-another-password-1'), 400, 'password_reset_token_invalid');
  assertCode(await confirm(app, 'never-issued-token'), 400, 'password_reset_token_invalid');
  assert.equal((await tryLogin(app, owner.email, NEW_PASSWORD)).statusCode, 200);

  const audited = await sql<{ company_id: string; actor_id: string; data: string }>(
    app,
    "select company_id, actor_id, data from audit_events where action = 'auth.password_reset'",
  );
  assert.equal(audited.length, 1);
  assert.equal(audited[0]!.company_id, owner.companyId);
  assert.equal(audited[0]!.actor_id, owner.userId);
  assert.equal(JSON.parse(audited[0]!.data).sessionsRevoked, 2);
});

test('an expired token fails; a newer request replaces the older link', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);

  await requestReset(app, owner.email);
  const expired = tokenOf(app, (await outbox(app))[0]!);
  await sql(app, 'update one_time_tokens set expires_at = ? where token_hash = ?', [Date.now() - 1000, sha256(expired)]);
  assertCode(await confirm(app, expired), 400, 'password_reset_token_invalid');

  await requestReset(app, owner.email);
  const older = tokenOf(app, (await outbox(app))[1]!);
  await requestReset(app, owner.email);
  const mails = await outbox(app);
  assert.equal(mails.length, 3);
  const newer = tokenOf(app, mails[2]!);
  assert.notEqual(older, newer);
  assertCode(await confirm(app, older), 400, 'password_reset_token_invalid');
  assert.equal((await confirm(app, newer)).statusCode, 204);
  assert.equal((await tryLogin(app, owner.email, NEW_PASSWORD)).statusCode, 200);
});

test('a reset mail keeps its link in the outbox only while the link works: replaced by a newer request, or used, its text is gone at once', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  await requestReset(app, owner.email);
  const first = tokenOf(app, (await outbox(app))[0]!);
  await requestReset(app, owner.email);
  let mails = await outbox(app);
  assert.ok(!mails[0]!.text.includes(first) && !mails[0]!.html.includes(first), 'the replaced link left the outbox');
  const second = tokenOf(app, mails[1]!);
  assert.equal((await confirm(app, second)).statusCode, 204);
  mails = await outbox(app);
  assert.ok(!mails[1]!.text.includes(second) && !mails[1]!.html.includes(second), 'the used link left the outbox');
  assert.match(mails[1]!.text, /used or replaced/);
});

test('a short new password is 422 and does not spend the token', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  await requestReset(app, owner.email);
  const token = tokenOf(app, (await outbox(app))[0]!);

  for (const prefix of ['/v1', '/api/v1']) {
    const short = await confirm(app, token, 'short-1', prefix);
    assertCode(short, 422, 'validation_error');
    assert.deepEqual(short.json().errors.map((e: { loc: unknown[] }) => e.loc), [['body', 'new_password']]);
  }
  // The same rule through GraphQL (no JSON schema in front of the core there).
  const gql = await app.inject({
    method: 'POST',
    url: '/graphql',
    payload: { query: 'mutation($i: ResetPasswordInput!) { resetPassword(input: $i) }', variables: { i: { token, newPassword: 'elevenchars' } } },
  });
  assert.equal(gql.json().errors[0].extensions.code, 'validation_error');
  assert.equal((await tryLogin(app, owner.email, PASSWORD)).statusCode, 200);

  assert.equal((await confirm(app, token, 'twelve-chars', '/api/v1')).statusCode, 204);
  assert.equal((await tryLogin(app, owner.email, 'twelve-chars')).statusCode, 200);
});

test('a reset clears the sign-in lock of the account', async (t) => {
  const app = await build(t, {
    loginThrottle: { delayAfterFailures: 0, maxDelaySeconds: 60, lockAfterFailures: 3, lockSeconds: 900, failureMemorySeconds: 3600 },
  });
  const owner = await seedOwner(app);
  for (let n = 1; n <= 3; n++) await tryLogin(app, owner.email, 'wrong-password-1');
  assertCode(await tryLogin(app, owner.email, PASSWORD), 429, 'account_locked');

  await requestReset(app, owner.email);
  assert.equal((await confirm(app, tokenOf(app, (await outbox(app))[0]!))).statusCode, 204);
  assert.equal((await tryLogin(app, owner.email, NEW_PASSWORD)).statusCode, 200);
});

test('suspended accounts get no mail; mails per account and hour are capped, the answer stays the same', async (t) => {
  const app = await build(t, { passwordReset: { ttlMinutes: 10, mailsPerHour: 2 } });
  const owner = await seedOwner(app);
  const other = await seedOwner(app, undefined, 'Other');
  await sql(app, "update users set status = 'suspended' where id = ?", [other.userId]);

  const suspended = await requestReset(app, other.email);
  assert.equal(suspended.statusCode, 202);
  assert.deepEqual(await outbox(app), []);

  const answers = [];
  for (let n = 0; n < 4; n++) answers.push((await requestReset(app, owner.email)).json());
  for (const answer of answers) assert.deepEqual(answer, suspended.json());
  const mails = await outbox(app);
  assert.equal(mails.length, 2);
  assert.match(mails[1]!.text, /expires in 10 minutes/, 'the newest carries the live link');
  const suppressed = await sql(app, "select id from audit_events where action = 'auth.password_reset_requested' and data like '%too_many_requests%'");
  assert.equal(suppressed.length, 2);
});

test('GraphQL requestPasswordReset and resetPassword; sendResetFor for the administrators\' flow', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const gql = (query: string, variables: Record<string, unknown>) =>
    app.inject({ method: 'POST', url: '/graphql', payload: { query, variables } });

  for (const email of ['ghost@example.com', owner.email]) {
    const res = await gql('mutation($e: String!) { requestPasswordReset(email: $e) }', { e: email });
    assert.deepEqual(res.json(), { data: { requestPasswordReset: true } });
  }
  await app.kernel.worker.drain();
  const token = tokenOf(app, (await outbox(app))[0]!);
  const done = await gql('mutation($i: ResetPasswordInput!) { resetPassword(input: $i) }', { i: { token, newPassword: NEW_PASSWORD } });
  assert.deepEqual(done.json(), { data: { resetPassword: true } });
  const again = await gql('mutation($i: ResetPasswordInput!) { resetPassword(input: $i) }', { i: { token, newPassword: NEW_PASSWORD } });
  assert.equal(again.json().errors[0].extensions.code, 'password_reset_token_invalid');

  // The core method the admin reset-password flow calls (after its own authorization).
  const receipt = await inContext(app.kernel.orm, () =>
    app.domains.identity.passwordReset.sendResetFor(owner.userId, { requestId: 'admin-reset-1', ip: '127.0.0.1', userAgent: null }),
  );
  assert.equal(receipt.userId, owner.userId);
  const mails = await outbox(app);
  assert.equal(mails.length, 2);
  assert.equal((await confirm(app, tokenOf(app, mails[1]!), 'chosen-after-admin-reset')).statusCode, 204);
  assert.equal((await tryLogin(app, owner.email, 'chosen-after-admin-reset')).statusCode, 200);
});
