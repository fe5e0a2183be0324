import { test } from 'node:test';
import { randomUUID } from 'node:crypto';
import assert from 'node:assert/strict';
import { assertCode, assertInvalid, call, cast, gql, seedUser, sql } from './admin-helper';
import { Invitation } from '../src/domains/identity/invitation.entity';
import { Company } from '../src/domains/identity/company.entity';
import { inContext } from '../src/boot';
import type { AuditEvent } from '../src/domains/audit/audit-event.entity';
import { build, PASSWORD } from './helper';

test('GET /admin/companies: own company for admins and keys, every company for a superadmin; q, pages, Link; member 403', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  for (const token of [c.tokens.ownerA, c.tokens.adminA, c.tokens.keyA]) {
    const res = await call(app, token, 'GET', '/v1/admin/companies');
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.deepEqual(body.items.map((x: { id: string }) => x.id), [c.a.companyId]);
    assert.equal(body.per_page, 20);
    assert.equal(body.total, 1);
    assert.deepEqual(Object.keys(body.items[0]).sort(), ['created_at', 'id', 'name', 'plan_id']);
    assert.equal(body.items[0].plan_id, 'starter');
  }
  // q filters within what the caller may see.
  assert.equal((await call(app, c.tokens.ownerA, 'GET', '/v1/admin/companies?q=company%20b')).json().total, 0);
  assert.equal((await call(app, c.tokens.ownerA, 'GET', '/v1/admin/companies?q=ANY%20a')).json().total, 1);
  assertCode(await call(app, c.tokens.memberA, 'GET', '/v1/admin/companies'), 403, 'forbidden');

  const all = await call(app, c.tokens.superadmin, 'GET', '/api/v1/admin/companies');
  assert.deepEqual(all.json().items.map((x: { name: string }) => x.name), ['Company A', 'Company B', 'Platform']);
  const byQ = await call(app, c.tokens.superadmin, 'GET', '/v1/admin/companies?q=company');
  assert.equal(byQ.json().total, 2);
  // % is a plain character, not a wildcard.
  assert.equal((await call(app, c.tokens.superadmin, 'GET', '/v1/admin/companies?q=%25')).json().total, 0);

  const page2 = await call(app, c.tokens.superadmin, 'GET', '/v1/admin/companies?per_page=2&page=2');
  assert.deepEqual(page2.json(), { ...page2.json(), page: 2, per_page: 2, total: 3 });
  assert.equal(page2.json().items.length, 1);
  const link = String(page2.headers.link);
  assert.match(link, /per_page=2&page=1>; rel="first"/);
  assert.match(link, /per_page=2&page=1>; rel="prev"/);
  assert.match(link, /per_page=2&page=2>; rel="last"/);
  assert.doesNotMatch(link, /rel="next"/);
  const beyond = await call(app, c.tokens.superadmin, 'GET', '/v1/admin/companies?per_page=2&page=9');
  assert.deepEqual(beyond.json().items, []);
  assert.equal(beyond.json().total, 3);
  assertInvalid(await call(app, c.tokens.superadmin, 'GET', '/v1/admin/companies?per_page=0'), 'query.per_page');
  assertInvalid(await call(app, c.tokens.superadmin, 'GET', '/v1/admin/companies?per_page=101'), 'query.per_page');
  assertInvalid(await call(app, c.tokens.superadmin, 'GET', '/v1/admin/companies?page=0'), 'query.page');
  assertInvalid(await call(app, c.tokens.superadmin, 'GET', '/v1/admin/companies?sort=name'), 'query.sort');
});

