import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { assertCode, bearer, build, createCompanyKey, login, PASSWORD, seedOwner, sql } from './helper';
import { hashPassword } from '../src/auth/password';
import { Company } from '../src/domains/identity/company.entity';
import { User } from '../src/domains/identity/user.entity';
import type { AuditEvent } from '../src/domains/audit/audit-event.entity';
import { inContext } from '../src/boot';

const NEW_PASSWORD = 'a-brand-new-long-password';
const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

async function seedUser(app: FastifyInstance, companyId: string, role: 'member' | 'admin' | 'owner' = 'member') {
  const email = `${role}-${Math.random().toString(36).slice(2)}@example.com`;
  await inContext(app.kernel.orm, async () => {
    const em = app.kernel.orm.em.fork();
    em.create(User, { company: em.getReference(Company, companyId), email, role, passwordHash: await hashPassword(PASSWORD, 1024) });
    await em.flush();
  });
  return { email, token: (await login(app, email)).access_token };
}

const invite = (app: FastifyInstance, token: string, payload: unknown, prefix = '/v1') =>
  app.inject({ method: 'POST', url: `${prefix}/admin/invitations`, headers: bearer(token), payload: payload as object });

/** The token of the newest invitation mail to `email`, read from the outbox link. */
async function mailedToken(app: FastifyInstance, email: string): Promise<string> {
  await app.kernel.worker.drain();
  const rows = await sql<{ text: string }>(app, "select text from mail_outbox where to_address = ? and template = 'invitation' order by rowid desc", [email]);
  assert.ok(rows[0], `no invitation mail to ${email}`);
  const match = /http:\/\/[^\s]+\/app\/accept-invitation\?token=([A-Za-z0-9_-]+)/.exec(rows[0].text);
  assert.ok(match, rows[0].text);
  return match[1]!;
}

const accept = (app: FastifyInstance, token: string, password = NEW_PASSWORD, extra: Record<string, unknown> = {}) =>
  app.inject({ method: 'POST', url: '/v1/invitations/accept', payload: { token, password, ...extra } });

async function auditActions(app: FastifyInstance, companyId: string, prefix = 'invitation.'): Promise<string[]> {
  const rows = await sql<{ action: string }>(app, 'select action from audit_events where company_id = ? and action like ? order by rowid', [companyId, `${prefix}%`]);
  return rows.map((r) => r.action);
}

test('POST /admin/invitations mails a single-use link, stores only its hash, audits and publishes the event', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app, 'boss@example.com', 'Invite Co');
  const { access_token } = await login(app, owner.email);
  const events: AuditEvent[] = [];
  const stop = app.kernel.events.subscribe('audit.recorded', (e) => events.push(e));
  t.after(stop);

  const res = await invite(app, access_token, { email: '  New.Hire@Example.com ', role: 'admin' });
  assert.equal(res.statusCode, 201, res.body);
  const body = res.json();
  assert.equal(body.email, 'new.hire@example.com');
  assert.equal(body.role, 'admin');
  assert.equal(body.status, 'pending');
  assert.equal(body.company_id, owner.companyId);
  assert.equal(body.invited_by, owner.userId);
  assert.equal(body.accepted_at, null);
  const ttl = Date.parse(body.expires_at) - Date.parse(body.created_at);
  assert.equal(ttl, 7 * 24 * 3600 * 1000);

  const token = await mailedToken(app, 'new.hire@example.com');
  const [mail] = await sql<{ subject: string; html: string }>(app, "select subject, html from mail_outbox where template = 'invitation'");
  assert.match(mail!.subject, /Invite Co/);
  assert.ok(mail!.html.includes(`/app/accept-invitation?token=${token}`));
  const [row] = await sql<{ token_hash: string }>(app, 'select token_hash from invitations where id = ?', [body.id]);
  assert.equal(row!.token_hash, sha256(token));

  // The staging prefix serves the same.
  const staging = await invite(app, access_token, { email: 'second@example.com', role: 'member' }, '/api/v1');
  assert.equal(staging.statusCode, 201, staging.body);

  assert.deepEqual(await auditActions(app, owner.companyId), ['invitation.created', 'invitation.created']);
  assert.deepEqual(events.filter((e) => e.action === 'invitation.created').map((e) => e.targetId), [body.id, staging.json().id]);
  const [audit] = await sql<{ data: string }>(app, "select data from audit_events where action = 'invitation.created' limit 1");
  assert.ok(!String(audit!.data).includes(token), 'the token never reaches the audit log');
});

test('INVITATION_TTL_DAYS sets the lifetime', async (t) => {
  const app = await build(t, { invitationTtlDays: 2 });
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  const body = (await invite(app, access_token, { email: 'ttl@example.com', role: 'member' })).json();
  assert.equal(Date.parse(body.expires_at) - Date.parse(body.created_at), 2 * 24 * 3600 * 1000);
});

test('validation: 422 with loc for a bad address, a bad role, a missing field and an unknown field', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);

  const badEmail = await invite(app, access_token, { email: 'not-an-address', role: 'member' });
  assertCode(badEmail, 422, 'validation_error');
  assert.deepEqual(badEmail.json().errors.map((e: { loc: unknown[] }) => e.loc), [['body', 'email']]);

  const badRole = await invite(app, access_token, { email: 'x@example.com', role: 'superuser' });
  assertCode(badRole, 422, 'validation_error');
  assert.ok(badRole.json().errors.some((e: { loc: unknown[] }) => e.loc.join('.') === 'body.role'), badRole.body);

  const missing = await invite(app, access_token, { email: 'x@example.com' });
  assertCode(missing, 422, 'validation_error');
  assert.ok(missing.json().errors.some((e: { loc: unknown[] }) => e.loc.join('.') === 'body.role'), missing.body);

  const unknown = await invite(app, access_token, { email: 'x@example.com', role: 'member', admin: true });
  assertCode(unknown, 422, 'validation_error');
  assert.ok(unknown.json().errors.some((e: { loc: unknown[]; type: string }) => e.loc.join('.') === 'body.admin' && e.type === 'extra_forbidden'), unknown.body);

  assert.equal((await sql(app, 'select id from invitations')).length, 0);
  assert.equal((await sql(app, "select id from mail_outbox where template = 'invitation'")).length, 0);
});

