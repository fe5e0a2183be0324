import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { assertCode, bearer, build, createCompanyKey, login, PASSWORD, seedOwner, sql } from './helper';
import { inContext } from '../src/boot';
import { hashPassword } from '../src/auth/password';
import { User, type Role } from '../src/domains/identity/user.entity';
import { Company } from '../src/domains/identity/company.entity';
import { MfaRecoveryCode } from '../src/domains/identity/mfa-recovery-code.entity';
import type { AuditEvent } from '../src/domains/audit/audit-event.entity';
import { sqlDuring } from './sql-counter';

function assertInvalid(res: LightMyRequestResponse, loc: (string | number)[]) {
  assertCode(res, 422, 'validation_error');
  const errors = res.json().errors as { loc: (string | number)[] }[];
  assert.ok(
    errors.some((e) => JSON.stringify(e.loc) === JSON.stringify(loc)),
    `expected an error at ${JSON.stringify(loc)}: ${res.body}`,
  );
}

let counter = 0;
async function seedUser(
  app: FastifyInstance,
  companyId: string,
  role: Role = 'member',
  extra: { name?: string; email?: string; status?: 'active' | 'suspended' } = {},
) {
  const email = extra.email ?? `${role}-${++counter}-${Math.random().toString(36).slice(2, 8)}@example.com`;
  const id = await inContext(app.kernel.orm, async () => {
    const em = app.kernel.orm.em.fork();
    const user = em.create(User, {
      company: em.getReference(Company, companyId),
      email,
      role,
      name: extra.name ?? null,
      status: extra.status ?? 'active',
      passwordHash: await hashPassword(PASSWORD, 1024),
    });
    await em.flush();
    return user.id;
  });
  return { email, userId: id };
}

async function superadmin(app: FastifyInstance) {
  const email = `ops-${Math.random().toString(36).slice(2, 8)}@example.com`;
  await inContext(app.kernel.orm, () =>
    app.domains.identity.accounts.createCompanyWithOwner({ email, password: PASSWORD, company: 'Platform', superadmin: true }),
  );
  return (await login(app, email)).access_token;
}

const req = (app: FastifyInstance, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, token: string, payload?: unknown) =>
  app.inject({ method, url, headers: bearer(token), ...(payload !== undefined ? { payload: payload as object } : {}) });

async function gql(app: FastifyInstance, token: string, query: string, variables: Record<string, unknown> = {}) {
  const res = await app.inject({ method: 'POST', url: '/graphql', payload: { query, variables }, headers: bearer(token) });
  return res.json() as { data?: Record<string, unknown>; errors?: { extensions: { code: string } }[] };
}

/** Company A: owner, admin, member; company B: owner, member. */
async function setup(app: FastifyInstance) {
  const a = await seedOwner(app, undefined, 'Company A');
  const b = await seedOwner(app, undefined, 'Company B');
  const adminA = await seedUser(app, a.companyId, 'admin');
  const memberA = await seedUser(app, a.companyId, 'member', { name: 'Zelda Quux' });
  const memberB = await seedUser(app, b.companyId, 'member');
  return {
    a,
    b,
    adminA,
    memberA,
    memberB,
    owner: (await login(app, a.email)).access_token,
    ownerB: (await login(app, b.email)).access_token,
    admin: (await login(app, adminA.email)).access_token,
    member: (await login(app, memberA.email)).access_token,
  };
}

