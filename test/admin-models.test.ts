import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../src/errors/catalog';
import { inContext } from '../src/boot';
import type { AuditEvent } from '../src/domains/audit/audit-event.entity';
import { assertCode, assertInvalid, call, cast, gql, sql } from './admin-helper';
import { build } from './helper';
import { readSeed } from '../src/seed-data';
import type { ModelSeed } from '../src/domains/catalog';

const NEW_MODEL = {
  id: 'acme-large-2',
  display_name: 'Acme Large 2',
  provider: 'acme',
  family: 'large',
  credit_cost: 7,
  context_length: 32000,
};

async function rejects(promise: Promise<unknown>, code: string) {
  await assert.rejects(promise, (e: unknown) => e instanceof AppError && e.code === code);
}

test('GET /admin/models lists the whole catalog, blocked models included; admins, keys and superadmins; member 403', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  await call(app, c.tokens.superadmin, 'PATCH', '/v1/admin/models/gpt-4o', { blocked: true });
  for (const token of [c.tokens.ownerA, c.tokens.adminA, c.tokens.keyA, c.tokens.superadmin]) {
    const res = await call(app, token, 'GET', '/v1/admin/models');
    assert.equal(res.statusCode, 200, res.body);
    const gpt = res.json().find((m: { id: string }) => m.id === 'gpt-4o');
    assert.equal(gpt.blocked, true);
    assert.deepEqual(Object.keys(gpt).sort(), ['blocked', 'context_length', 'created_at', 'credit_cost', 'display_name', 'family', 'id', 'price_per_1k_tokens', 'provider']);
    assert.equal(gpt.price_per_1k_tokens, '0.005', "data/models.json's price, as budgets are written");
    assert.equal(res.json().length, 6);
  }
  assertCode(await call(app, c.tokens.memberA, 'GET', '/api/v1/admin/models'), 403, 'forbidden');
});

test('POST /admin/models: superadmin only, 201, appears on GET /models; duplicate 409; 422 with loc', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const published: AuditEvent[] = [];
  t.after(app.kernel.events.subscribe('audit.recorded', (e) => published.push(e)));

  for (const token of [c.tokens.ownerA, c.tokens.adminA, c.tokens.keyA]) {
    assertCode(await call(app, token, 'POST', '/v1/admin/models', NEW_MODEL), 403, 'forbidden');
  }
  assertCode(await call(app, c.tokens.memberA, 'POST', '/v1/admin/models', NEW_MODEL), 403, 'forbidden');
  const res = await call(app, c.tokens.superadmin, 'POST', '/v1/admin/models', NEW_MODEL);
  assert.equal(res.statusCode, 201, res.body);
  const { created_at: createdAt, ...fields } = res.json() as Record<string, unknown>;
  assert.deepEqual(fields, { ...NEW_MODEL, blocked: false, price_per_1k_tokens: '0.00' });
  assert.equal(typeof createdAt, 'string');
  const created = published.find((e) => e.action === 'model.created');
  assert.equal(created?.targetId, NEW_MODEL.id);
  assert.equal(created?.companyId, c.platformCompanyId);
  const listed = (await call(app, c.tokens.memberA, 'GET', '/v1/models')).json();
  assert.ok(listed.some((m: { id: string }) => m.id === NEW_MODEL.id));

  assertCode(await call(app, c.tokens.superadmin, 'POST', '/api/v1/admin/models', NEW_MODEL), 409, 'conflict');
  assertInvalid(await call(app, c.tokens.superadmin, 'POST', '/v1/admin/models', { ...NEW_MODEL, id: 'Bad Id' }), 'body.id');
  assertInvalid(await call(app, c.tokens.superadmin, 'POST', '/v1/admin/models', { ...NEW_MODEL, id: 'x2', credit_cost: -1 }), 'body.credit_cost');
  assertInvalid(await call(app, c.tokens.superadmin, 'POST', '/v1/admin/models', { ...NEW_MODEL, id: 'x2', credit_cost: 1.5 }), 'body.credit_cost');
  assertInvalid(await call(app, c.tokens.superadmin, 'POST', '/v1/admin/models', { ...NEW_MODEL, id: 'x2', context_length: 0 }), 'body.context_length');
  assertInvalid(await call(app, c.tokens.superadmin, 'POST', '/v1/admin/models', { ...NEW_MODEL, id: 'x2', display_name: '' }), 'body.display_name');
  assertInvalid(await call(app, c.tokens.superadmin, 'POST', '/v1/admin/models', { ...NEW_MODEL, id: 'x2', price: 3 }), 'body.price');
  const { provider: _omit, ...noProvider } = NEW_MODEL;
  assertInvalid(await call(app, c.tokens.superadmin, 'POST', '/v1/admin/models', { ...noProvider, id: 'x2' }), 'body.provider');
  // A blocked model may be created blocked: it is listed for admins only.
  const hidden = await call(app, c.tokens.superadmin, 'POST', '/v1/admin/models', { ...NEW_MODEL, id: 'acme-secret', blocked: true });
  assert.equal(hidden.statusCode, 201, hidden.body);
  assert.ok(!(await call(app, c.tokens.ownerA, 'GET', '/v1/models')).json().some((m: { id: string }) => m.id === 'acme-secret'));

  // GraphQL runs the same checks in the service.
  const bad = await gql(app, c.tokens.superadmin, `mutation { createModel(input: { id: "UPPER", displayName: "x", provider: "p", family: "f", creditCost: -2, contextLength: 0 }) { id } }`);
  assert.equal(bad.errors?.[0]?.extensions.code, 'validation_error');
});