test('roles: a member gets 403, an admin cannot invite an owner, an owner, an admin and an API key can invite', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const ownerToken = (await login(app, owner.email)).access_token;
  const admin = await seedUser(app, owner.companyId, 'admin');
  const member = await seedUser(app, owner.companyId, 'member');
  const { key } = await createCompanyKey(app, owner.companyId);

  assertCode(await app.inject({ method: 'POST', url: '/v1/admin/invitations', payload: { email: 'a@example.com', role: 'member' } }), 401, 'unauthenticated');
  assertCode(await invite(app, member.token, { email: 'a@example.com', role: 'member' }), 403, 'forbidden');
  assertCode(await app.inject({ url: '/v1/admin/invitations', headers: bearer(member.token) }), 403, 'forbidden');
  assertCode(await invite(app, admin.token, { email: 'a@example.com', role: 'owner' }), 403, 'forbidden');
  assertCode(await invite(app, key, { email: 'a@example.com', role: 'owner' }), 403, 'forbidden');

  assert.equal((await invite(app, admin.token, { email: 'a@example.com', role: 'admin' })).statusCode, 201);
  const byKey = await invite(app, key, { email: 'b@example.com', role: 'member' });
  assert.equal(byKey.statusCode, 201, byKey.body);
  assert.equal(byKey.json().invited_by, null);
  assert.equal((await invite(app, ownerToken, { email: 'c@example.com', role: 'owner' })).statusCode, 201);
});

test('conflicts: an address of a user of the company is 409 email_taken, one with a pending invitation 409 conflict; another company\'s user is invited like anyone (no enumeration across companies)', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const other = await seedOwner(app, 'elsewhere@example.com', 'Other');
  const { access_token } = await login(app, owner.email);

  assertCode(await invite(app, access_token, { email: owner.email.toUpperCase(), role: 'member' }), 409, 'email_taken');
  // An address with an account in another company answers as an unknown one would; the invitee, not the inviter, learns it is taken.
  assert.equal((await invite(app, access_token, { email: 'ELSEWHERE@example.com', role: 'member' })).statusCode, 201);
  assertCode(await accept(app, await mailedToken(app, 'elsewhere@example.com')), 409, 'email_taken');
  assert.equal((await invite(app, access_token, { email: 'dup@example.com', role: 'member' })).statusCode, 201);
  assertCode(await invite(app, access_token, { email: 'dup@example.com', role: 'admin' }), 409, 'conflict');
  // Another company may invite the same address.
  const otherToken = (await login(app, other.email)).access_token;
  assert.equal((await invite(app, otherToken, { email: 'dup@example.com', role: 'member' })).statusCode, 201);
  // Once the pending one expired, a new invitation is fine.
  await sql(app, "update invitations set expires_at = ? where email = 'dup@example.com' and company_id = ?", [Date.now() - 1000, owner.companyId]);
  assert.equal((await invite(app, access_token, { email: 'dup@example.com', role: 'member' })).statusCode, 201);
});

test('an address in another Unicode normal form is the same address: inviting the NFD form of a user\'s NFC address is 409 email_taken; an invitation is stored in NFC', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app, 'j\u00f6hn@example.com');
  const { access_token } = await login(app, owner.email);
  assertCode(await invite(app, access_token, { email: 'jo\u0308hn@example.com', role: 'member' }), 409, 'email_taken');
  const created = await invite(app, access_token, { email: 'RE\u0301MI@example.com', role: 'member' });
  assert.equal(created.statusCode, 201, created.body);
  assert.equal(created.json().email, 'r\u00e9mi@example.com');
  assertCode(await invite(app, access_token, { email: 'r\u00e9mi@example.com', role: 'member' }), 409, 'conflict');
  assert.equal((await accept(app, await mailedToken(app, 'r\u00e9mi@example.com'))).statusCode, 201);
  assert.equal((await login(app, 're\u0301mi@example.com', NEW_PASSWORD)).user.email, 'r\u00e9mi@example.com');
});

