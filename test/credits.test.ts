import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { createClient } from 'graphql-ws';
import { build } from './helper';
import { assertCode, assertInvalid, call, cast, sql } from './admin-helper';
import { inContext } from '../src/boot';
import { assertLedgerAddsUp } from './ledger-helper';

test('GET /billing/credits answers the balance split by bucket, held credits, the period end and the plan, to any member', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  for (const token of [c.tokens.ownerA, c.tokens.memberA, c.tokens.keyA]) {
    const res = await call(app, token, 'GET', '/v1/billing/credits');
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.deepEqual(
      { available: body.available, monthly: body.monthly, purchased: body.purchased, granted: body.granted, held: body.held },
      { available: 2000, monthly: 2000, purchased: 0, granted: 0, held: 0 },
    );
    assert.deepEqual(body.plan, { id: 'starter', name: 'Starter', monthly_credits: 2000, daily_requests: 1000 });
    assert.match(body.period_end, /^\d{4}-\d{2}-01T00:00:00(\.000)?Z$/);
  }
  const api = await call(app, c.tokens.ownerA, 'GET', '/api/v1/billing/credits');
  assert.equal(api.statusCode, 200);
  assert.equal((await app.inject({ method: 'GET', url: '/v1/billing/credits' })).statusCode, 401);
});

test("another company's balance is 404 to its neighbours and readable by a superadmin", async (t) => {
  const app = await build(t);
  const c = await cast(app);
  assertCode(await call(app, c.tokens.ownerB, 'GET', `/v1/billing/credits?company_id=${c.a.companyId}`), 404, 'not_found');
  const seen = await call(app, c.tokens.superadmin, 'GET', `/v1/billing/credits?company_id=${c.a.companyId}`);
  assert.equal(seen.statusCode, 200, seen.body);
  assertCode(await call(app, c.tokens.superadmin, 'GET', '/v1/billing/credits?company_id=00000000-0000-4000-8000-000000000000'), 404, 'not_found');
});

test('only a platform superadmin grants and revokes credits; an owner gets 403', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const url = `/v1/admin/companies/${c.a.companyId}/credits`;
  for (const token of [c.tokens.ownerA, c.tokens.adminA, c.tokens.keyA, c.tokens.memberA]) {
    assertCode(await call(app, token, 'POST', `${url}/grant`, { credits: 10, reason: 'x' }), 403, 'forbidden');
    assertCode(await call(app, token, 'POST', `${url}/revoke`, { credits: 10, reason: 'x' }), 403, 'forbidden');
  }
  const granted = await call(app, c.tokens.superadmin, 'POST', `${url}/grant`, { credits: 500, reason: 'Goodwill after the outage' });
  assert.equal(granted.statusCode, 200, granted.body);
  assert.equal(granted.json().granted, 500);
  assert.equal(granted.json().available, 2500);
  const revoked = await call(app, c.tokens.superadmin, 'POST', `${url}/revoke`, { credits: 700, reason: 'Correction' });
  assert.equal(revoked.statusCode, 200, revoked.body);
  // Granted first (500), then monthly (200).
  assert.deepEqual([revoked.json().granted, revoked.json().monthly, revoked.json().available], [0, 1800, 1800]);
  const audit = await sql<{ action: string; data: string }>(app, "select action, data from audit_events where action like 'credits.%' order by created_at");
  assert.deepEqual(audit.map((a) => a.action), ['credits.granted', 'credits.revoked']);
  assert.equal(JSON.parse(audit[0]!.data).reason, 'Goodwill after the outage');
  await assertLedgerAddsUp(app);
});

test('a revoke never takes the balance below zero', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const res = await call(app, c.tokens.superadmin, 'POST', `/v1/admin/companies/${c.a.companyId}/credits/revoke`, { credits: 2001, reason: 'too much' });
  assertInvalid(res, 'body.credits');
  assert.match(res.json().detail, /needs 2001 credits; balance 2000/);
  assert.equal(app.domains.billing.ledger.balance(c.a.companyId).available, 2000);
});