test('GET /admin/users: envelope, Link header, pagination edges, filters, sort, validation', async (t) => {
  const app = await build(t);
  const s = await setup(app);
  for (let i = 0; i < 22; i++) await seedUser(app, s.a.companyId, i % 2 ? 'admin' : 'member', { status: i === 0 ? 'suspended' : 'active' });
  // Company A now has 25 users: owner, admin, member and 22 more.

  const first = await req(app, 'GET', '/v1/admin/users', s.owner);
  assert.equal(first.statusCode, 200, first.body);
  const body = first.json();
  assert.equal(body.total, 25);
  assert.equal(body.page, 1);
  assert.equal(body.per_page, 20);
  assert.equal(body.items.length, 20);
  assert.ok(body.items.every((u: { company_id: string; company: { name: string } }) => u.company_id === s.a.companyId && u.company.name === 'Company A'));
  // Default sort: created_at ascending, the owner first.
  assert.equal(body.items[0].id, s.a.userId);
  assert.equal(body.items[0].active_session_count, 1);
  const link1 = String(first.headers.link);
  assert.match(link1, /page=2&per_page=20>; rel="next"/);
  assert.match(link1, /page=2&per_page=20>; rel="last"/);
  assert.doesNotMatch(link1, /rel="prev"/);

  const second = await req(app, 'GET', '/api/v1/admin/users?page=2', s.owner);
  assert.equal(second.json().items.length, 5);
  assert.match(String(second.headers.link), /page=1&per_page=20>; rel="prev"/);
  assert.doesNotMatch(String(second.headers.link), /rel="next"/);

  const beyond = await req(app, 'GET', '/v1/admin/users?page=9&per_page=10', s.owner);
  assert.equal(beyond.statusCode, 200);
  assert.deepEqual(beyond.json().items, []);
  assert.equal(beyond.json().total, 25);
  assert.match(String(beyond.headers.link), /page=3&per_page=10>; rel="prev"/);
  assert.match(String(beyond.headers.link), /page=3&per_page=10>; rel="last"/);

  assertInvalid(await req(app, 'GET', '/v1/admin/users?per_page=0', s.owner), ['query', 'per_page']);
  assertInvalid(await req(app, 'GET', '/v1/admin/users?per_page=101', s.owner), ['query', 'per_page']);
  assertInvalid(await req(app, 'GET', '/v1/admin/users?page=0', s.owner), ['query', 'page']);
  assertInvalid(await req(app, 'GET', '/v1/admin/users?sort=password', s.owner), ['query', 'sort']);
  assertInvalid(await req(app, 'GET', '/v1/admin/users?role=king', s.owner), ['query', 'role']);
  assertInvalid(await req(app, 'GET', '/v1/admin/users?status=gone', s.owner), ['query', 'status']);
  assertInvalid(await req(app, 'GET', '/v1/admin/users?colour=red', s.owner), ['query', 'colour']);
  assertInvalid(await req(app, 'GET', '/v1/admin/users?per_page=100&page=x', s.owner), ['query', 'page']);

  // q: email or name contains, case-insensitive; taken literally.
  const byName = (await req(app, 'GET', '/v1/admin/users?q=QUUX', s.owner)).json();
  assert.deepEqual(byName.items.map((u: { id: string }) => u.id), [s.memberA.userId]);
  const byEmail = (await req(app, 'GET', `/v1/admin/users?q=${encodeURIComponent(s.adminA.email.slice(0, 12).toUpperCase())}`, s.owner)).json();
  assert.deepEqual(byEmail.items.map((u: { id: string }) => u.id), [s.adminA.userId]);
  assert.equal((await req(app, 'GET', '/v1/admin/users?q=%25', s.owner)).json().total, 0);
  // Another company's users never match.
  assert.equal((await req(app, 'GET', `/v1/admin/users?q=${encodeURIComponent(s.memberB.email)}`, s.owner)).json().total, 0);

  const admins = (await req(app, 'GET', '/v1/admin/users?role=admin&per_page=100', s.owner)).json();
  assert.equal(admins.total, 12);
  assert.ok(admins.items.every((u: { role: string }) => u.role === 'admin'));
  const suspended = (await req(app, 'GET', '/v1/admin/users?status=suspended', s.owner)).json();
  assert.equal(suspended.total, 1);

  const byEmailDesc = (await req(app, 'GET', '/v1/admin/users?sort=-email&per_page=100', s.owner)).json();
  const emails = byEmailDesc.items.map((u: { email: string }) => u.email);
  assert.deepEqual(emails, [...emails].sort().reverse());
  const byRole = (await req(app, 'GET', '/v1/admin/users?sort=role&per_page=100', s.owner)).json();
  const rolesSeen = byRole.items.map((u: { role: string }) => u.role);
  assert.deepEqual(rolesSeen, [...rolesSeen].sort());
  for (const key of ['name', 'status', 'last_login_at', '-created_at']) {
    assert.equal((await req(app, 'GET', `/v1/admin/users?sort=${key}`, s.owner)).statusCode, 200, key);
  }

  // Who may: an admin and a company API key yes; a member no; a stranger's company_id is 404.
  assert.equal((await req(app, 'GET', '/v1/admin/users', s.admin)).json().total, 25);
  const { key } = await createCompanyKey(app, s.a.companyId);
  assert.equal((await req(app, 'GET', '/v1/admin/users', key)).json().total, 25);
  assertCode(await req(app, 'GET', '/v1/admin/users', s.member), 403, 'forbidden');
  assertCode(await app.inject({ method: 'GET', url: '/v1/admin/users' }), 401, 'unauthenticated');
  assertCode(await req(app, 'GET', `/v1/admin/users?company_id=${s.b.companyId}`, s.owner), 404, 'not_found');
  assert.equal((await req(app, 'GET', `/v1/admin/users?company_id=${s.a.companyId}`, s.owner)).json().total, 25);

  // A superadmin sees every company, or one.
  const ops = await superadmin(app);
  assert.equal((await req(app, 'GET', '/v1/admin/users?per_page=100', ops)).json().total, 25 + 2 + 1);
  const onlyB = (await req(app, 'GET', `/v1/admin/users?company_id=${s.b.companyId}`, ops)).json();
  assert.equal(onlyB.total, 2);
  assert.ok(onlyB.items.every((u: { company: { name: string } }) => u.company.name === 'Company B'));

  // GraphQL: the same rules.
  const bad = await gql(app, s.owner, '{ adminUsers(sort: "nope") { total } }');
  assert.equal(bad.errors?.[0]?.extensions.code, 'validation_error');
  const tooMany = await gql(app, s.owner, '{ adminUsers(perPage: 101) { total } }');
  assert.equal(tooMany.errors?.[0]?.extensions.code, 'validation_error');
  const ok = await gql(app, s.owner, '{ adminUsers(role: OWNER) { total items { id companyId company { name } } } }');
  assert.deepEqual(ok.data?.adminUsers, { total: 1, items: [{ id: s.a.userId, companyId: s.a.companyId, company: { name: 'Company A' } }] });
  assert.equal((await gql(app, s.member, '{ adminUsers { total } }')).errors?.[0]?.extensions.code, 'forbidden');
});