test('GET /admin/invitations: envelope, Link header, page edges, status filter (expired computed), company scoped', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const other = await seedOwner(app, undefined, 'Other');
  const { access_token } = await login(app, owner.email);
  const ids: string[] = [];
  for (const n of [1, 2, 3, 4, 5]) ids.push((await invite(app, access_token, { email: `p${n}@example.com`, role: 'member' })).json().id);
  await invite(app, (await login(app, other.email)).access_token, { email: 'theirs@example.com', role: 'member' });
  const list = (query: string) => app.inject({ url: `/v1/admin/invitations${query}`, headers: bearer(access_token) });

  const all = await list('');
  assert.equal(all.statusCode, 200, all.body);
  const envelope = all.json() as { page: number; per_page: number; total: number };
  assert.deepEqual([envelope.page, envelope.per_page, envelope.total], [1, 20, 5]);
  assert.deepEqual(all.json().items.map((i: { id: string }) => i.id), [...ids].reverse(), 'newest first');
  assert.match(String(all.headers.link), /rel="first"/);
  assert.doesNotMatch(String(all.headers.link), /rel="next"/);

  const p2 = await list('?page=2&per_page=2');
  assert.equal(p2.json().items.length, 2);
  assert.equal(p2.json().total, 5);
  const link = String(p2.headers.link);
  assert.match(link, /page=1&per_page=2>; rel="prev"/);
  assert.match(link, /page=3&per_page=2>; rel="next"/);
  assert.match(link, /page=3&per_page=2>; rel="last"/);
  const p3 = await list('?page=3&per_page=2');
  assert.equal(p3.json().items.length, 1);
  assert.doesNotMatch(String(p3.headers.link), /rel="next"/);
  const beyond = await list('?page=9&per_page=2');
  assert.equal(beyond.statusCode, 200);
  assert.deepEqual(beyond.json().items, []);
  assert.equal(beyond.json().total, 5);

  for (const bad of ['?page=0', '?per_page=0', '?per_page=101', '?status=bogus', '?sort=email']) {
    assertCode(await list(bad), 422, 'validation_error');
  }

  // Statuses: one revoked, one expired by time, one accepted.
  assert.equal((await app.inject({ method: 'POST', url: `/v1/admin/invitations/${ids[0]}/revoke`, headers: bearer(access_token) })).statusCode, 200);
  await sql(app, 'update invitations set expires_at = ? where id = ?', [Date.now() - 1000, ids[1]]);
  assert.equal((await accept(app, await mailedToken(app, 'p3@example.com'))).statusCode, 201);

  const byStatus = async (status: string) => (await list(`?status=${status}`)).json();
  assert.deepEqual((await byStatus('revoked')).items.map((i: { id: string }) => i.id), [ids[0]]);
  const expired = await byStatus('expired');
  assert.deepEqual(expired.items.map((i: { id: string; status: string }) => [i.id, i.status]), [[ids[1], 'expired']]);
  assert.deepEqual((await byStatus('accepted')).items.map((i: { id: string }) => i.id), [ids[2]]);
  const pending = await byStatus('pending');
  assert.deepEqual(pending.items.map((i: { id: string }) => i.id), [ids[4], ids[3]]);
  assert.equal(pending.total, 2);
  assert.match(String((await list('?status=pending&per_page=1')).headers.link), /status=pending&per_page=1&page=2>; rel="next"/);
});

test('resend: a new link and expiry, the old link dead; expired ones too; accepted or revoked 409; other company 404', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const other = await seedOwner(app, undefined, 'Other');
  const superadmin = await inContext(app.kernel.orm, () =>
    app.domains.identity.accounts.createCompanyWithOwner({ email: 'ops@example.com', password: PASSWORD, company: 'Platform', superadmin: true }),
  );
  assert.ok(superadmin);
  const { access_token } = await login(app, owner.email);
  const otherToken = (await login(app, other.email)).access_token;
  const member = await seedUser(app, owner.companyId, 'member');
  const admin = await seedUser(app, owner.companyId, 'admin');
  const resend = (id: string, token = access_token) =>
    app.inject({ method: 'POST', url: `/v1/admin/invitations/${id}/resend`, headers: bearer(token) });

  const created = (await invite(app, access_token, { email: 'again@example.com', role: 'member' })).json();
  const first = await mailedToken(app, 'again@example.com');
  await sql(app, 'update invitations set expires_at = ? where id = ?', [Date.now() + 1000, created.id]);

  const res = await resend(created.id);
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().status, 'pending');
  assert.ok(Date.parse(res.json().expires_at) > Date.now() + 6 * 24 * 3600 * 1000);
  const second = await mailedToken(app, 'again@example.com');
  assert.notEqual(second, first);
  assertCode(await accept(app, first), 400, 'invitation_invalid');

  assertCode(await resend(created.id, member.token), 403, 'forbidden');
  assertCode(await resend(created.id, otherToken), 404, 'not_found');
  assertCode(await resend('00000000-0000-4000-8000-000000000000'), 404, 'not_found');
  assertCode(await resend('not-a-uuid'), 422, 'validation_error');
  // A superadmin from elsewhere may.
  assert.equal((await resend(created.id, (await login(app, 'ops@example.com')).access_token)).statusCode, 200);
  const third = await mailedToken(app, 'again@example.com');

  // An expired invitation comes back to life.
  await sql(app, 'update invitations set expires_at = ? where id = ?', [Date.now() - 1000, created.id]);
  assertCode(await accept(app, third), 400, 'invitation_invalid');
  assert.equal((await resend(created.id)).json().status, 'pending');
  const fourth = await mailedToken(app, 'again@example.com');

  // An admin may not resend an owner invitation.
  const ownerInvite = (await invite(app, access_token, { email: 'co-owner@example.com', role: 'owner' })).json();
  assertCode(await resend(ownerInvite.id, admin.token), 403, 'forbidden');

  // Accepted and revoked ones cannot be resent.
  assert.equal((await accept(app, fourth)).statusCode, 201);
  assertCode(await resend(created.id), 409, 'conflict');
  assert.equal((await app.inject({ method: 'POST', url: `/v1/admin/invitations/${ownerInvite.id}/revoke`, headers: bearer(access_token) })).statusCode, 200);
  assertCode(await resend(ownerInvite.id), 409, 'conflict');

  assert.deepEqual(
    await auditActions(app, owner.companyId),
    ['invitation.created', 'invitation.resent', 'invitation.resent', 'invitation.resent', 'invitation.created', 'invitation.accepted', 'invitation.revoked'],
  );
});

