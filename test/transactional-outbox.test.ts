import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { bearer, build, login, seedOwner, seedUser, sql } from './helper';
import { smtpServer } from './smtp';

/** Makes every insert of an audit entry of `action` fail, as a full disk or a broken audit store would. */
async function breakAudit(app: FastifyInstance, action: string) {
  await sql(
    app,
    `create trigger audit_down before insert on audit_events when new.action = '${action}'
     begin select raise(abort, 'audit store unavailable'); end`,
  );
  return () => sql(app, 'drop trigger audit_down');
}

async function count(app: FastifyInstance, query: string, params: unknown[] = []): Promise<number> {
  const [row] = await sql<{ n: number }>(app, `select count(*) as n from (${query})`, params);
  return Number(row!.n);
}

test('an audited change never loses its audit entry: when the entry cannot be stored the change rolls back, and its mail is neither stored nor sent', async (t) => {
  const smtp = await smtpServer(t);
  const app = await build(t, { smtpUrl: smtp.url });
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  await app.kernel.worker.drain();
  const published: string[] = [];
  app.kernel.events.subscribe('audit.recorded', (event) => published.push(event.action));

  const repair = await breakAudit(app, 'user.deletion_requested');
  const failed = await app.inject({ method: 'POST', url: '/v1/me/deletion', headers: bearer(token) });
  assert.equal(failed.statusCode, 500, failed.body);
  assert.equal(failed.headers['content-type'], 'application/problem+json; charset=utf-8');
  await app.kernel.worker.drain();
  const [user] = await sql<{ deletion_scheduled_for: number | null }>(app, 'select deletion_scheduled_for from users where id = ?', [owner.userId]);
  assert.equal(user!.deletion_scheduled_for, null, 'the deletion was not scheduled');
  assert.equal(await count(app, "select id from mail_outbox where template = 'account_deletion_scheduled'"), 0, 'no mail stored');
  assert.equal(await count(app, "select id from jobs where kind = 'mail.deliver'"), 0, 'no delivery job');
  assert.equal(smtp.received.length, 0, 'no mail sent');
  assert.ok(!published.includes('user.deletion_requested'), 'nothing announced');

  await repair();
  const accepted = await app.inject({ method: 'POST', url: '/v1/me/deletion', headers: bearer(token) });
  assert.equal(accepted.statusCode, 202, accepted.body);
  await app.kernel.worker.drain();
  assert.equal(await count(app, "select id from audit_events where action = 'user.deletion_requested'"), 1);
  assert.equal(await count(app, "select id from mail_outbox where template = 'account_deletion_scheduled' and status = 'sent'"), 1);
  assert.equal(smtp.received.length, 1);
  assert.deepEqual(smtp.received[0]!.to, [owner.email]);
  assert.equal(published.filter((action) => action === 'user.deletion_requested').length, 1);
});

test('a rolled-back change sends no mail: an invitation whose audit entry fails leaves no invitation, no outbox row and no delivery', async (t) => {
  const smtp = await smtpServer(t);
  const app = await build(t, { smtpUrl: smtp.url });
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  const invite = (email: string) =>
    app.inject({ method: 'POST', url: '/v1/admin/invitations', headers: bearer(token), payload: { email, role: 'member' } });

  const repair = await breakAudit(app, 'invitation.created');
  assert.equal((await invite('new@example.com')).statusCode, 500);
  await app.kernel.worker.drain();
  assert.equal(await count(app, 'select id from invitations'), 0);
  assert.equal(await count(app, 'select id from mail_outbox'), 0);
  assert.equal(await count(app, "select id from jobs where kind = 'mail.deliver'"), 0);
  assert.equal(smtp.received.length, 0);

  await repair();
  const created = await invite('new@example.com');
  assert.equal(created.statusCode, 201, created.body);
  await app.kernel.worker.drain();
  assert.equal(await count(app, 'select id from invitations'), 1);
  assert.equal(smtp.received.length, 1);
  assert.deepEqual(smtp.received[0]!.to, ['new@example.com']);
});

test('an announced change has committed: user.changed and session.revoked of a rolled-back suspension are never published', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: ownerToken } = await login(app, owner.email);
  const member = await seedUser(app, owner.companyId);
  await login(app, member.email);
  const memberId = member.userId;

  const events: string[] = [];
  app.kernel.events.subscribe('user.changed', () => events.push('user.changed'));
  app.kernel.events.subscribe('session.revoked', () => events.push('session.revoked'));
  const repair = await breakAudit(app, 'user.suspended');
  const suspend = () =>
    app.inject({ method: 'POST', url: `/v1/admin/users/${memberId}/suspend`, headers: bearer(ownerToken), payload: { reason: 'test' } });
  assert.equal((await suspend()).statusCode, 500);
  assert.deepEqual(events, [], 'nothing announced for a change that rolled back');
  const [row] = await sql<{ status: string }>(app, 'select status from users where id = ?', [memberId]);
  assert.equal(row!.status, 'active');
  assert.equal(await count(app, 'select id from sessions where user_id = ? and revoked_at is null', [memberId]), 1, 'the session lives on');

  await repair();
  assert.equal((await suspend()).statusCode, 200);
  assert.deepEqual(events.sort(), ['session.revoked', 'user.changed']);
});
