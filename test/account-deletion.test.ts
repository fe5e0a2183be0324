import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt } from 'jose';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { bearer, build, createCompanyKey, login, PASSWORD, seedOwner } from './helper';
import { sql } from './totp';
import { hashPassword } from '../src/auth/password';
import { loadConfig } from '../src/config';
import { Company } from '../src/domains/identity/company.entity';
import { User, type Role } from '../src/domains/identity/user.entity';

const DAY_MS = 24 * 3600 * 1000;

function assertCode(res: LightMyRequestResponse, status: number, code: string) {
  assert.equal(res.statusCode, status, res.body);
  assert.ok(String(res.json().type).endsWith(`/errors/${code}`), `expected ${code}, got ${res.body}`);
}

const post = (app: FastifyInstance, url: string, token?: string, payload?: object) =>
  app.inject({ method: 'POST', url, ...(token ? { headers: bearer(token) } : {}), ...(payload ? { payload } : {}) });
const requestDeletion = (app: FastifyInstance, token: string, prefix = '/v1') => post(app, `${prefix}/me/deletion`, token);
const cancelDeletion = (app: FastifyInstance, token: string) =>
  app.inject({ method: 'DELETE', url: '/v1/me/deletion', headers: bearer(token) });
const profile = (app: FastifyInstance, token: string) => app.inject({ url: '/v1/me/profile', headers: bearer(token) });
const loginStatus = async (app: FastifyInstance, email: string) =>
  (await post(app, '/v1/auth/login', undefined, { email, password: PASSWORD })).statusCode;

async function ageSession(app: FastifyInstance, token: string, seconds: number) {
  await sql(app, 'update sessions set authenticated_at = ? where id = ?', [Date.now() - seconds * 1000, decodeJwt(token).sid]);
}

async function mailsTo(app: FastifyInstance, to: string) {
  return sql<{ template: string; text: string }>(app, 'select template, text from mail_outbox where to_address = ? order by created_at, id', [to]);
}

async function addUser(app: FastifyInstance, companyId: string, role: Role) {
  const email = `${role}-${Math.random().toString(36).slice(2)}@example.com`;
  const em = app.kernel.orm.em.fork();
  const user = em.create(User, { company: em.getReference(Company, companyId), email, passwordHash: await hashPassword(PASSWORD, 1024), role });
  await em.flush();
  return { email, userId: user.id };
}

async function scheduledFor(app: FastifyInstance, userId: string): Promise<number | null | undefined> {
  const [row] = await sql<{ deletion_scheduled_for: number | null }>(app, 'select deletion_scheduled_for from users where id = ?', [userId]);
  return row ? (row.deletion_scheduled_for === null ? null : Number(row.deletion_scheduled_for)) : undefined;
}

async function userExists(app: FastifyInstance, userId: string) {
  return (await sql(app, 'select id from users where id = ?', [userId])).length === 1;
}

test('requesting deletion needs an authentication within 5 minutes; then 202 with the date, a mail, and the profile shows it', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);

  await ageSession(app, token, 600);
  assertCode(await requestDeletion(app, token), 403, 'step_up_required');
  assert.equal(await scheduledFor(app, owner.userId), null);
  assert.equal((await profile(app, token)).json().deletion_scheduled_for, null);

  assert.equal((await post(app, '/v1/auth/step-up', token, { password: PASSWORD })).statusCode, 200);
  const before = Date.now();
  const res = await requestDeletion(app, token, '/api/v1');
  assert.equal(res.statusCode, 202, res.body);
  assert.deepEqual(Object.keys(res.json()), ['scheduled_for']);
  const when = Date.parse(res.json().scheduled_for);
  assert.ok(Math.abs(when - (before + 14 * DAY_MS)) < 5000, `scheduled ${res.json().scheduled_for}`);
  assert.equal(await scheduledFor(app, owner.userId), when);
  assert.equal((await profile(app, token)).json().deletion_scheduled_for, new Date(when).toISOString());

  const [mail] = await mailsTo(app, owner.email);
  assert.equal(mail?.template, 'account_deletion_scheduled');
  assert.ok(mail.text.includes(`${app.config.publicUrl}/app/cancel-deletion`), mail.text);
  assert.ok(mail.text.includes(new Date(when).toISOString().slice(0, 16).replace('T', ' ')), mail.text);

  // Asking again answers the same date, without another mail.
  const again = await requestDeletion(app, token);
  assert.equal(again.statusCode, 202);
  assert.equal(Date.parse(again.json().scheduled_for), when);
  assert.equal((await mailsTo(app, owner.email)).length, 1);
  const [{ n }] = await sql<{ n: number }>(app, "select count(*) as n from audit_events where action = 'user.deletion_requested' and target_id = ?", [owner.userId]);
  assert.equal(Number(n), 1);
});