test('revoke: pending only; the link stops working; other company 404; member 403', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const other = await seedOwner(app, undefined, 'Other');
  const { access_token } = await login(app, owner.email);
  const member = await seedUser(app, owner.companyId, 'member');
  const { key } = await createCompanyKey(app, owner.companyId);
  const revoke = (id: string, token = access_token) =>
    app.inject({ method: 'POST', url: `/api/v1/admin/invitations/${id}/revoke`, headers: bearer(token) });

  const created = (await invite(app, access_token, { email: 'gone@example.com', role: 'member' })).json();
  const token = await mailedToken(app, 'gone@example.com');
  assertCode(await revoke(created.id, member.token), 403, 'forbidden');
  assertCode(await revoke(created.id, (await login(app, other.email)).access_token), 404, 'not_found');

  const res = await revoke(created.id, key);
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().status, 'revoked');
  assertCode(await accept(app, token), 400, 'invitation_invalid');
  assertCode(await revoke(created.id), 409, 'conflict');

  // An expired one is not pending any more.
  const late = (await invite(app, access_token, { email: 'late@example.com', role: 'member' })).json();
  await sql(app, 'update invitations set expires_at = ? where id = ?', [Date.now() - 1000, late.id]);
  assertCode(await revoke(late.id), 409, 'conflict');

  const [audit] = await sql<{ actor_type: string }>(app, "select actor_type from audit_events where action = 'invitation.revoked'");
  assert.equal(audit!.actor_type, 'api_key');
});

test('an invitation mail keeps its link in the outbox only while the link works: resent, revoked or accepted, its text is gone at once', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  const holds = async (email: string, token: string) =>
    (await sql<{ text: string; html: string }>(app, "select text, html from mail_outbox where to_address = ? and template = 'invitation'", [email])).some((m) => m.text.includes(token) || m.html.includes(token));

  const resent = (await invite(app, access_token, { email: 'resent@example.com', role: 'member' })).json();
  const first = await mailedToken(app, 'resent@example.com');
  assert.equal((await app.inject({ method: 'POST', url: `/v1/admin/invitations/${resent.id}/resend`, headers: bearer(access_token) })).statusCode, 200);
  const second = await mailedToken(app, 'resent@example.com');
  assert.equal(await holds('resent@example.com', first), false, 'the replaced link left the outbox');
  assert.equal(await holds('resent@example.com', second), true, 'the live one stays for the operator');
  assert.equal((await accept(app, second)).statusCode, 201);
  assert.equal(await holds('resent@example.com', second), false, 'the used link left the outbox');

  const revoked = (await invite(app, access_token, { email: 'revoked@example.com', role: 'member' })).json();
  const token = await mailedToken(app, 'revoked@example.com');
  assert.equal((await app.inject({ method: 'POST', url: `/v1/admin/invitations/${revoked.id}/revoke`, headers: bearer(access_token) })).statusCode, 200);
  assert.equal(await holds('revoked@example.com', token), false, 'the revoked link left the outbox');
});

test('bulk: each row is created or fails on its own', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const admin = await seedUser(app, owner.companyId, 'admin');
  const taken = await seedUser(app, owner.companyId, 'member');
  await sql(app, "update users set email = 'taken@example.com' where email = ?", [taken.email]);
  const member = await seedUser(app, owner.companyId, 'member');
  const bulk = (payload: unknown, token = admin.token) =>
    app.inject({ method: 'POST', url: '/v1/admin/invitations/bulk', headers: bearer(token), payload: payload as object });

  const res = await bulk({
    invitations: [
      { email: 'one@example.com', role: 'member' },
      { email: 'taken@example.com', role: 'member' },
      { email: 'not-an-address', role: 'member' },
      { email: 'boss@example.com', role: 'owner' },
      { email: 'ONE@example.com', role: 'admin' },
      { email: 'two@example.com', role: 'admin' },
    ],
  });
  assert.equal(res.statusCode, 201, res.body);
  const body = res.json();
  assert.equal(body.created, 2);
  assert.equal(body.failed, 4);
  assert.deepEqual(
    body.results.map((r: { email: string; status: string; error?: { code: string } }) => [r.email, r.status, r.error?.code ?? null]),
    [
      ['one@example.com', 'created', null],
      ['taken@example.com', 'failed', 'email_taken'],
      ['not-an-address', 'failed', 'validation_error'],
      ['boss@example.com', 'failed', 'forbidden'],
      ['ONE@example.com', 'failed', 'conflict'],
      ['two@example.com', 'created', null],
    ],
  );
  assert.equal(body.results[0].invitation.status, 'pending');
  assert.equal(body.results[1].invitation, undefined);
  assert.match(body.results[2].error.detail, /email/);
  const stored = await sql<{ email: string }>(app, 'select email from invitations order by email');
  assert.deepEqual(stored.map((r) => r.email), ['one@example.com', 'two@example.com']);
  await app.kernel.worker.drain();
  const mails = await sql<{ to_address: string }>(app, "select to_address from mail_outbox where template = 'invitation' order by to_address");
  assert.deepEqual(mails.map((m) => m.to_address), ['one@example.com', 'two@example.com']);
  assert.deepEqual(await auditActions(app, owner.companyId), ['invitation.created', 'invitation.created']);

  assertCode(await bulk({ invitations: [] }), 422, 'validation_error');
  const tooMany = Array.from({ length: 101 }, (_, i) => ({ email: `u${i}@example.com`, role: 'member' }));
  assertCode(await bulk({ invitations: tooMany }), 422, 'validation_error');
  const unknown = await bulk({ invitations: [{ email: 'x@example.com', role: 'member', note: 'hi' }] });
  assertCode(unknown, 422, 'validation_error');
  assert.ok(unknown.json().errors.some((e: { loc: unknown[] }) => e.loc.join('.') === 'body.invitations.0.note'), unknown.body);
  assertCode(await bulk({ invitations: [{ email: 'x@example.com', role: 'member' }] }, member.token), 403, 'forbidden');
  assert.equal((await sql(app, 'select id from invitations')).length, 2);
});