test('a grant retried with the same X-Request-Id grants once; the same id with another body is 409, not a silent no-op', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const send = (payload = { credits: 100, reason: 'retry me' }) =>
    app.inject({
      method: 'POST',
      url: `/v1/admin/companies/${c.a.companyId}/credits/grant`,
      headers: { authorization: `Bearer ${c.tokens.superadmin}`, 'x-request-id': 'grant-retry-1' },
      payload,
    });
  assert.equal((await send()).json().granted, 100);
  assert.equal((await send()).json().granted, 100);
  assertCode(await send({ credits: 5000, reason: 'retry me' }), 409, 'conflict');
  assertCode(await send({ credits: 100, reason: 'another reason' }), 409, 'conflict');
  assert.equal(app.domains.billing.ledger.balance(c.a.companyId).granted, 100);
  const [{ n }] = await sql<{ n: number }>(app, "select count(*) as n from audit_events where action = 'credits.granted'");
  assert.equal(n, 1);
});

test('grant and revoke validate their body and the company', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const url = `/v1/admin/companies/${c.a.companyId}/credits/grant`;
  assertInvalid(await call(app, c.tokens.superadmin, 'POST', url, { credits: 0, reason: 'x' }), 'body.credits');
  assertInvalid(await call(app, c.tokens.superadmin, 'POST', url, { credits: 1.5, reason: 'x' }), 'body.credits');
  assertInvalid(await call(app, c.tokens.superadmin, 'POST', url, { credits: '10', reason: 'x' }), 'body.credits');
  assertInvalid(await call(app, c.tokens.superadmin, 'POST', url, { credits: 10 }), 'body.reason');
  assertInvalid(await call(app, c.tokens.superadmin, 'POST', url, { credits: 10, reason: '' }), 'body.reason');
  assertInvalid(await call(app, c.tokens.superadmin, 'POST', url, { credits: 10, reason: 'x', extra: 1 }), 'body.extra');
  assertCode(
    await call(app, c.tokens.superadmin, 'POST', '/v1/admin/companies/00000000-0000-4000-8000-000000000000/credits/grant', { credits: 1, reason: 'x' }),
    404,
    'not_found',
  );
  assertInvalid(await call(app, c.tokens.superadmin, 'POST', '/v1/admin/companies/not-a-uuid/credits/grant', { credits: 1, reason: 'x' }), 'path.company_id');
  assert.equal(app.domains.billing.ledger.balance(c.a.companyId).available, 2000);
});

test('GET /admin/billing/transactions pages the ledger newest first, 50 per page, for owners and admins', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const ledger = app.domains.billing.ledger;
  for (let i = 0; i < 60; i++) await inContext(app.kernel.orm, () => ledger.topUp({ companyId: c.a.companyId, credits: i + 1, key: `pi_${i}` }));
  const first = await call(app, c.tokens.adminA, 'GET', '/v1/admin/billing/transactions');
  assert.equal(first.statusCode, 200, first.body);
  const page = first.json();
  assert.deepEqual([page.page, page.per_page, page.total, page.items.length], [1, 50, 61, 50]);
  assert.equal(page.items[0].kind, 'topup');
  assert.equal(page.items[0].credits, 60);
  assert.equal(page.items[0].purchased, 60);
  assert.match(String(first.headers.link), /rel="next"/);
  const second = (await call(app, c.tokens.ownerA, 'GET', '/v1/admin/billing/transactions?page=2')).json();
  assert.equal(second.items.length, 11);
  assert.equal(second.items.at(-1).kind, 'allocation');
  assertCode(await call(app, c.tokens.memberA, 'GET', '/v1/admin/billing/transactions'), 403, 'forbidden');
  assertInvalid(await call(app, c.tokens.ownerA, 'GET', '/v1/admin/billing/transactions?per_page=101'), 'query.per_page');
  assertCode(await call(app, c.tokens.ownerB, 'GET', `/v1/admin/billing/transactions?company_id=${c.a.companyId}`), 404, 'not_found');
  const b = (await call(app, c.tokens.ownerB, 'GET', '/v1/admin/billing/transactions')).json();
  assert.equal(b.total, 1, 'company B sees only its own allocation');
  const su = (await call(app, c.tokens.superadmin, 'GET', `/v1/admin/billing/transactions?company_id=${c.a.companyId}`)).json();
  assert.equal(su.total, 61);
});