test('q finds a name or email case-insensitively beyond ASCII (typed exactly, upper or lower case), however it was written; REST and GraphQL alike', async (t) => {
  const app = await build(t);
  const s = await setup(app);
  // Each way a name or an email is written: created, renamed by its user, renamed by an admin, a confirmed email change.
  const emile = await seedUser(app, s.a.companyId, 'member', { name: 'Émile Zola', email: 'jörg.straße@example.com' });
  assert.equal((await req(app, 'PATCH', '/v1/me/profile', s.member, { name: 'Ödön Über' })).statusCode, 200);
  assert.equal((await req(app, 'PATCH', `/v1/admin/users/${s.adminA.userId}`, s.owner, { name: 'ÇAĞLAR Şen' })).statusCode, 200);
  const fresh = (await login(app, s.a.email)).access_token;
  assert.equal((await req(app, 'POST', '/v1/me/email', fresh, { new_email: 'ÜNAL@Example.com' })).statusCode, 202);
  const [mail] = await sql<{ text: string }>(app, "select text from mail_outbox where to_address = 'ünal@example.com' and template = 'email_verification'");
  const link = /token=([A-Za-z0-9_-]+)/.exec(mail!.text)![1]!;
  assert.equal((await app.inject({ method: 'POST', url: '/v1/me/email/confirm', payload: { token: link } })).statusCode, 204);

  const cases: [string, string[]][] = [
    ['Émile', [emile.userId]],
    ['ÉMILE ZOLA', [emile.userId]],
    ['émile', [emile.userId]],
    ['ödön über', [s.memberA.userId]],
    ['ÖDÖN', [s.memberA.userId]],
    ['çağlar şen', [s.adminA.userId]],
    ['Çağlar', [s.adminA.userId]],
    // Full case folding: ß and SS are one.
    ['STRASSE@', [emile.userId]],
    ['Straße', [emile.userId]],
    ['Ünal@', [s.a.userId]],
    ['ünal@EXAMPLE', [s.a.userId]],
    // Taken literally: _ and % are no wildcards.
    ['z_la', []],
    ['%', []],
  ];
  // The session from before the change (no later sign-in writes the user again).
  const token = s.owner;
  for (const [q, ids] of cases) {
    const rest = await req(app, 'GET', `/v1/admin/users?q=${encodeURIComponent(q)}`, token);
    assert.equal(rest.statusCode, 200, rest.body);
    assert.deepEqual(rest.json().items.map((u: { id: string }) => u.id), ids, `REST q=${q}`);
    const graphql = await gql(app, token, 'query ($q: String) { adminUsers(q: $q) { items { id } } }', { q });
    assert.deepEqual((graphql.data?.adminUsers as { items: { id: string }[] }).items.map((u) => u.id), ids, `GraphQL q=${q}`);
  }
  // The old address no longer matches.
  assert.equal((await req(app, 'GET', `/v1/admin/users?q=${encodeURIComponent(s.a.email)}`, token)).json().total, 0);
});

test('sort=name is case-insensitive: by the folded name, then the name, then the id; REST and GraphQL alike', async (t) => {
  const app = await build(t);
  const s = await setup(app);
  for (const name of ['Zed', 'bob', 'Émile Zola', 'alpha', 'ALPHA']) await seedUser(app, s.b.companyId, 'member', { name });
  // Company B's members: one without a name (first, as before), then case-insensitively.
  const expected = [null, 'ALPHA', 'alpha', 'bob', 'Zed', 'Émile Zola'];
  const names = async (sort: string) => {
    const rest = (await req(app, 'GET', `/v1/admin/users?role=member&sort=${sort}`, s.ownerB)).json();
    const graphql = await gql(app, s.ownerB, `{ adminUsers(role: MEMBER, sort: "${sort}") { items { name } } }`);
    const viaGraphql = (graphql.data?.adminUsers as { items: { name: string | null }[] }).items.map((u) => u.name);
    const viaRest = rest.items.map((u: { name: string | null }) => u.name);
    assert.deepEqual(viaGraphql, viaRest, sort);
    return viaRest;
  };
  assert.deepEqual(await names('name'), expected);
  assert.deepEqual(await names('-name'), [...expected].reverse());
});