test('legacy POST /admin/users/invite works as before and announces its successor and sunset', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  const member = await seedUser(app, owner.companyId, 'member');

  for (const [prefix, email] of [['/v1', 'legacy@example.com'], ['/api/v1', 'legacy2@example.com']] as const) {
    const res = await app.inject({ method: 'POST', url: `${prefix}/admin/users/invite`, headers: bearer(access_token), payload: { email, role: 'member' } });
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(res.json().email, email);
    assert.equal(res.json().status, 'pending');
    assert.equal(res.headers.deprecation, '@1795305600');
    assert.equal(res.headers.sunset, 'Mon, 01 Mar 2027 00:00:00 GMT');
    // At least 90 days of notice between the deprecation and the sunset (Versioning point 5).
    assert.ok(Date.parse(String(res.headers.sunset)) - 1795305600_000 >= 90 * 24 * 3600 * 1000);
    // The successor under the prefix the client uses.
    assert.equal(res.headers.link, `<${prefix}/admin/invitations>; rel="successor-version"`);
    await mailedToken(app, email);
  }
  // Same rules, same errors (with the headers too).
  const forbidden = await app.inject({ method: 'POST', url: '/v1/admin/users/invite', headers: bearer(member.token), payload: { email: 'x@example.com', role: 'member' } });
  assertCode(forbidden, 403, 'forbidden');
  assert.equal(forbidden.headers.sunset, 'Mon, 01 Mar 2027 00:00:00 GMT');
  assertCode(await app.inject({ method: 'POST', url: '/v1/admin/users/invite', headers: bearer(access_token), payload: { email: 'legacy@example.com', role: 'member' } }), 409, 'conflict');
  // The successor carries no deprecation.
  const modern = await invite(app, access_token, { email: 'modern@example.com', role: 'member' });
  assert.equal(modern.headers.deprecation, undefined);
  assert.equal(modern.headers.sunset, undefined);

  const openapi = (await app.inject({ url: '/openapi.json' })).json();
  assert.equal(openapi.paths['/admin/users/invite']?.post?.deprecated, true);
});

test('accept: creates the user with the role, signs in, and the link cannot be used again', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app, undefined, 'Joinme');
  const { access_token } = await login(app, owner.email);
  const created = (await invite(app, access_token, { email: 'joiner@example.com', role: 'admin' })).json();
  const token = await mailedToken(app, 'joiner@example.com');

  assertCode(await accept(app, token, 'short'), 422, 'validation_error');
  assertCode(await accept(app, 'x'.repeat(43)), 400, 'invitation_invalid');
  const unknownField = await app.inject({ method: 'POST', url: '/v1/invitations/accept', payload: { token, password: NEW_PASSWORD, role: 'owner' } });
  assertCode(unknownField, 422, 'validation_error');

  const res = await accept(app, token, NEW_PASSWORD, { name: '  Joiner  ' });
  assert.equal(res.statusCode, 201, res.body);
  const body = res.json();
  assert.ok(body.access_token && body.refresh_token);
  assert.equal(body.user.email, 'joiner@example.com');
  assert.equal(body.user.role, 'admin');

  const profile = await app.inject({ url: '/v1/me/profile', headers: bearer(body.access_token) });
  assert.equal(profile.statusCode, 200, profile.body);
  assert.equal(profile.json().company.id, owner.companyId);
  assert.equal(profile.json().name, 'Joiner');
  const again = await login(app, 'joiner@example.com', NEW_PASSWORD);
  assert.equal(again.user.role, 'admin');

  assertCode(await accept(app, token), 400, 'invitation_invalid');
  const [row] = await sql<{ status: string; accepted_at: number | null }>(app, 'select status, accepted_at from invitations where id = ?', [created.id]);
  assert.equal(row!.status, 'accepted');
  assert.ok(row!.accepted_at);
  const audits = await sql<{ action: string; actor_id: string }>(app, "select action, actor_id from audit_events where action in ('invitation.accepted', 'user.created_via_invitation') order by rowid");
  assert.deepEqual(audits.map((a) => a.action), ['user.created_via_invitation', 'invitation.accepted']);
  assert.equal(audits[0]!.actor_id, body.user.id);

  // Listed as accepted.
  const listed = (await app.inject({ url: '/v1/admin/invitations?status=accepted', headers: bearer(access_token) })).json();
  assert.equal(listed.items[0].accepted_at !== null, true);
});

test('accept: an expired or revoked invitation is refused; an address that became a user is 409', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  const expired = (await invite(app, access_token, { email: 'exp@example.com', role: 'member' })).json();
  const expiredToken = await mailedToken(app, 'exp@example.com');
  await sql(app, 'update invitations set expires_at = ? where id = ?', [Date.now() - 1000, expired.id]);
  assertCode(await accept(app, expiredToken), 400, 'invitation_invalid');
  // Marked expired by a sweep: same.
  await sql(app, "update invitations set status = 'expired', expires_at = ? where id = ?", [Date.now() + 3600_000, expired.id]);
  assertCode(await accept(app, expiredToken), 400, 'invitation_invalid');

  const revoked = (await invite(app, access_token, { email: 'rev@example.com', role: 'member' })).json();
  const revokedToken = await mailedToken(app, 'rev@example.com');
  await app.inject({ method: 'POST', url: `/v1/admin/invitations/${revoked.id}/revoke`, headers: bearer(access_token) });
  assertCode(await accept(app, revokedToken), 400, 'invitation_invalid');

  await invite(app, access_token, { email: 'race@example.com', role: 'member' });
  const raceToken = await mailedToken(app, 'race@example.com');
  await seedOwner(app, 'race@example.com', 'Elsewhere');
  assertCode(await accept(app, raceToken), 409, 'email_taken');

  assert.equal((await sql(app, "select id from users where email in ('exp@example.com', 'rev@example.com')")).length, 0);
});