test('a spending budget set by a superadmin stops reserves with 402 budget_exhausted once spent; only an explicit null removes it', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const url = `/v1/admin/companies/${c.a.companyId}/budget`;
  assertCode(await call(app, c.tokens.ownerA, 'PUT', url, { budget: '1.00' }), 403, 'forbidden');
  assertInvalid(await call(app, c.tokens.superadmin, 'PUT', url, { budget: '1.0000001' }), 'body.budget');
  assertInvalid(await call(app, c.tokens.superadmin, 'PUT', url, { budget: -1 }), 'body.budget');
  const set = await call(app, c.tokens.superadmin, 'PUT', url, { budget: '0.001' });
  assert.equal(set.statusCode, 200, set.body);
  const { period_end: periodEnd, ...budget } = set.json() as Record<string, unknown>;
  assert.deepEqual(budget, { budget: '0.001', spend: '0.00', currency: 'usd' });
  assert.match(String(periodEnd), /-01T00:00:00/);
  // The company's admins see it; members do not.
  assert.equal((await call(app, c.tokens.adminA, 'GET', url)).json().budget, '0.001');
  assertCode(await call(app, c.tokens.memberA, 'GET', url), 403, 'forbidden');
  assertCode(await call(app, c.tokens.ownerB, 'GET', url), 404, 'not_found');

  const ledger = app.domains.billing.ledger;
  const companyId = c.a.companyId;
  const hold = await inContext(app.kernel.orm, () => ledger.reserve({ companyId, credits: 5, key: 'b1', feature: 'chat' }));
  // Spend is the cost the commit reports, at the model's price; set it directly since this test is about the budget gate.
  await inContext(app.kernel.orm, () => ledger.commit(hold.id, { credits: 5 }));
  await sql(app, 'update credit_accounts set spend_micros = 1000 where company_id = ?', [companyId]);
  const error = await inContext(app.kernel.orm, () => ledger.reserve({ companyId, credits: 5, key: 'b2', feature: 'chat' })).catch((e: unknown) => e);
  assert.equal((error as { code?: string }).code, 'budget_exhausted');
  assert.equal((error as { status?: number }).status, 402);
  // A budget left out of the body removes nothing: only an explicit null does (REST and GraphQL alike).
  assertInvalid(await call(app, c.tokens.superadmin, 'PUT', url, {}), 'body.budget');
  const gql = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers: { authorization: `Bearer ${c.tokens.superadmin}` },
    payload: { query: `mutation { setSpendingBudget(companyId: "${companyId}", input: {}) { budget } }` },
  });
  assert.equal(gql.json().errors?.[0]?.extensions?.code, 'validation_error', gql.body);
  assert.equal((await call(app, c.tokens.adminA, 'GET', url)).json().budget, '0.001');
  const removed = await call(app, c.tokens.superadmin, 'PUT', url, { budget: null });
  assert.equal(removed.json().budget, null);
  await inContext(app.kernel.orm, () => ledger.reserve({ companyId, credits: 5, key: 'b2', feature: 'chat' }));
  const audit = await sql<{ action: string }>(app, "select action from audit_events where action = 'billing.budget_changed'");
  assert.equal(audit.length, 2);
});

test('Company carries its credits and budget in GraphQL', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const res = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers: { authorization: `Bearer ${c.tokens.ownerA}` },
    payload: { query: '{ me { company { id credits { available monthly plan { id } } budget { budget spend currency } } } }' },
  });
  assert.equal(res.statusCode, 200, res.body);
  const company = res.json().data.me.company;
  assert.deepEqual(company.credits, { available: 2000, monthly: 2000, plan: { id: 'starter' } });
  assert.deepEqual(company.budget, { budget: null, spend: '0.00', currency: 'usd' });
});