test('PATCH /admin/models/{id}: blocking bites at once on GET /models and catalog.requireUsable; unknown 404; audited', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const published: AuditEvent[] = [];
  t.after(app.kernel.events.subscribe('audit.recorded', (e) => published.push(e)));
  const usable = (id: string) => inContext(app.kernel.orm, () => app.domains.catalog.models.requireUsable(id));

  assert.equal((await usable('gpt-4o')).id, 'gpt-4o');
  await rejects(usable('no-such-model'), 'model_not_found');
  assert.ok((await call(app, c.tokens.keyA, 'GET', '/v1/models')).json().some((m: { id: string }) => m.id === 'gpt-4o'));

  assertCode(await call(app, c.tokens.ownerA, 'PATCH', '/v1/admin/models/gpt-4o', { blocked: true }), 403, 'forbidden');
  const res = await call(app, c.tokens.superadmin, 'PATCH', '/v1/admin/models/gpt-4o', { blocked: true, credit_cost: 9 });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().blocked, true);
  assert.equal(res.json().credit_cost, 9);
  assert.ok(!(await call(app, c.tokens.keyA, 'GET', '/v1/models')).json().some((m: { id: string }) => m.id === 'gpt-4o'));
  assert.ok(!(await call(app, c.tokens.keyA, 'GET', '/api/v1/models')).json().some((m: { id: string }) => m.id === 'gpt-4o'));
  await rejects(usable('gpt-4o'), 'model_blocked');
  assert.equal(new AppError('model_blocked').status, 422);
  const updated = published.find((e) => e.action === 'model.updated');
  const changes = (updated?.data as { changes: Record<string, { from: unknown; to: unknown }> }).changes;
  assert.deepEqual(changes.blocked, { from: false, to: true });
  assert.equal(changes.creditCost?.to, 9);

  const unblocked = await call(app, c.tokens.superadmin, 'PATCH', '/v1/admin/models/gpt-4o', { blocked: false });
  assert.equal(unblocked.json().blocked, false);
  assert.equal((await usable('gpt-4o')).creditCost, 9);

  assertCode(await call(app, c.tokens.superadmin, 'PATCH', '/v1/admin/models/no-such-model', { blocked: true }), 404, 'model_not_found');
  assertInvalid(await call(app, c.tokens.superadmin, 'PATCH', '/v1/admin/models/gpt-4o', { context_length: -5 }), 'body.context_length');
  assertInvalid(await call(app, c.tokens.superadmin, 'PATCH', '/v1/admin/models/gpt-4o', { id: 'renamed' }), 'body.id');
  assertCode(await call(app, c.tokens.memberA, 'PATCH', '/v1/admin/models/gpt-4o', { blocked: true }), 403, 'forbidden');
  // A no-op patch changes nothing and records nothing.
  const before = published.filter((e) => e.action === 'model.updated').length;
  assert.equal((await call(app, c.tokens.superadmin, 'PATCH', '/v1/admin/models/gpt-4o', {})).statusCode, 200);
  assert.equal(published.filter((e) => e.action === 'model.updated').length, before);
});