test('GraphQL: the same operations, with catalog codes', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  const gql = (query: string, variables: Record<string, unknown> = {}, token?: string) =>
    app.inject({ method: 'POST', url: '/graphql', headers: token ? bearer(token) : {}, payload: { query, variables } });

  const created = await gql(
    'mutation($input: InvitationInput!) { createInvitation(input: $input) { id email role status } }',
    { input: { email: 'gql@example.com', role: 'MEMBER' } },
    access_token,
  );
  assert.equal(created.json().data.createInvitation.status, 'PENDING', created.body);
  const list = await gql('{ invitations(status: PENDING) { items { email } page perPage total } }', {}, access_token);
  assert.deepEqual(list.json().data.invitations, { items: [{ email: 'gql@example.com' }], page: 1, perPage: 20, total: 1 });
  const bad = await gql(
    'mutation($input: AcceptInvitationInput!) { acceptInvitation(input: $input) { accessToken } }',
    { input: { token: 'nope', password: NEW_PASSWORD } },
  );
  assert.equal(bad.json().errors[0].extensions.code, 'invitation_invalid');
  const token = await mailedToken(app, 'gql@example.com');
  const ok = await gql(
    'mutation($input: AcceptInvitationInput!) { acceptInvitation(input: $input) { accessToken user { email role } } }',
    { input: { token, password: NEW_PASSWORD } },
  );
  assert.deepEqual(ok.json().data.acceptInvitation.user, { email: 'gql@example.com', role: 'MEMBER' });
});

test("accepting honours the inviting company's min_password_length policy", async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  const policy = await app.inject({ method: 'PATCH', url: '/v1/admin/security/policy', headers: bearer(access_token), payload: { min_password_length: 30 } });
  assert.equal(policy.statusCode, 200, policy.body);
  assert.equal((await invite(app, access_token, { email: 'long@example.com', role: 'member' })).statusCode, 201);
  const token = await mailedToken(app, 'long@example.com');

  const short = await accept(app, token, 'twenty-one-characters');
  assertCode(short, 422, 'validation_error');
  assert.deepEqual(short.json().errors[0].loc, ['body', 'password']);
  // Refused without spending the invitation: a long enough password still works.
  assert.equal((await accept(app, token, 'a-password-of-at-least-thirty-characters')).statusCode, 201);
});

test('one pending invitation per company and address is kept by the database, and a lapsed one does not block a new one', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const token = (await login(app, owner.email)).access_token;
  const first = await invite(app, token, { email: 'twice@example.com', role: 'member' });
  assert.equal(first.statusCode, 201, first.body);

  // A second pending row written around the service (another process, a script) is refused by the index.
  const [row] = await sql<Record<string, unknown>>(app, 'select * from invitations where id = ?', [first.json().id]);
  await assert.rejects(
    sql(app, 'insert into invitations (id, company_id, email, role, token_hash, status, expires_at, created_at) values (?, ?, ?, ?, ?, ?, ?, ?)', [
      'dup-1', row!.company_id, row!.email, row!.role, 'another-hash', 'pending', Date.now() + 60_000, Date.now(),
    ]),
    /UNIQUE/,
  );
  // Another company may invite the same address.
  const other = await seedOwner(app, undefined, 'Other');
  assert.equal((await invite(app, (await login(app, other.email)).access_token, { email: 'twice@example.com', role: 'member' })).statusCode, 201);

  // Once its link lapses (still marked pending), a new invitation replaces it.
  await sql(app, 'update invitations set expires_at = ? where id = ?', [Date.now() - 1000, first.json().id]);
  const again = await invite(app, token, { email: 'twice@example.com', role: 'admin' });
  assert.equal(again.statusCode, 201, again.body);
  const statuses = await sql<{ status: string }>(app, 'select status from invitations where company_id = ? order by created_at', [row!.company_id]);
  assert.deepEqual(statuses.map((s) => s.status), ['expired', 'pending']);
});

/** A new app with a signed-in owner, and GraphQL as that owner (the answer's JSON, untyped). */
async function signedInOwner(t: Parameters<typeof build>[0]) {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  const gql = async (query: string, variables: Record<string, unknown> = {}) =>
    (await app.inject({ method: 'POST', url: '/graphql', headers: bearer(access_token), payload: { query, variables } })).json();
  return { app, owner, access_token, gql };
}