test('creditsChanged streams the company balance live to its admins over graphql-ws, never another company', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const connect = (token: string) =>
    createClient({ url: `ws://127.0.0.1:${port}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${token}` }, retryAttempts: 0, lazy: true });
  const admin = connect(c.tokens.adminA);
  const member = connect(c.tokens.memberA);
  t.after(async () => {
    await admin.dispose();
    await member.dispose();
  });
  const seen: { available: number; purchased: number }[] = [];
  const errors: unknown[] = [];
  admin.subscribe<{ creditsChanged: { available: number; purchased: number } }>(
    { query: 'subscription { creditsChanged { available purchased } }' },
    { next: (v) => v.data && seen.push(v.data.creditsChanged), error: (e) => errors.push(e), complete: () => {} },
  );
  const refused: unknown[] = [];
  member.subscribe({ query: 'subscription { creditsChanged { available } }' }, { next: (v) => refused.push(v), error: (e) => refused.push(e), complete: () => {} });
  const listeners = () => (app.kernel.events as unknown as { emitter: { listenerCount(t: string): number } }).emitter.listenerCount('credits.changed');
  for (let i = 0; listeners() < 1 && i < 300; i++) await new Promise((r) => setTimeout(r, 10));
  const ledger = app.domains.billing.ledger;
  await inContext(app.kernel.orm, () => ledger.topUp({ companyId: c.b.companyId, credits: 7, key: 'pi_b' }));
  await inContext(app.kernel.orm, () => ledger.topUp({ companyId: c.a.companyId, credits: 300, key: 'pi_a' }));
  for (let i = 0; seen.length < 1 && i < 300; i++) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(seen, [{ available: 2300, purchased: 300 }]);
  assert.deepEqual(errors, []);
  for (let i = 0; refused.length < 1 && i < 300; i++) await new Promise((r) => setTimeout(r, 10));
  assert.match(JSON.stringify(refused), /forbidden|Forbidden/);
});

test('two grants aliased in one GraphQL request are two grants, and a retry of that request grants neither again', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const send = () =>
    app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { authorization: `Bearer ${c.tokens.superadmin}`, 'x-request-id': 'two-grants-1' },
      payload: {
        query:
          'mutation($cid: ID!) { a: grantCredits(companyId: $cid, input: { credits: 5, reason: "a" }) { granted } ' +
          'b: grantCredits(companyId: $cid, input: { credits: 7, reason: "b" }) { granted } }',
        variables: { cid: c.a.companyId },
      },
    });
  // `granted` is the company's granted credits after each grant.
  const first = await send();
  assert.deepEqual(first.json().data, { a: { granted: 5 }, b: { granted: 12 } }, first.body);
  assert.equal(app.domains.billing.ledger.balance(c.a.companyId).granted, 12);
  const retried = await send();
  assert.equal(retried.json().errors, undefined, retried.body);
  assert.equal(app.domains.billing.ledger.balance(c.a.companyId).granted, 12);
  const [{ n }] = await sql<{ n: number }>(app, "select count(*) as n from audit_events where action = 'credits.granted'");
  assert.equal(n, 2);
});

test('a query parameter a route does not take is refused, never ignored', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  assertInvalid(
    await call(app, c.tokens.superadmin, 'POST', `/v1/admin/companies/${c.a.companyId}/credits/grant?dry_run=true`, { credits: 10, reason: 'x' }),
    'query.dry_run',
  );
  assert.equal(app.domains.billing.ledger.balance(c.a.companyId).granted, 0);
  assertInvalid(await call(app, c.tokens.ownerA, 'GET', `/api/v1/admin/billing/overview?company_id=${c.a.companyId}`), 'query.company_id');
});

test("numbers beyond GraphQL's 32-bit Int are a validation issue at their request location", async (t) => {
  const app = await build(t);
  const c = await cast(app);
  assertInvalid(await call(app, c.tokens.ownerA, 'GET', '/v1/admin/billing/transactions?page=2147483648'), 'query.page');
  assertInvalid(
    await call(app, c.tokens.superadmin, 'POST', `/v1/admin/companies/${c.a.companyId}/credits/grant`, { credits: 2147483648, reason: 'x' }),
    'body.credits',
  );
  assert.equal(app.domains.billing.ledger.balance(c.a.companyId).granted, 0);
});