test('companies: q is case-insensitive beyond ASCII, the list is by name case-insensitively, and a name differing only in case is a duplicate', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  assert.equal((await call(app, c.tokens.ownerA, 'PATCH', `/v1/admin/companies/${c.a.companyId}`, { name: 'Ödeme Ltd' })).statusCode, 200);
  for (const name of ['alpha co', 'Zed co']) {
    await inContext(app.kernel.orm, () =>
      app.domains.identity.accounts.createCompanyWithOwner({ email: `${name.replace(' ', '-')}@example.com`, password: PASSWORD, company: name }),
    );
  }
  for (const q of ['Ödeme', 'ödeme', 'ÖDEME LTD', 'deme']) {
    const res = await call(app, c.tokens.superadmin, 'GET', `/v1/admin/companies?q=${encodeURIComponent(q)}`);
    assert.deepEqual(res.json().items.map((x: { name: string }) => x.name), ['Ödeme Ltd'], `REST q=${q}`);
    const graphql = await gql(app, c.tokens.superadmin, 'query ($q: String) { adminCompanies(q: $q) { items { name } } }', { q });
    assert.deepEqual((graphql.data?.adminCompanies as { items: { name: string }[] }).items.map((x) => x.name), ['Ödeme Ltd'], `GraphQL q=${q}`);
  }
  const all = await call(app, c.tokens.superadmin, 'GET', '/v1/admin/companies');
  assert.deepEqual(all.json().items.map((x: { name: string }) => x.name), ['alpha co', 'Company B', 'Platform', 'Zed co', 'Ödeme Ltd']);
  // The CLI's duplicate check and --company lookup fold the same way.
  await assert.rejects(
    inContext(app.kernel.orm, () => app.domains.identity.accounts.createCompanyWithOwner({ email: 'dup@example.com', password: PASSWORD, company: ' ödeme LTD ' })),
    (error: { code?: string }) => error.code === 'conflict',
  );
  const found = await inContext(app.kernel.orm, () => app.domains.identity.accounts.findCompaniesByName('ÖDEME ltd'));
  assert.deepEqual(found.map((x) => x.id), [c.a.companyId]);
});

test('GET /admin/companies/{id}: own company 200, another 404 (never data), superadmin any; member 403', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  for (const [token, prefix] of [[c.tokens.ownerA, '/v1'], [c.tokens.adminA, '/api/v1'], [c.tokens.keyA, '/v1']] as const) {
    const res = await call(app, token, 'GET', `${prefix}/admin/companies/${c.a.companyId}`);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().name, 'Company A');
    const other = await call(app, token, 'GET', `${prefix}/admin/companies/${c.b.companyId}`);
    assertCode(other, 404, 'not_found');
    assert.doesNotMatch(other.body, /Company B/);
  }
  assertCode(await call(app, c.tokens.ownerA, 'GET', `/v1/admin/companies/${randomUUID()}`), 404, 'not_found');
  assertCode(await call(app, c.tokens.memberA, 'GET', `/v1/admin/companies/${c.a.companyId}`), 403, 'forbidden');
  assertInvalid(await call(app, c.tokens.ownerA, 'GET', '/v1/admin/companies/not-a-uuid'), 'path.company_id');
  const sup = await call(app, c.tokens.superadmin, 'GET', `/v1/admin/companies/${c.b.companyId}`);
  assert.equal(sup.json().name, 'Company B');

  // GraphQL: the same rule.
  const q = 'query($id: ID!) { adminCompany(id: $id) { id name planId } }';
  assert.equal((await gql(app, c.tokens.ownerB, q, { id: c.a.companyId })).errors?.[0]?.extensions.code, 'not_found');
  assert.equal((await gql(app, c.tokens.ownerB, q, { id: c.b.companyId })).data?.adminCompany && true, true);
});