test('role is one enum in GraphQL: me, adminUsers and createInvitation agree, and REST keeps lower-case roles', async (t) => {
  const { app, access_token, gql } = await signedInOwner(t);

  const me = await gql('{ me { role } adminUsers(role: OWNER) { items { role } } }');
  assert.deepEqual(me.data, { me: { role: 'OWNER' }, adminUsers: { items: [{ role: 'OWNER' }] } }, JSON.stringify(me));

  // The enum as an inline literal and as a variable, on one invitation and in a bulk one.
  const inline = await gql('mutation { createInvitation(input: { email: "inline@example.com", role: MEMBER }) { role } }');
  assert.deepEqual(inline.data, { createInvitation: { role: 'MEMBER' } }, JSON.stringify(inline));
  const bulk = await gql('mutation($input: BulkInvitationInput!) { createInvitations(input: $input) { results { invitation { role } } } }', {
    input: { invitations: [{ email: 'bulk@example.com', role: 'ADMIN' }] },
  });
  assert.deepEqual(bulk.data.createInvitations.results, [{ invitation: { role: 'ADMIN' } }], JSON.stringify(bulk));
  const listed = await gql('{ invitations { items { email role } } }');
  assert.deepEqual(
    listed.data.invitations.items.map((i: { role: string }) => i.role).sort(),
    ['ADMIN', 'MEMBER'],
  );
  // A lower-case string is not a role in GraphQL.
  const asString = await gql('mutation { createInvitation(input: { email: "s@example.com", role: "member" }) { role } }');
  assert.equal(asString.errors?.[0]?.extensions.code, 'bad_request');

  // The role of a user changed over GraphQL reads back the same over REST, lower-case.
  const member = (await gql('{ adminUsers(role: MEMBER) { total } }')).data.adminUsers.total;
  assert.equal(member, 0);
  const viaRest = await app.inject({ method: 'GET', url: '/v1/admin/users?role=owner', headers: bearer(access_token) });
  assert.equal(viaRest.statusCode, 200, viaRest.body);
  assert.deepEqual(viaRest.json().items.map((u: { role: string }) => u.role), ['owner']);
  const restInvite = await invite(app, access_token, { email: 'rest@example.com', role: 'member' });
  assert.equal(restInvite.statusCode, 201, restInvite.body);
  assert.equal(restInvite.json().role, 'member');
  const badQuery = await app.inject({ method: 'GET', url: '/v1/admin/users?role=OWNER', headers: bearer(access_token) });
  assertCode(badQuery, 422, 'validation_error');

  // The REST contract keeps the lower-case values.
  const openapi = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  // The spec names the body (InvitationRequest): the operation refers to it.
  assert.equal(openapi.paths['/admin/invitations'].post.requestBody.content['application/json'].schema.$ref, '#/components/schemas/InvitationRequest');
  const inviteBody = openapi.components.schemas.InvitationRequest;
  assert.deepEqual(inviteBody.properties.role.enum, ['owner', 'admin', 'member']);
  const roleFilter = openapi.paths['/admin/users'].get.parameters.find((p: { name: string }) => p.name === 'role');
  assert.deepEqual(roleFilter.schema.enum, ['owner', 'admin', 'member']);
});

test('validation issues are located per transport: GraphQL at the argument path, REST at the request location', async (t) => {
  const { app, owner, access_token, gql } = await signedInOwner(t);
  const locs = (errors: { loc: unknown[] }[]) => errors.map((e) => e.loc);

  const one = await gql('mutation($input: InvitationInput!) { createInvitation(input: $input) { id } }', {
    input: { email: 'not-an-address', role: 'MEMBER' },
  });
  assert.equal(one.errors[0].extensions.code, 'validation_error');
  assert.deepEqual(locs(one.errors[0].extensions.errors), [['input', 'email']]);
  const rest = await invite(app, access_token, { email: 'not-an-address', role: 'member' });
  assertCode(rest, 422, 'validation_error');
  assert.deepEqual(locs(rest.json().errors), [['body', 'email']]);

  // A null role in a patch is refused by the service: in GraphQL under the input argument.
  const patch = await gql('mutation($id: ID!) { updateAdminUser(userId: $id, input: { role: null }) { role } }', { id: owner.userId });
  assert.deepEqual(locs(patch.errors[0].extensions.errors), [['input', 'role']]);

  // A top-level argument is its own path; REST names the query parameter.
  const sort = await gql('{ adminUsers(sort: "nope") { total } }');
  assert.deepEqual(locs(sort.errors[0].extensions.errors), [['sort']]);
  const restSort = await app.inject({ method: 'GET', url: '/v1/admin/users?sort=nope', headers: bearer(access_token) });
  assertCode(restSort, 422, 'validation_error');
  assert.ok(restSort.json().errors.every((e: { loc: unknown[] }) => e.loc[0] === 'query'), restSort.body);
});