test('GET and PATCH /admin/users/{id}: body, validation, cross-company 404, superadmin, audit and events', async (t) => {
  const app = await build(t);
  const s = await setup(app);
  const audited: AuditEvent[] = [];
  const changed: string[] = [];
  const stopAudit = app.kernel.events.subscribe('audit.recorded', (e) => audited.push(e));
  const stopChanged = app.kernel.events.subscribe('user.changed', ({ userId }) => changed.push(userId));
  t.after(() => {
    stopAudit();
    stopChanged();
  });

  const got = await req(app, 'GET', `/v1/admin/users/${s.memberA.userId}`, s.admin);
  assert.equal(got.statusCode, 200, got.body);
  const user = got.json();
  assert.equal(user.id, s.memberA.userId);
  assert.equal(user.email, s.memberA.email);
  assert.equal(user.name, 'Zelda Quux');
  assert.equal(user.role, 'member');
  assert.equal(user.status, 'active');
  assert.equal(user.mfa_enabled, false);
  assert.equal(user.is_superadmin, false);
  assert.deepEqual(user.company, { id: s.a.companyId, name: 'Company A' });
  assert.equal(user.active_session_count, 1);
  assert.ok(user.last_login_at);
  assert.equal(user.password_hash, undefined);

  // Another company's user, or an unknown id, is absent; a malformed id fails validation.
  const foreign = await req(app, 'GET', `/v1/admin/users/${s.memberB.userId}`, s.owner);
  assertCode(foreign, 404, 'not_found');
  assert.ok(!foreign.body.includes(s.memberB.email));
  assertCode(await req(app, 'PATCH', `/v1/admin/users/${s.memberB.userId}`, s.owner, { name: 'x' }), 404, 'not_found');
  assertCode(await req(app, 'GET', `/v1/admin/users/${randomUUID()}`, s.owner), 404, 'not_found');
  // UUIDs are case-insensitive: an upper-cased id names the same user, and another company's stays hidden.
  assert.equal((await req(app, 'GET', `/v1/admin/users/${s.memberA.userId.toUpperCase()}`, s.admin)).json().id, s.memberA.userId);
  assertCode(await req(app, 'GET', `/v1/admin/users/${s.memberB.userId.toUpperCase()}`, s.owner), 404, 'not_found');
  assertInvalid(await req(app, 'GET', '/v1/admin/users/not-a-uuid', s.owner), ['path', 'user_id']);
  assertCode(await req(app, 'GET', `/v1/admin/users/${s.memberA.userId}`, s.member), 403, 'forbidden');
  assertCode(await req(app, 'PATCH', `/v1/admin/users/${s.adminA.userId}`, s.member, { name: 'x' }), 403, 'forbidden');
  const ops = await superadmin(app);
  assert.equal((await req(app, 'GET', `/v1/admin/users/${s.memberB.userId}`, ops)).json().email, s.memberB.email);
  assert.equal((await gql(app, s.owner, 'query($id: ID!) { adminUser(userId: $id) { id } }', { id: s.memberB.userId })).errors?.[0]?.extensions.code, 'not_found');

  // PATCH: validation.
  const url = `/v1/admin/users/${s.memberA.userId}`;
  assertInvalid(await req(app, 'PATCH', url, s.owner, { name: 'ok', colour: 'red' }), ['body', 'colour']);
  assertInvalid(await req(app, 'PATCH', url, s.owner, { role: 'king' }), ['body', 'role']);
  assertInvalid(await req(app, 'PATCH', url, s.owner, { status: 'deleted' }), ['body', 'status']);
  assertInvalid(await req(app, 'PATCH', url, s.owner, { name: '   ' }), ['body', 'name']);
  assertCode(await req(app, 'PATCH', url, s.owner, {}), 422, 'validation_error');
  assertInvalid(
    (await app.inject({ method: 'PATCH', url, headers: { ...bearer(s.owner), 'content-type': 'application/json' }, payload: 'null' })),
    ['body'],
  );

  // PATCH: name and role; only changes are audited; user.changed published.
  audited.length = 0;
  const patched = await req(app, 'PATCH', url, s.admin, { name: ' Zelda Q. ', role: 'admin' });
  assert.equal(patched.statusCode, 200, patched.body);
  assert.equal(patched.json().name, 'Zelda Q.');
  assert.equal(patched.json().role, 'admin');
  const updated = audited.filter((e) => e.action === 'user.updated');
  assert.equal(updated.length, 1);
  assert.deepEqual(updated[0]!.data?.fields, ['name', 'role']);
  assert.deepEqual((updated[0]!.data?.changes as Record<string, unknown>).role, { from: 'member', to: 'admin' });
  assert.equal(updated[0]!.companyId, s.a.companyId);
  assert.equal(updated[0]!.actorId, s.adminA.userId);
  assert.equal(updated[0]!.targetId, s.memberA.userId);
  assert.ok(changed.includes(s.memberA.userId));
  // The cached credential of the user changed: their token now carries the new role.
  assert.equal((await req(app, 'GET', '/v1/admin/users', s.member)).statusCode, 200);
  // Same values again: nothing to write, nothing audited.
  audited.length = 0;
  assert.equal((await req(app, 'PATCH', url, s.owner, { name: 'Zelda Q.' })).statusCode, 200);
  assert.equal(audited.length, 0);
  // A superadmin may edit across companies.
  assert.equal((await req(app, 'PATCH', `/api/v1/admin/users/${s.memberB.userId}`, ops, { name: 'Set by ops' })).json().name, 'Set by ops');
  const rows = await sql<{ company_id: string }>(app, "select company_id from audit_events where action = 'user.updated' and target_id = ?", [s.memberB.userId]);
  assert.deepEqual(rows.map((r) => r.company_id), [s.b.companyId]);

  // GraphQL: updateAdminUser; a null role is not "unchanged".
  const viaGql = await gql(app, s.owner, 'mutation($id: ID!) { updateAdminUser(userId: $id, input: { name: null }) { name } }', { id: s.memberA.userId });
  assert.deepEqual(viaGql.data?.updateAdminUser, { name: null });
  const nullRole = await gql(app, s.owner, 'mutation($id: ID!) { updateAdminUser(userId: $id, input: { role: null }) { role } }', { id: s.memberA.userId });
  assert.equal(nullRole.errors?.[0]?.extensions.code, 'validation_error');
  // An empty patch is refused on both surfaces alike, and audits nothing.
  const updates = (await sql(app, "select 1 from audit_events where action = 'user.updated'")).length;
  const empty = await gql(app, s.owner, 'mutation($id: ID!) { updateAdminUser(userId: $id, input: {}) { name } }', { id: s.memberA.userId });
  assert.equal(empty.errors?.[0]?.extensions.code, 'validation_error');
  assertInvalid(await req(app, 'PATCH', `/v1/admin/users/${s.memberA.userId}`, s.owner, {}), ['body']);
  assert.equal((await sql(app, "select 1 from audit_events where action = 'user.updated'")).length, updates);
});