test('DELETE /me/deletion cancels without step-up, mails and audits; with nothing scheduled it is 409', async (t) => {
  const app = await build(t, { accountDeletionGraceDays: 3 });
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  const res = await requestDeletion(app, token);
  assert.ok(Math.abs(Date.parse(res.json().scheduled_for) - (Date.now() + 3 * DAY_MS)) < 5000, 'ACCOUNT_DELETION_GRACE_DAYS honoured');

  await ageSession(app, token, 3600);
  const cancelled = await cancelDeletion(app, token);
  assert.equal(cancelled.statusCode, 204, cancelled.body);
  assert.equal(await scheduledFor(app, owner.userId), null);
  assert.equal((await profile(app, token)).json().deletion_scheduled_for, null);
  assert.deepEqual((await mailsTo(app, owner.email)).map((m) => m.template), ['account_deletion_scheduled', 'account_deletion_cancelled']);
  assertCode(await cancelDeletion(app, token), 409, 'conflict');
  const actions = (await sql<{ action: string }>(app, 'select action from audit_events where target_id = ? order by created_at', [owner.userId])).map((r) => r.action);
  assert.deepEqual(actions.filter((a) => a.startsWith('user.deletion')), ['user.deletion_requested', 'user.deletion_cancelled']);
});

test('executeDue deletes the users whose time has come, and only those', async (t) => {
  const app = await build(t);
  const due = await seedOwner(app, undefined, 'Due Co');
  const cancelled = await seedOwner(app, undefined, 'Cancelled Co');
  const later = await seedOwner(app, undefined, 'Later Co');
  const dueTokens = await login(app, due.email);
  await login(app, due.email); // a second session
  for (const user of [due, cancelled, later]) {
    const { access_token } = await login(app, user.email);
    assert.equal((await requestDeletion(app, access_token)).statusCode, 202);
    if (user === cancelled) assert.equal((await cancelDeletion(app, access_token)).statusCode, 204);
  }
  await sql(app, 'update users set deletion_scheduled_for = ? where id = ?', [Date.now() + 30 * DAY_MS, later.userId]);
  // Warm the credential cache: deletion must end it at once.
  assert.equal((await profile(app, dueTokens.access_token)).statusCode, 200);

  // Not due yet: nothing happens.
  assert.deepEqual(await app.domains.identity.deletion.executeDue(new Date(Date.now() + 13 * DAY_MS)), { deleted: [], blocked: [] });
  assert.ok(await userExists(app, due.userId));

  const run = await app.domains.identity.deletion.executeDue(new Date(Date.now() + 15 * DAY_MS));
  assert.deepEqual(run, { deleted: [due.userId], blocked: [] });
  assert.equal(await userExists(app, due.userId), false);
  assert.ok(await userExists(app, cancelled.userId));
  assert.ok(await userExists(app, later.userId));

  assert.equal(await loginStatus(app, due.email), 401);
  assert.equal(await loginStatus(app, cancelled.email), 200);
  assertCode(await profile(app, dueTokens.access_token), 401, 'token_invalid');
  const refreshed = await post(app, '/v1/auth/refresh', undefined, { refresh_token: dueTokens.refresh_token });
  assertCode(refreshed, 401, 'token_invalid');
  for (const table of ['sessions', 'mfa_recovery_codes', 'one_time_tokens', 'user_identities']) {
    const [{ n }] = await sql<{ n: number }>(app, `select count(*) as n from ${table} where user_id = ?`, [due.userId]);
    assert.equal(Number(n), 0, table);
  }
  const [{ n: tokens }] = await sql<{ n: number }>(app, 'select count(*) as n from refresh_tokens');
  assert.ok(Number(tokens) > 0, 'other users keep their refresh tokens');
  // The company stays: its only user left, nobody was left without an owner.
  assert.equal((await sql(app, 'select id from companies where id = ?', [due.companyId])).length, 1);

  const [audit] = await sql<{ actor_type: string; company_id: string; data: string }>(
    app,
    "select actor_type, company_id, data from audit_events where action = 'user.deleted' and target_id = ?",
    [due.userId],
  );
  assert.ok(audit, 'user.deleted is audited');
  assert.equal(audit.actor_type, 'system');
  assert.equal(audit.company_id, due.companyId);
  const data = JSON.parse(audit.data);
  assert.equal(data.email, due.email);
  assert.equal(data.role, 'owner');
  assert.deepEqual((await mailsTo(app, due.email)).map((m) => m.template), ['account_deletion_scheduled', 'account_deleted']);

  // Idempotent: a second run finds nothing more.
  assert.deepEqual(await app.domains.identity.deletion.executeDue(new Date(Date.now() + 15 * DAY_MS)), { deleted: [], blocked: [] });
});