test('PATCH /admin/companies/{id}: rename (audited, on the bus); plan only by a superadmin and only an existing plan; 422 with loc', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const published: AuditEvent[] = [];
  const stop = app.kernel.events.subscribe('audit.recorded', (e) => published.push(e));
  t.after(stop);

  const res = await call(app, c.tokens.adminA, 'PATCH', `/v1/admin/companies/${c.a.companyId}`, { name: '  Acme Renamed ' });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().name, 'Acme Renamed');
  const event = published.find((e) => e.action === 'company.updated');
  assert.ok(event, 'company.updated published');
  assert.equal(event.companyId, c.a.companyId);
  assert.deepEqual(event.data, { changes: { name: { from: 'Company A', to: 'Acme Renamed' } } });
  const [row] = await sql<{ name: string }>(app, 'select name from companies where id = ?', [c.a.companyId]);
  assert.equal(row!.name, 'Acme Renamed');

  assertInvalid(await call(app, c.tokens.ownerA, 'PATCH', `/v1/admin/companies/${c.a.companyId}`, { name: '' }), 'body.name');
  assertInvalid(await call(app, c.tokens.ownerA, 'PATCH', `/v1/admin/companies/${c.a.companyId}`, { name: 'x'.repeat(201) }), 'body.name');
  assertInvalid(await call(app, c.tokens.ownerA, 'PATCH', `/v1/admin/companies/${c.a.companyId}`, { name: 'ok', color: 'red' }), 'body.color');
  assertCode(await call(app, c.tokens.ownerA, 'PATCH', `/v1/admin/companies/${c.a.companyId}`, { plan_id: 'professional' }), 403, 'forbidden');
  assertCode(await call(app, c.tokens.keyA, 'PATCH', `/v1/admin/companies/${c.a.companyId}`, { plan_id: 'professional' }), 403, 'forbidden');
  assertCode(await call(app, c.tokens.memberA, 'PATCH', `/v1/admin/companies/${c.a.companyId}`, { name: 'Nope' }), 403, 'forbidden');
  assertCode(await call(app, c.tokens.ownerA, 'PATCH', `/v1/admin/companies/${c.b.companyId}`, { name: 'Hijack' }), 404, 'not_found');
  const [b] = await sql<{ name: string }>(app, 'select name from companies where id = ?', [c.b.companyId]);
  assert.equal(b!.name, 'Company B');
  // A name of only spaces is empty once trimmed (the service checks what REST and GraphQL both send).
  assertInvalid(await call(app, c.tokens.ownerA, 'PATCH', `/v1/admin/companies/${c.a.companyId}`, { name: '   ' }), 'body.name');

  assertInvalid(await call(app, c.tokens.superadmin, 'PATCH', `/v1/admin/companies/${c.b.companyId}`, { plan_id: 'no-such-plan' }), 'body.plan_id');
  const moved = await call(app, c.tokens.superadmin, 'PATCH', `/api/v1/admin/companies/${c.b.companyId}`, { plan_id: 'professional', name: 'B Corp' });
  assert.equal(moved.statusCode, 200, moved.body);
  assert.equal(moved.json().plan_id, 'professional');
  assert.equal(moved.json().name, 'B Corp');
  const superEvent = published.find((e) => e.action === 'company.updated' && e.companyId === c.b.companyId);
  assert.equal(superEvent?.actorId, c.operatorId);

  const gqlError = await gql(app, c.tokens.ownerA, 'mutation($id: ID!) { updateCompany(id: $id, input: { name: "" }) { id } }', { id: c.a.companyId });
  assert.equal(gqlError.errors?.[0]?.extensions.code, 'validation_error');
});

test("a rename never takes another company's name (case and spaces ignored): 409, nothing written; only a superadmin is told which company has it", async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const audits = async () => (await sql<{ n: number }>(app, "select count(*) as n from audit_events where action = 'company.updated'"))[0]!.n;
  const before = await audits();
  for (const name of ['Company B', 'company b', '  COMPANY B ', 'platform']) {
    const refused = await call(app, c.tokens.ownerA, 'PATCH', `/v1/admin/companies/${c.a.companyId}`, { name });
    assertCode(refused, 409, 'conflict');
    assert.equal(refused.json().duplicate_of, undefined, 'no other company id is revealed to its owner');
    const viaGraphql = await gql(app, c.tokens.ownerA, 'mutation ($id: ID!, $name: String) { updateCompany(id: $id, input: { name: $name }) { name } }', { id: c.a.companyId, name });
    assert.equal(viaGraphql.errors?.[0]?.extensions.code, 'conflict', name);
  }
  const bySuper = await call(app, c.tokens.superadmin, 'PATCH', `/v1/admin/companies/${c.a.companyId}`, { name: 'company b' });
  assertCode(bySuper, 409, 'conflict');
  assert.deepEqual(bySuper.json().duplicate_of, [c.b.companyId]);
  assert.equal(await audits(), before, 'nothing was written');
  assert.equal((await sql<{ name: string }>(app, 'select name from companies where id = ?', [c.a.companyId]))[0]!.name, 'Company A');
  // Its own name in another case is a rename like any other.
  const own = await call(app, c.tokens.ownerA, 'PATCH', `/v1/admin/companies/${c.a.companyId}`, { name: 'COMPANY A' });
  assert.equal(own.statusCode, 200, own.body);
  assert.equal(own.json().name, 'COMPANY A');
});