test('role rules: admin vs owner, last owner, self, granting owner', async (t) => {
  const app = await build(t);
  const s = await setup(app);
  const ownerUrl = `/v1/admin/users/${s.a.userId}`;
  const memberUrl = `/v1/admin/users/${s.memberA.userId}`;
  const { key } = await createCompanyKey(app, s.a.companyId);

  // 1. An admin (or company API key) cannot change, suspend or delete an owner (nor act on them otherwise).
  for (const token of [s.admin, key]) {
    assertCode(await req(app, 'PATCH', ownerUrl, token, { name: 'x' }), 403, 'forbidden');
    assertCode(await req(app, 'PATCH', ownerUrl, token, { role: 'member' }), 403, 'forbidden');
    assertCode(await req(app, 'POST', `${ownerUrl}/suspend`, token, { reason: 'no' }), 403, 'forbidden');
    assertCode(await req(app, 'DELETE', ownerUrl, token), 403, 'forbidden');
    assertCode(await req(app, 'POST', `${ownerUrl}/force-logout`, token), 403, 'forbidden');
    assertCode(await req(app, 'POST', `${ownerUrl}/reset-password`, token), 403, 'forbidden');
    assertCode(await req(app, 'POST', `${ownerUrl}/unsuspend`, token), 403, 'forbidden');
    assertCode(await req(app, 'POST', `${ownerUrl}/disable-mfa`, token), 403, 'forbidden');
  }
  // ...but may still read them.
  assert.equal((await req(app, 'GET', ownerUrl, s.admin)).statusCode, 200);

  // 4. Only an owner grants the owner role.
  assertCode(await req(app, 'PATCH', memberUrl, s.admin, { role: 'owner' }), 403, 'forbidden');
  assertCode(await req(app, 'PATCH', memberUrl, key, { role: 'owner' }), 403, 'forbidden');
  assertCode(await req(app, 'PATCH', `/v1/admin/users/${s.adminA.userId}`, s.admin, { role: 'owner' }), 403, 'forbidden');
  // An admin may still move people between member and admin.
  assert.equal((await req(app, 'PATCH', memberUrl, s.admin, { role: 'admin' })).json().role, 'admin');
  assert.equal((await req(app, 'PATCH', memberUrl, s.admin, { role: 'member' })).json().role, 'member');

  // 3. Nobody deletes or suspends themselves.
  assertCode(await req(app, 'DELETE', `/v1/admin/users/${s.adminA.userId}`, s.admin), 403, 'forbidden');
  assertCode(await req(app, 'POST', `/v1/admin/users/${s.adminA.userId}/suspend`, s.admin, { reason: 'me' }), 403, 'forbidden');
  assertCode(await req(app, 'PATCH', `/v1/admin/users/${s.adminA.userId}`, s.admin, { status: 'suspended' }), 403, 'forbidden');

  // 2. Nobody removes, suspends or demotes the last (active) owner, not even a superadmin.
  const ops = await superadmin(app);
  assertCode(await req(app, 'PATCH', ownerUrl, s.owner, { role: 'admin' }), 409, 'conflict');
  assertCode(await req(app, 'DELETE', ownerUrl, ops), 409, 'conflict');
  assertCode(await req(app, 'POST', `${ownerUrl}/suspend`, ops, { reason: 'ops' }), 409, 'conflict');
  assertCode(await req(app, 'PATCH', ownerUrl, ops, { status: 'suspended' }), 409, 'conflict');
  assertCode(await req(app, 'DELETE', ownerUrl, s.owner), 403, 'forbidden');
  assert.equal((await req(app, 'GET', ownerUrl, s.owner)).json().role, 'owner');

  // The owner grants owner; then the first owner may step down, and the second is the last again.
  const promoted = await req(app, 'PATCH', memberUrl, s.owner, { role: 'owner' });
  assert.equal(promoted.json().role, 'owner', promoted.body);
  // A suspended second owner does not count as the remaining owner.
  assert.equal((await req(app, 'POST', `${memberUrl}/suspend`, s.owner, { reason: 'vacation' })).statusCode, 200);
  assertCode(await req(app, 'PATCH', ownerUrl, s.owner, { role: 'member' }), 409, 'conflict');
  assert.equal((await req(app, 'POST', `${memberUrl}/unsuspend`, s.owner)).statusCode, 200);
  const steppedDown = await req(app, 'PATCH', ownerUrl, s.owner, { role: 'admin' });
  assert.equal(steppedDown.statusCode, 200, steppedDown.body);
  assert.equal(steppedDown.json().role, 'admin');
  const newOwner = (await login(app, s.memberA.email)).access_token;
  assertCode(await req(app, 'PATCH', memberUrl, newOwner, { role: 'member' }), 409, 'conflict');
  // The superadmin has an owner's rights everywhere: grants owner, deletes an owner who is not the last.
  assert.equal((await req(app, 'PATCH', ownerUrl, ops, { role: 'owner' })).json().role, 'owner');
  assert.equal((await req(app, 'DELETE', ownerUrl, ops)).statusCode, 204);
});

test('suspend and unsuspend: sessions end, login refused, throttle cleared; audited', async (t) => {
  const app = await build(t);
  const s = await setup(app);
  const url = `/v1/admin/users/${s.memberA.userId}`;

  assertInvalid(await req(app, 'POST', `${url}/suspend`, s.owner, {}), ['body', 'reason']);
  assertInvalid(await req(app, 'POST', `${url}/suspend`, s.owner, { reason: '' }), ['body', 'reason']);
  assertInvalid(await req(app, 'POST', `${url}/suspend`, s.owner, { reason: 'x'.repeat(501) }), ['body', 'reason']);
  assertInvalid(await req(app, 'POST', `${url}/suspend`, s.owner, { reason: 'ok', until: 'never' }), ['body', 'until']);
  assertCode(await req(app, 'POST', `/v1/admin/users/${s.memberB.userId}/suspend`, s.owner, { reason: 'x' }), 404, 'not_found');
  assertCode(await req(app, 'POST', `${url}/suspend`, s.member, { reason: 'x' }), 403, 'forbidden');
  assert.equal((await req(app, 'GET', '/v1/me/profile', s.member)).statusCode, 200);

  const suspended = await req(app, 'POST', `${url}/suspend`, s.admin, { reason: 'Left the team' });
  assert.equal(suspended.statusCode, 200, suspended.body);
  assert.equal(suspended.json().status, 'suspended');
  assert.equal(suspended.json().active_session_count, 0);
  // The session ended at once; login is refused with a clear problem.
  assertCode(await req(app, 'GET', '/v1/me/profile', s.member), 401, 'token_invalid');
  const refused = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: s.memberA.email, password: PASSWORD } });
  assertCode(refused, 403, 'account_suspended');
  assert.match(refused.json().detail, /suspended/);
  const [row] = await sql<{ data: string; actor_id: string }>(app, "select data, actor_id from audit_events where action = 'user.suspended'");
  assert.equal(JSON.parse(row!.data).reason, 'Left the team');
  assert.equal(row!.actor_id, s.adminA.userId);

  // Failed logins meanwhile are forgotten on unsuspend.
  await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: s.memberA.email, password: 'wrong-password-1' } });
  assert.equal((await sql(app, 'select * from login_throttles')).length, 1);
  const back = await req(app, 'POST', `${url}/unsuspend`, s.admin);
  assert.equal(back.statusCode, 200, back.body);
  assert.equal(back.json().status, 'active');
  assert.equal((await sql(app, 'select * from login_throttles')).length, 0);
  await login(app, s.memberA.email);
  assert.equal((await sql(app, "select * from audit_events where action = 'user.unsuspended'")).length, 1);

  // GraphQL and PATCH status do the same.
  const viaGql = await gql(app, s.owner, 'mutation($id: ID!) { suspendUser(userId: $id, reason: "again") { status activeSessionCount } }', { id: s.memberA.userId });
  assert.deepEqual(viaGql.data?.suspendUser, { status: 'SUSPENDED', activeSessionCount: 0 });
  assert.equal((await req(app, 'PATCH', url, s.owner, { status: 'active' })).json().status, 'active');
  const token = (await login(app, s.memberA.email)).access_token;
  assert.equal((await req(app, 'PATCH', url, s.owner, { status: 'suspended' })).json().status, 'suspended');
  assertCode(await req(app, 'GET', '/v1/me/profile', token), 401, 'token_invalid');
});