test('statuses are GraphQL enums: adminUsers, invitations and their status filters agree, and REST keeps lower-case statuses', async (t) => {
  const { app, owner, access_token, gql } = await signedInOwner(t);
  const rest = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) =>
    app.inject({ method, url: `/v1${url}`, headers: bearer(access_token), ...(payload ? { payload } : {}) });

  // User statuses: the identity User and the admin AdminUser answer the same enum, and the filter and the patch take it.
  const member = await seedUser(app, owner.companyId);
  const memberId = (await gql('{ adminUsers(role: MEMBER) { items { id } } }')).data.adminUsers.items[0].id as string;
  const me = await gql('{ me { user { status } } adminUsers(status: ACTIVE) { total items { status } } }');
  assert.deepEqual(me.data, { me: { user: { status: 'ACTIVE' } }, adminUsers: { total: 2, items: [{ status: 'ACTIVE' }, { status: 'ACTIVE' }] } }, JSON.stringify(me));
  const suspended = await gql('mutation($id: ID!, $input: AdminUserPatchInput!) { updateAdminUser(userId: $id, input: $input) { status } }', {
    id: memberId,
    input: { status: 'SUSPENDED' },
  });
  assert.deepEqual(suspended.data, { updateAdminUser: { status: 'SUSPENDED' } }, JSON.stringify(suspended));
  const filtered = await gql('{ adminUsers(status: SUSPENDED) { items { id status } } }');
  assert.deepEqual(filtered.data.adminUsers.items, [{ id: memberId, status: 'SUSPENDED' }]);
  // A lower-case string is not a status in GraphQL, as a filter or in a patch.
  assert.equal((await gql('{ adminUsers(status: "suspended") { total } }')).errors?.[0]?.extensions.code, 'bad_request');
  const patchString = await gql(`mutation { updateAdminUser(userId: "${memberId}", input: { status: "active" }) { status } }`);
  assert.equal(patchString.errors?.[0]?.extensions.code, 'bad_request');
  // REST: lower-case in the answer, the query filter and the body; the GraphQL name is refused.
  const restUsers = await rest('GET', '/admin/users?status=suspended');
  assert.equal(restUsers.statusCode, 200, restUsers.body);
  assert.deepEqual(restUsers.json().items.map((u: { email: string; status: string }) => [u.email, u.status]), [[member.email, 'suspended']]);
  assertCode(await rest('GET', '/admin/users?status=SUSPENDED'), 422, 'validation_error');
  const reactivated = await rest('PATCH', `/admin/users/${memberId}`, { status: 'active' });
  assert.equal(reactivated.statusCode, 200, reactivated.body);
  assert.equal(reactivated.json().status, 'active');
  assertCode(await rest('PATCH', `/admin/users/${memberId}`, { status: 'SUSPENDED' }), 422, 'validation_error');

  // Invitation statuses: created, revoked and lapsed over GraphQL, each filtered by its enum value.
  const create = (email: string) => gql(`mutation { createInvitation(input: { email: "${email}", role: MEMBER }) { id status } }`);
  const pending = await create('pending@example.com');
  assert.equal(pending.data.createInvitation.status, 'PENDING', JSON.stringify(pending));
  const revokedId = (await create('revoked@example.com')).data.createInvitation.id as string;
  const revoked = await gql('mutation($id: ID!) { revokeInvitation(id: $id) { status } }', { id: revokedId });
  assert.deepEqual(revoked.data, { revokeInvitation: { status: 'REVOKED' } }, JSON.stringify(revoked));
  const expiredId = (await create('expired@example.com')).data.createInvitation.id as string;
  await sql(app, 'update invitations set expires_at = ? where id = ?', [Date.now() - 1000, expiredId]);
  const byStatus = await gql(
    'query($s: InvitationStatus) { p: invitations(status: PENDING) { items { email status } } r: invitations(status: REVOKED) { items { email status } } ' +
      'e: invitations(status: $s) { items { email status } } a: invitations(status: ACCEPTED) { total } }',
    { s: 'EXPIRED' },
  );
  assert.deepEqual(
    byStatus.data,
    {
      p: { items: [{ email: 'pending@example.com', status: 'PENDING' }] },
      r: { items: [{ email: 'revoked@example.com', status: 'REVOKED' }] },
      e: { items: [{ email: 'expired@example.com', status: 'EXPIRED' }] },
      a: { total: 0 },
    },
    JSON.stringify(byStatus),
  );
  assert.equal((await gql('{ invitations(status: "pending") { total } }')).errors?.[0]?.extensions.code, 'bad_request');

  // A bulk invitation's rows: CREATED or FAILED over GraphQL, created or failed over REST.
  const bulk = await gql('mutation($input: BulkInvitationInput!) { createInvitations(input: $input) { results { email status } } }', {
    input: { invitations: [{ email: 'bulk@example.com', role: 'MEMBER' }, { email: 'pending@example.com', role: 'MEMBER' }] },
  });
  assert.deepEqual(
    bulk.data.createInvitations.results,
    [
      { email: 'bulk@example.com', status: 'CREATED' },
      { email: 'pending@example.com', status: 'FAILED' },
    ],
    JSON.stringify(bulk),
  );
  const restBulk = await rest('POST', '/admin/invitations/bulk', {
    invitations: [
      { email: 'bulk-rest@example.com', role: 'member' },
      { email: 'bulk@example.com', role: 'member' },
    ],
  });
  assert.equal(restBulk.statusCode, 201, restBulk.body);
  assert.deepEqual(restBulk.json().results.map((r: { status: string }) => r.status), ['created', 'failed']);
  assert.equal(restBulk.json().results[0].invitation.status, 'pending');

  // REST invitation statuses: lower-case in the answer and the filter; the GraphQL name is refused.
  const restRevoked = await rest('GET', '/admin/invitations?status=revoked');
  assert.equal(restRevoked.statusCode, 200, restRevoked.body);
  assert.deepEqual(restRevoked.json().items.map((i: { email: string; status: string }) => [i.email, i.status]), [['revoked@example.com', 'revoked']]);
  assert.deepEqual((await rest('GET', '/admin/invitations?status=expired')).json().items.map((i: { status: string }) => i.status), ['expired']);
  assertCode(await rest('GET', '/admin/invitations?status=REVOKED'), 422, 'validation_error');

  // The REST contract keeps the lower-case values.
  const openapi = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  const param = (path: string, name: string) => openapi.paths[path].get.parameters.find((p: { name: string }) => p.name === name).schema.enum;
  assert.deepEqual(param('/admin/users', 'status'), ['active', 'suspended']);
  assert.deepEqual(param('/admin/invitations', 'status'), ['pending', 'accepted', 'revoked', 'expired']);
  // A status cannot be unset: the body offers no null for it (a patch leaves it out to keep it).
  const patchBody = openapi.components.schemas.UserPatchRequest;
  assert.deepEqual(patchBody.properties.status.enum, ['active', 'suspended']);
});