test('a price set through the admin API (REST create, GraphQL patch) is what usage of the model costs, so a spending budget stops it with 402 budget_exhausted; a bad price is 422', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const ledger = app.domains.billing.ledger;
  const priced = { ...NEW_MODEL, price_per_1k_tokens: '0.01' };
  for (const bad of ['-1', 'abc', '0.0000001', '1000.000001', '1e3']) {
    assertInvalid(await call(app, c.tokens.superadmin, 'POST', '/v1/admin/models', { ...priced, price_per_1k_tokens: bad }), 'body.price_per_1k_tokens');
  }
  const res = await call(app, c.tokens.superadmin, 'POST', '/v1/admin/models', priced);
  assert.equal(res.statusCode, 201, res.body);
  assert.equal(res.json().price_per_1k_tokens, '0.01');
  const listed = (await call(app, c.tokens.ownerA, 'GET', '/v1/admin/models')).json() as { id: string; price_per_1k_tokens: string }[];
  assert.equal(listed.find((m) => m.id === priced.id)?.price_per_1k_tokens, '0.01');

  /** Company's budget of 0.01, then 1,000 tokens on the model: a spend of 0.01 that the next reserve runs into. */
  async function spendsTheBudget(companyId: string, model: string, tokens: number, key: string) {
    const set = await call(app, c.tokens.superadmin, 'PUT', `/v1/admin/companies/${companyId}/budget`, { budget: '0.01' });
    assert.equal(set.statusCode, 200, set.body);
    const hold = await inContext(app.kernel.orm, () => ledger.reserve({ companyId, credits: 10, key: `${key}-1`, feature: 'chat', model }));
    const settled = await inContext(app.kernel.orm, () => ledger.commit(hold.id, { credits: 10, tokens }));
    assert.equal(settled.costMicros, 10_000);
    const error = await inContext(app.kernel.orm, () => ledger.reserve({ companyId, credits: 1, key: `${key}-2`, feature: 'chat', model })).catch((e: unknown) => e);
    assert.ok(error instanceof AppError && error.code === 'budget_exhausted' && error.status === 402, String(error));
  }
  await spendsTheBudget(c.a.companyId, priced.id, 1000, 'rest');
  const [record] = await sql<{ cost_micros: number }>(app, 'select cost_micros from usage_records where model = ?', [priced.id]);
  assert.equal(record.cost_micros, 10_000);

  // A model created without a price costs nothing until one is set; GraphQL sets it as REST does.
  const unpriced = (await call(app, c.tokens.superadmin, 'POST', '/v1/admin/models', { ...NEW_MODEL, id: 'acme-small-1' })).json();
  assert.equal(unpriced.price_per_1k_tokens, '0.00');
  const mutation = 'mutation($price: String) { updateModel(id: "acme-small-1", input: { pricePer1kTokens: $price }) { pricePer1kTokens } }';
  for (const bad of ['-1', 'abc', '0.0000001']) {
    assert.equal((await gql(app, c.tokens.superadmin, mutation, { price: bad })).errors?.[0]?.extensions.code, 'validation_error', bad);
  }
  assertInvalid(await call(app, c.tokens.superadmin, 'PATCH', '/v1/admin/models/acme-small-1', { price_per_1k_tokens: '-1' }), 'body.price_per_1k_tokens');
  const patched = await gql(app, c.tokens.superadmin, mutation, { price: '0.005' });
  assert.deepEqual(patched.data, { updateModel: { pricePer1kTokens: '0.005' } }, JSON.stringify(patched));
  await spendsTheBudget(c.b.companyId, 'acme-small-1', 2000, 'gql');
  const audit = await sql<{ data: string }>(app, "select data from audit_events where action = 'model.updated' and target_id = 'acme-small-1'");
  assert.deepEqual(JSON.parse(audit[0].data).changes, { pricePer1kTokens: { from: '0.00', to: '0.005' } });
});

test('a seeded model a superadmin made free (price 0) stays free when the catalog is seeded again, as at every start', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const res = await call(app, c.tokens.superadmin, 'PATCH', '/v1/admin/models/gpt-4o-mini', { price_per_1k_tokens: '0' });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().price_per_1k_tokens, '0.00');
  await inContext(app.kernel.orm, () => app.domains.catalog.models.seed(readSeed<ModelSeed[]>('models.json')));
  assert.equal(app.domains.catalog.models.priceMicrosPer1kTokens('gpt-4o-mini'), 0);
  assert.equal((await call(app, c.tokens.superadmin, 'GET', '/v1/admin/models')).json().find((m: { id: string }) => m.id === 'gpt-4o-mini').price_per_1k_tokens, '0.00');
});