test('DELETE /admin/users/{id}: 204, sessions and API keys end at once, history kept', async (t) => {
  const app = await build(t);
  const s = await setup(app);
  const revokedSessions: string[] = [];
  const revokedKeys: string[] = [];
  const stops = [
    app.kernel.events.subscribe('session.revoked', ({ userId }) => revokedSessions.push(userId)),
    app.kernel.events.subscribe('api_key.revoked', ({ keyId }) => revokedKeys.push(keyId)),
  ];
  t.after(() => stops.forEach((stop) => stop()));
  const second = (await login(app, s.adminA.email)).access_token;
  const { key, id: keyId } = await createCompanyKey(app, s.a.companyId, 'made by the admin');
  const { key: otherKey } = await createCompanyKey(app, s.a.companyId, 'made by the owner');
  await sql(app, 'update api_keys set created_by_id = ? where id = ?', [s.adminA.userId, keyId]);
  assert.equal((await req(app, 'GET', '/v1/admin/users', key)).statusCode, 200);
  assert.equal((await req(app, 'GET', '/v1/admin/users', s.admin)).statusCode, 200);

  assertCode(await req(app, 'DELETE', `/v1/admin/users/${s.memberB.userId}`, s.owner), 404, 'not_found');
  assertCode(await req(app, 'DELETE', `/v1/admin/users/${s.adminA.userId}`, s.member), 403, 'forbidden');

  const deleted = await req(app, 'DELETE', `/v1/admin/users/${s.adminA.userId}`, s.owner);
  assert.equal(deleted.statusCode, 204, deleted.body);
  assert.equal(deleted.body, '');
  // At once: both sessions and the key the user created; the owner's key keeps working.
  assertCode(await req(app, 'GET', '/v1/me/profile', s.admin), 401, 'token_invalid');
  assertCode(await req(app, 'GET', '/v1/me/profile', second), 401, 'token_invalid');
  assert.equal((await req(app, 'GET', '/v1/admin/users', key)).statusCode, 401);
  assert.equal((await req(app, 'GET', '/v1/admin/users', otherKey)).statusCode, 200);
  assert.deepEqual(revokedSessions, [s.adminA.userId, s.adminA.userId]);
  assert.deepEqual(revokedKeys, [keyId]);
  const [keyRow] = await sql<{ revoked_at: unknown; created_by_id: string | null }>(app, 'select revoked_at, created_by_id from api_keys where id = ?', [keyId]);
  assert.ok(keyRow!.revoked_at);
  assertCode(await req(app, 'GET', `/v1/admin/users/${s.adminA.userId}`, s.owner), 404, 'not_found');
  assertCode(await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: s.adminA.email, password: PASSWORD } }), 401, 'invalid_credentials');
  const [audit] = await sql<{ data: string; company_id: string }>(app, "select data, company_id from audit_events where action = 'user.deleted'");
  assert.equal(audit!.company_id, s.a.companyId);
  assert.deepEqual(JSON.parse(audit!.data), { email: s.adminA.email, role: 'admin', revokedSessions: 2, revokedApiKeys: [keyId] });
  // The history of the user stays.
  assert.ok((await sql(app, "select * from audit_events where actor_id = ? and action = 'auth.login'", [s.adminA.userId])).length >= 1);
  // GraphQL delete.
  const viaGql = await gql(app, s.owner, 'mutation($id: ID!) { deleteAdminUser(userId: $id) }', { id: s.memberA.userId });
  assert.equal(viaGql.data?.deleteAdminUser, true);
});

