import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../src/errors/catalog';
import { inContext } from '../src/boot';
import type { AuditEvent } from '../src/domains/audit/audit-event.entity';
import { assertCode, assertInvalid, call, cast, gql } from './admin-helper';
import { build } from './helper';

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
    assert.deepEqual(Object.keys(gpt).sort(), ['blocked', 'context_length', 'created_at', 'credit_cost', 'display_name', 'family', 'id', 'provider']);
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
  assert.deepEqual(fields, { ...NEW_MODEL, blocked: false });
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