test('a grant that would take the balance past 2,147,483,647 credits is refused with 422 before anything is written; the balance stays readable', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const grant = (n: number) =>
    app.inject({
      method: 'POST',
      url: `/v1/admin/companies/${c.b.companyId}/credits/grant`,
      headers: { authorization: `Bearer ${c.tokens.superadmin}`, 'x-request-id': `overflow-${n}` },
      payload: { credits: 1_000_000_000, reason: `overflow ${n}` },
    });
  assert.equal((await grant(0)).statusCode, 200);
  assert.equal((await grant(1)).statusCode, 200);
  const third = await grant(2);
  assertInvalid(third, 'body.credits');
  assert.match(third.json().detail, /above the maximum of 2147483647/);
  assert.equal(app.domains.billing.ledger.balance(c.b.companyId).granted, 2_000_000_000);
  const [{ n }] = await sql<{ n: number }>(app, "select count(*) as n from audit_events where action = 'credits.granted'");
  assert.equal(n, 2);
  assert.equal((await call(app, c.tokens.superadmin, 'GET', `/v1/billing/credits?company_id=${c.b.companyId}`)).statusCode, 200);
  assert.equal((await call(app, c.tokens.superadmin, 'GET', '/v1/admin/billing/customers')).statusCode, 200);
  await assertLedgerAddsUp(app);
});

test('a grant is one grant whichever surface carries its X-Request-Id: GraphQL then REST grants once', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const headers = { authorization: `Bearer ${c.tokens.superadmin}`, 'x-request-id': 'both-surfaces-1' };
  const viaGraphql = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers,
    payload: { query: 'mutation($cid: ID!) { grantCredits(companyId: $cid, input: { credits: 10, reason: "a" }) { granted } }', variables: { cid: c.a.companyId } },
  });
  assert.equal(viaGraphql.json().data?.grantCredits?.granted, 10, viaGraphql.body);
  const viaRest = await app.inject({ method: 'POST', url: `/v1/admin/companies/${c.a.companyId}/credits/grant`, headers, payload: { credits: 10, reason: 'a' } });
  assert.equal(viaRest.statusCode, 200, viaRest.body);
  assert.equal(app.domains.billing.ledger.balance(c.a.companyId).granted, 10);
});

test('a revoke of one credit too many says "needs 1 credit"', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  await call(app, c.tokens.superadmin, 'POST', `/v1/admin/companies/${c.a.companyId}/credits/revoke`, { credits: 2000, reason: 'all' });
  const res = await call(app, c.tokens.superadmin, 'POST', `/v1/admin/companies/${c.a.companyId}/credits/revoke`, { credits: 1, reason: 'one more' });
  assertInvalid(res, 'body.credits');
  assert.match(res.json().detail, /needs 1 credit; balance 0$/);
});

test('GraphQL setSpendingBudget without a budget reports the issue at ["input","budget"]', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const res = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers: { authorization: `Bearer ${c.tokens.superadmin}` },
    payload: { query: 'mutation($cid: ID!) { setSpendingBudget(companyId: $cid, input: {}) { budget } }', variables: { cid: c.a.companyId } },
  });
  const error = res.json().errors?.[0];
  assert.ok(error, res.body);
  assert.deepEqual(error.extensions.errors.map((e: { loc: string[] }) => e.loc), [['input', 'budget']], res.body);
});

test('OpenAPI declares the members of every 402: required and balance, or budget, spend and currency', async (t) => {
  const app = await build(t);
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  const refs: string[] = [];
  for (const item of Object.values(doc.paths) as Record<string, { responses?: Record<string, { content?: Record<string, { schema: { $ref?: string } }> }> }>[]) {
    for (const op of Object.values(item)) {
      const paymentRequired = op.responses?.['402'];
      if (paymentRequired) refs.push(paymentRequired.content!['application/problem+json']!.schema.$ref!);
    }
  }
  assert.ok(refs.length >= 6, `402 responses: ${refs.length}`);
  assert.deepEqual([...new Set(refs)], ['#/components/schemas/PaymentRequiredProblem']);
  const schema = doc.components.schemas.PaymentRequiredProblem;
  assert.deepEqual(Object.keys(schema.properties).sort(), ['balance', 'budget', 'currency', 'required', 'spend']);
});