test('reset-password (one audit entry), force-logout, disable-mfa and sessions of a user; every mutation on the audit bus', async (t) => {
  const app = await build(t);
  const s = await setup(app);
  const actions: string[] = [];
  const stop = app.kernel.events.subscribe('audit.recorded', (e) => {
    if (e.action.startsWith('user.')) actions.push(e.action);
  });
  t.after(stop);
  const url = `/v1/admin/users/${s.memberA.userId}`;

  // Sessions: the envelope with the Link header.
  const secondSession = (await login(app, s.memberA.email)).access_token;
  const sessions = await req(app, 'GET', `${url}/sessions?per_page=1`, s.admin);
  assert.equal(sessions.statusCode, 200, sessions.body);
  assert.equal(sessions.json().total, 2);
  assert.equal(sessions.json().per_page, 1);
  assert.equal(sessions.json().items.length, 1);
  assert.equal(sessions.json().items[0].current, false);
  assert.match(String(sessions.headers.link), /per_page=1&page=2>; rel="next"/);
  assertInvalid(await req(app, 'GET', `${url}/sessions?per_page=101`, s.admin), ['query', 'per_page']);
  assertCode(await req(app, 'GET', `/v1/admin/users/${s.memberB.userId}/sessions`, s.owner), 404, 'not_found');
  assertCode(await req(app, 'GET', `${url}/sessions`, s.member), 403, 'forbidden');
  const own = (await req(app, 'GET', `/v1/admin/users/${s.a.userId}/sessions`, s.owner)).json();
  assert.equal(own.items[0].current, true);

  // Reset password: the reset mail goes out.
  const reset = await req(app, 'POST', `${url}/reset-password`, s.admin);
  assert.equal(reset.statusCode, 200, reset.body);
  assert.equal(reset.json().user_id, s.memberA.userId);
  assert.equal(reset.json().sent, true);
  assert.ok(Date.parse(reset.json().expires_at) > Date.now());
  const mails = await sql<{ template: string; to_address?: string }>(app, "select * from mail_outbox where template = 'password_reset'");
  assert.equal(mails.length, 1);
  // One action, one audit entry: the admin's, not also the public flow's request.
  const entries = await sql<{ action: string }>(app, "select action from audit_events where target_id = ? and action like '%password_reset%'", [s.memberA.userId]);
  assert.deepEqual(entries.map((e) => e.action), ['user.password_reset_sent']);
  assertCode(await req(app, 'POST', `/v1/admin/users/${s.memberB.userId}/reset-password`, s.owner), 404, 'not_found');

  // Force logout: every session at once.
  const out = await req(app, 'POST', `${url}/force-logout`, s.admin);
  assert.deepEqual(out.json(), { user_id: s.memberA.userId, revoked_sessions: 2 });
  assertCode(await req(app, 'GET', '/v1/me/profile', s.member), 401, 'token_invalid');
  assertCode(await req(app, 'GET', '/v1/me/profile', secondSession), 401, 'token_invalid');
  assert.equal((await req(app, 'GET', `${url}/sessions`, s.admin)).json().total, 0);
  assert.deepEqual((await req(app, 'POST', `${url}/force-logout`, s.admin)).json(), { user_id: s.memberA.userId, revoked_sessions: 0 });

  // Disable MFA: secret and recovery codes go, the user is told by mail.
  assertCode(await req(app, 'POST', `${url}/disable-mfa`, s.admin), 409, 'conflict');
  await inContext(app.kernel.orm, async () => {
    const em = app.kernel.orm.em.fork();
    await em.nativeUpdate(User, { id: s.memberA.userId }, { mfaEnabled: true, mfaEnabledAt: new Date(), mfaSecret: 'sealed-secret', mfaLastStep: 5 });
    for (let i = 0; i < 3; i++) em.create(MfaRecoveryCode, { user: em.getReference(User, s.memberA.userId), codeHash: `hash-${i}` });
    await em.flush();
  });
  assert.equal((await req(app, 'GET', url, s.admin)).json().mfa_enabled, true);
  const disabled = await req(app, 'POST', `${url}/disable-mfa`, s.admin);
  assert.equal(disabled.statusCode, 200, disabled.body);
  assert.equal(disabled.json().mfa_enabled, false);
  const [mfaRow] = await sql<{ mfa_enabled: number; mfa_secret: string | null; mfa_last_step: number; mfa_enabled_at: unknown }>(
    app,
    'select mfa_enabled, mfa_secret, mfa_last_step, mfa_enabled_at from users where id = ?',
    [s.memberA.userId],
  );
  assert.deepEqual({ ...mfaRow }, { mfa_enabled: 0, mfa_secret: null, mfa_last_step: 0, mfa_enabled_at: null });
  assert.equal((await sql(app, 'select * from mfa_recovery_codes where user_id = ?', [s.memberA.userId])).length, 0);
  assert.equal((await sql(app, "select * from mail_outbox where template = 'mfa_disabled_by_admin'")).length, 1);
  assertCode(await req(app, 'POST', `/v1/admin/users/${s.memberB.userId}/disable-mfa`, s.owner), 404, 'not_found');

  // GraphQL variants.
  const ops = await superadmin(app);
  const gqlOut = await gql(app, ops, 'mutation($id: ID!) { forceLogoutUser(userId: $id) { revokedSessions } }', { id: s.memberB.userId });
  assert.deepEqual(gqlOut.data?.forceLogoutUser, { revokedSessions: 0 });
  const gqlReset = await gql(app, s.owner, 'mutation($id: ID!) { sendUserPasswordReset(userId: $id) { userId } }', { id: s.memberA.userId });
  assert.deepEqual(gqlReset.data?.sendUserPasswordReset, { userId: s.memberA.userId });

  // Every mutation reached the audit bus, in order (the unlock flow is another module's).
  await req(app, 'PATCH', url, s.owner, { name: 'New name' });
  await req(app, 'POST', `${url}/suspend`, s.owner, { reason: 'r' });
  await req(app, 'POST', `${url}/unsuspend`, s.owner);
  await req(app, 'DELETE', url, s.owner);
  assert.deepEqual(actions, [
    'user.password_reset_sent',
    'user.force_logout',
    'user.force_logout',
    'user.mfa_disabled_by_admin',
    'user.force_logout',
    'user.password_reset_sent',
    'user.updated',
    'user.suspended',
    'user.unsuspended',
    'user.deleted',
  ]);
});