test('GET /admin/companies/{id}/audit: newest first, per_page 50, action and actor filters, Link; cross-company 404', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  for (let i = 0; i < 55; i++) {
    await app.domains.audit.log.record({ action: 'test.event', companyId: c.a.companyId, actor: { actorType: 'system', actorId: null, actorLabel: 'robot' }, data: { i } });
  }
  await call(app, c.tokens.adminA, 'PATCH', `/v1/admin/companies/${c.a.companyId}`, { name: 'Renamed' });

  const first = await call(app, c.tokens.ownerA, 'GET', `/v1/admin/companies/${c.a.companyId}/audit`);
  assert.equal(first.statusCode, 200, first.body);
  const body = first.json();
  assert.equal(body.per_page, 50);
  assert.equal(body.items.length, 50);
  assert.ok(body.total >= 56);
  assert.equal(body.items[0].action, 'company.updated', 'newest first');
  assert.deepEqual(body.items[1].data, { i: 54 });
  assert.match(String(first.headers.link), /rel="next"/);
  assert.ok(body.items.every((e: { created_at: string }, i: number, all: { created_at: string }[]) => i === 0 || all[i - 1]!.created_at >= e.created_at));

  const byAction = await call(app, c.tokens.ownerA, 'GET', `/v1/admin/companies/${c.a.companyId}/audit?action=company.updated`);
  assert.deepEqual(byAction.json().items.map((e: { action: string }) => e.action), ['company.updated']);
  assert.equal(byAction.json().items[0].actor_id, c.adminA.userId);
  const byActorId = await call(app, c.tokens.ownerA, 'GET', `/v1/admin/companies/${c.a.companyId}/audit?actor=${c.adminA.userId}`);
  assert.ok(byActorId.json().total >= 2, byActorId.body); // auth.login and company.updated
  assert.ok(byActorId.json().items.every((e: { actor_id: string }) => e.actor_id === c.adminA.userId));
  // An id is a UUID: upper-cased, it filters the same.
  const upper = await call(app, c.tokens.ownerA, 'GET', `/v1/admin/companies/${c.a.companyId}/audit?actor=${c.adminA.userId.toUpperCase()}`);
  assert.equal(upper.json().total, byActorId.json().total);
  const byActorLabel = await call(app, c.tokens.ownerA, 'GET', `/v1/admin/companies/${c.a.companyId}/audit?actor=robot&per_page=10&page=6`);
  assert.equal(byActorLabel.json().total, 55);
  assert.equal(byActorLabel.json().items.length, 5);
  assert.deepEqual(byActorLabel.json().items.at(-1).data, { i: 0 });
  const both = await call(app, c.tokens.ownerA, 'GET', `/v1/admin/companies/${c.a.companyId}/audit?actor=robot&action=company.updated`);
  assert.equal(both.json().total, 0);

  assertCode(await call(app, c.tokens.ownerB, 'GET', `/v1/admin/companies/${c.a.companyId}/audit`), 404, 'not_found');
  assertCode(await call(app, c.tokens.keyB, 'GET', `/api/v1/admin/companies/${c.a.companyId}/audit`), 404, 'not_found');
  assertCode(await call(app, c.tokens.memberA, 'GET', `/v1/admin/companies/${c.a.companyId}/audit`), 403, 'forbidden');
  const sup = await call(app, c.tokens.superadmin, 'GET', `/v1/admin/companies/${c.a.companyId}/audit?per_page=1`);
  assert.equal(sup.json().items[0].action, 'company.updated');
  assertInvalid(await call(app, c.tokens.ownerA, 'GET', `/v1/admin/companies/${c.a.companyId}/audit?per_page=500`), 'query.per_page');
});