test('the only owner of a company with other users cannot leave; members can; an owner alone can', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const member = await addUser(app, owner.companyId, 'member');
  const ownerToken = (await login(app, owner.email)).access_token;

  const refused = await requestDeletion(app, ownerToken);
  assertCode(refused, 409, 'conflict');
  assert.equal(refused.json().reason, 'sole_owner');
  assert.equal(await scheduledFor(app, owner.userId), null);

  // Members are free to go; then the owner is no longer needed by anyone.
  const memberToken = (await login(app, member.email)).access_token;
  assert.equal((await requestDeletion(app, memberToken)).statusCode, 202);
  assert.equal((await requestDeletion(app, ownerToken)).statusCode, 202);
  // ...but the owner is held back while the member could still cancel; once the member is gone, the owner goes too.
  await sql(app, 'update users set deletion_scheduled_for = ? where id = ?', [Date.now() + 20 * DAY_MS, member.userId]);
  const held = await app.domains.identity.deletion.executeDue(new Date(Date.now() + 15 * DAY_MS));
  assert.deepEqual(held, { deleted: [], blocked: [owner.userId] });
  assert.ok(await userExists(app, owner.userId));
  const done = await app.domains.identity.deletion.executeDue(new Date(Date.now() + 21 * DAY_MS));
  assert.deepEqual(new Set(done.deleted), new Set([owner.userId, member.userId]));
  assert.equal((await sql(app, 'select id from companies where id = ?', [owner.companyId])).length, 1, 'the company stays');
});

test('with another active owner an owner may leave; if that owner is gone by then, the deletion waits', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const coOwner = await addUser(app, owner.companyId, 'owner');
  const member = await addUser(app, owner.companyId, 'member');
  const ownerToken = (await login(app, owner.email)).access_token;
  assert.equal((await requestDeletion(app, ownerToken)).statusCode, 202);

  // The co-owner cannot now leave too: the member would have no owner.
  const coToken = (await login(app, coOwner.email)).access_token;
  assertCode(await requestDeletion(app, coToken), 409, 'conflict');

  // Demoted before the deletion runs: the deletion is held back, not executed, and can still be cancelled.
  await sql(app, "update users set role = 'member' where id = ?", [coOwner.userId]);
  const run = await app.domains.identity.deletion.executeDue(new Date(Date.now() + 15 * DAY_MS));
  assert.deepEqual(run, { deleted: [], blocked: [owner.userId] });
  assert.ok(await userExists(app, owner.userId));
  assert.ok((await profile(app, ownerToken)).json().deletion_scheduled_for);
  await sql(app, "update users set role = 'owner' where id = ?", [coOwner.userId]);
  assert.deepEqual(await app.domains.identity.deletion.executeDue(new Date(Date.now() + 15 * DAY_MS)), { deleted: [owner.userId], blocked: [] });
  assert.equal(await loginStatus(app, member.email), 200);
});