test('GET /admin/users/{id}/usage: by model over days, totals, company isolation', async (t) => {
  const app = await build(t);
  const s = await setup(app);
  const day = 86_400_000;
  const insert = (companyId: string, userId: string | null, model: string, credits: number, tokens: number, ageDays: number) =>
    sql(
      app,
      'insert into usage_records (id, company_id, user_id, api_key_id, model, feature, credits, tokens, created_at) values (?, ?, ?, null, ?, ?, ?, ?, ?)',
      [randomUUID(), companyId, userId, model, 'chat', credits, tokens, Date.now() - ageDays * day],
    );
  const url = `/v1/admin/users/${s.memberA.userId}/usage`;

  const empty = await req(app, 'GET', url, s.admin);
  assert.equal(empty.statusCode, 200, empty.body);
  assert.equal(empty.json().days, 30);
  assert.deepEqual(empty.json().items, []);
  assert.deepEqual(empty.json().totals, { credits: 0, tokens: 0, requests: 0, cost: '0.00' });

  await insert(s.a.companyId, s.memberA.userId, 'model-a', 10, 1000, 1);
  await insert(s.a.companyId, s.memberA.userId, 'model-a', 5, 500, 2);
  await insert(s.a.companyId, s.memberA.userId, 'model-b', 20, 300, 29);
  await insert(s.a.companyId, s.memberA.userId, 'model-b', 100, 9999, 45); // outside 30 days
  await insert(s.a.companyId, s.adminA.userId, 'model-a', 7, 70, 1); // another user
  await insert(s.a.companyId, null, 'model-a', 7, 70, 1); // an API key's use
  await insert(s.b.companyId, s.memberA.userId, 'model-a', 1000, 1000, 1); // another company's row: never counted

  const usage = (await req(app, 'GET', url, s.admin)).json();
  assert.equal(usage.user_id, s.memberA.userId);
  assert.ok(Date.parse(usage.since) <= Date.now() - 30 * day + 60_000);
  assert.deepEqual(usage.items, [
    { model: 'model-b', credits: 20, tokens: 300, requests: 1, cost: '0.00' },
    { model: 'model-a', credits: 15, tokens: 1500, requests: 2, cost: '0.00' },
  ]);
  assert.deepEqual(usage.totals, { credits: 35, tokens: 1800, requests: 3, cost: '0.00' });
  const longer = (await req(app, 'GET', `${url}?days=60`, s.owner)).json();
  assert.equal(longer.days, 60);
  assert.deepEqual(longer.totals, { credits: 135, tokens: 11799, requests: 4, cost: '0.00' });
  const oneDay = (await req(app, 'GET', `/api/v1/admin/users/${s.memberA.userId}/usage?days=1`, s.owner)).json();
  assert.deepEqual(oneDay.totals, { credits: 0, tokens: 0, requests: 0, cost: '0.00' });
  const twoDays = (await req(app, 'GET', `${url}?days=2`, s.owner)).json();
  assert.deepEqual(twoDays.totals, { credits: 10, tokens: 1000, requests: 1, cost: '0.00' });

  assertInvalid(await req(app, 'GET', `${url}?days=0`, s.owner), ['query', 'days']);
  assertInvalid(await req(app, 'GET', `${url}?days=366`, s.owner), ['query', 'days']);
  assertCode(await req(app, 'GET', url, s.ownerB), 404, 'not_found');
  assertCode(await req(app, 'GET', url, s.member), 403, 'forbidden');
  // A superadmin reads across companies, and sees the same numbers (the company is the user's).
  const ops = await superadmin(app);
  assert.deepEqual((await req(app, 'GET', url, ops)).json().totals, { credits: 35, tokens: 1800, requests: 3, cost: '0.00' });
  const viaGql = await gql(app, s.owner, 'query($id: ID!) { adminUserUsage(userId: $id, days: 400) { days } }', { id: s.memberA.userId });
  assert.equal(viaGql.errors?.[0]?.extensions.code, 'validation_error');
});

test('adminUsers with company and activeSessionCount costs the same SQL statements for 5 and 20 users', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app, undefined, 'Batch Co');
  const other = await seedOwner(app, undefined, 'Other Co');
  const ops = await superadmin(app);
  const { access_token } = await login(app, owner.email);
  for (let i = 0; i < 3; i++) {
    const u = await seedUser(app, owner.companyId);
    await login(app, u.email);
  }
  const QUERY = (n: number) => `{ adminUsers(perPage: ${n}) { total items { id email company { id name } activeSessionCount } } }`;
  const run = async (token: string, n: number) => {
    const res = await gql(app, token, QUERY(n));
    assert.equal(res.errors, undefined, JSON.stringify(res.errors));
    return res.data!.adminUsers as { total: number; items: { activeSessionCount: number; company: { name: string } }[] };
  };
  await run(access_token, 5); // warm-up: credential cached

  let data: Awaited<ReturnType<typeof run>> | undefined;
  const five = await sqlDuring(async () => (data = await run(access_token, 5)));
  assert.equal(data!.items.length, 4);
  for (let i = 0; i < 20; i++) await seedUser(app, owner.companyId);
  await run(access_token, 20); // warm-up again: after writes the credential's cached policy is checked once
  const twenty = await sqlDuring(async () => (data = await run(access_token, 20)));
  assert.equal(data!.items.length, 20);
  assert.equal(data!.items.filter((u) => u.activeSessionCount === 1).length, 4);
  assert.equal(twenty.length, five.length, `5 users:\n${five.join('\n')}\n20 users:\n${twenty.join('\n')}`);
  // page, count, companies batch, session counts batch.
  assert.ok(five.length <= 5, five.join('\n'));
  assert.equal(twenty.filter((q) => /\bsessions\b/i.test(q)).length, 1, twenty.join('\n'));
  assert.equal(twenty.filter((q) => /\bcompanies\b/i.test(q) && !/\busers\b/i.test(q)).length, 1, twenty.join('\n'));

  // A superadmin's list spans companies: still one batch for the companies.
  await run(ops, 5);
  await login(app, other.email);
  const across = await sqlDuring(async () => (data = await run(ops, 30)));
  assert.ok(new Set(data!.items.map((u) => u.company.name)).size >= 3);
  assert.equal(across.length, twenty.length, across.join('\n'));
});