test("the caller's auditLog takes an action filter bounded as companyAuditLog's: empty or over 64 characters is validation_error, never \"no filter\"", async (t) => {
  const app = await build(t);
  const c = await cast(app);
  for (const field of ['auditLog(action: $action)', `companyAuditLog(companyId: "${c.a.companyId}", action: $action)`]) {
    for (const [action, type] of [['', 'string_too_short'], ['x'.repeat(65), 'string_too_long']] as const) {
      const res = await gql(app, c.tokens.ownerA, `query ($action: String) { ${field} { total } }`, { action });
      assert.equal(res.errors?.[0]?.extensions.code, 'validation_error', `${field} ${action.length}`);
      assert.equal((res.errors?.[0]?.extensions as unknown as { errors: { type: string }[] }).errors[0]!.type, type);
    }
  }
  const exact = await gql(app, c.tokens.ownerA, 'query { auditLog(action: "company.created") { total } }');
  assert.equal(exact.errors, undefined);
});

test('GET /admin/overview: real counts of the caller company and its recent security events; member 403', async (t) => {
  const app = await build(t);
  const c = await cast(app); // A: owner, admin, member (all signed in once), key A
  await seedUser(app, c.a.companyId, 'member', 'suspended');
  await inContext(app.kernel.orm, async () => {
    const em = app.kernel.orm.em.fork();
    const company = em.getReference(Company, c.a.companyId);
    const day = 86_400_000;
    em.create(Invitation, { company, email: 'p1@example.com', role: 'member', tokenHash: 'a'.repeat(64), expiresAt: new Date(Date.now() + day) });
    em.create(Invitation, { company, email: 'p2@example.com', role: 'admin', tokenHash: 'b'.repeat(64), expiresAt: new Date(Date.now() + day) });
    em.create(Invitation, { company, email: 'old@example.com', role: 'member', tokenHash: 'c'.repeat(64), expiresAt: new Date(Date.now() - day) });
    em.create(Invitation, { company, email: 'done@example.com', role: 'member', tokenHash: 'd'.repeat(64), status: 'accepted', expiresAt: new Date(Date.now() + day) });
    await em.flush();
  });
  await call(app, c.tokens.ownerA, 'PATCH', `/v1/admin/companies/${c.a.companyId}`, { name: 'Not a security event' });

  const res = await call(app, c.tokens.adminA, 'GET', '/v1/admin/overview');
  assert.equal(res.statusCode, 200, res.body);
  const o = res.json();
  assert.equal(o.company_id, c.a.companyId);
  assert.deepEqual(o.users, { total: 4, by_status: { active: 3, suspended: 1 }, by_role: { owner: 1, admin: 1, member: 2 } });
  assert.equal(o.pending_invitations, 2);
  assert.equal(o.active_sessions, 3);
  assert.equal(o.active_api_keys, 1);
  const actions = o.recent_security_events.map((e: { action: string }) => e.action);
  assert.ok(actions.length > 0 && actions.length <= 10);
  assert.ok(actions.includes('auth.login'), actions.join());
  assert.ok(actions.every((a: string) => /^(auth|mfa|session|api_key)\./.test(a)), actions.join());
  assert.ok(!actions.includes('company.updated'));

  assertCode(await call(app, c.tokens.memberA, 'GET', '/v1/admin/overview'), 403, 'forbidden');

  // It changes with the data: a revoked key and a revoked session no longer count.
  await call(app, c.tokens.ownerA, 'DELETE', `/v1/admin/api-keys/${c.keyA.id}`);
  await call(app, c.tokens.memberA, 'POST', '/v1/me/sessions/revoke-all');
  const after = (await call(app, c.tokens.ownerA, 'GET', '/api/v1/admin/overview')).json();
  assert.equal(after.active_api_keys, 0);
  assert.equal(after.active_sessions, 2);
  assert.equal(after.recent_security_events[0].action, 'session.revoked_all', JSON.stringify(after.recent_security_events.slice(0, 3)));

  const viaKey = await call(app, c.tokens.keyB, 'GET', '/v1/admin/overview');
  assert.equal(viaKey.json().company_id, c.b.companyId);
  assert.equal(viaKey.json().users.total, 1);
});