test('a company API key cannot request or cancel an account deletion', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { key } = await createCompanyKey(app, owner.companyId);
  assertCode(await requestDeletion(app, key), 403, 'forbidden');
  assertCode(await cancelDeletion(app, key), 403, 'forbidden');
  assertCode(await post(app, '/v1/me/deletion'), 401, 'unauthenticated');
  assert.equal((await profile(app, key)).json().deletion_scheduled_for, null);
});

test('GraphQL: requestAccountDeletion needs stepUp; me shows deletionScheduledFor; cancelAccountDeletion clears it', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  const gql = async (query: string, auth = token) =>
    (await app.inject({ method: 'POST', url: '/graphql', headers: bearer(auth), payload: { query } })).json();

  await ageSession(app, token, 600);
  const refused = await gql('mutation { requestAccountDeletion { scheduledFor } }');
  assert.equal(refused.errors[0].extensions.code, 'step_up_required');
  assert.equal(refused.errors[0].extensions.http.status, 403);

  const stepped = await gql(`mutation { stepUp(input: { password: "${PASSWORD}" }) { accessToken } }`);
  assert.equal(stepped.errors, undefined, JSON.stringify(stepped.errors));
  const ok = await gql('mutation { requestAccountDeletion { scheduledFor } }');
  assert.equal(ok.errors, undefined, JSON.stringify(ok.errors));
  const { scheduledFor } = ok.data.requestAccountDeletion;
  assert.ok(Math.abs(Date.parse(scheduledFor) - (Date.now() + 14 * DAY_MS)) < 5000);
  assert.equal((await gql('{ me { user { deletionScheduledFor } } }')).data.me.user.deletionScheduledFor, scheduledFor);

  const cancelled = await gql('mutation { cancelAccountDeletion }');
  assert.equal(cancelled.data.cancelAccountDeletion, true);
  assert.equal((await gql('{ me { user { deletionScheduledFor } } }')).data.me.user.deletionScheduledFor, null);
  assert.equal((await gql('mutation { cancelAccountDeletion }')).errors[0].extensions.code, 'conflict');

  const { key } = await createCompanyKey(app, owner.companyId);
  assert.equal((await gql('mutation { requestAccountDeletion { scheduledFor } }', key)).errors[0].extensions.code, 'forbidden');
});

test('the sweep runs as a recurring job of the server (ACCOUNT_DELETION_INTERVAL_SECONDS)', async (t) => {
  const app = await build(t, { accountDeletionIntervalSeconds: 1 });
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  assert.equal((await requestDeletion(app, token)).statusCode, 202);
  await sql(app, 'update users set deletion_scheduled_for = ? where id = ?', [Date.now() - 1000, owner.userId]);
  const deadline = Date.now() + 5000;
  while (await userExists(app, owner.userId)) {
    assert.ok(Date.now() < deadline, 'the sweep job did not delete the due user');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const [{ n }] = await sql<{ n: number }>(app, "select count(*) as n from audit_events where action = 'user.deleted'");
  assert.equal(Number(n), 1);
});

test('ACCOUNT_DELETION_* defaults: 14 days of grace, a sweep every hour, 0 turns the sweep off', () => {
  const defaults = loadConfig({});
  assert.equal(defaults.accountDeletionGraceDays, 14);
  assert.equal(defaults.accountDeletionIntervalSeconds, 3600);
  const custom = loadConfig({ ACCOUNT_DELETION_GRACE_DAYS: '30', ACCOUNT_DELETION_INTERVAL_SECONDS: '0' });
  assert.equal(custom.accountDeletionGraceDays, 30);
  assert.equal(custom.accountDeletionIntervalSeconds, 0);
  assert.throws(() => loadConfig({ ACCOUNT_DELETION_GRACE_DAYS: '-1' }), /ACCOUNT_DELETION_GRACE_DAYS/);
});
