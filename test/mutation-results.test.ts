import { test } from 'node:test';
import assert from 'node:assert/strict';
import { build } from './helper';
import { cast } from './admin-helper';

test('a mutation that fails fails alone: the data keeps what its sibling mutations did (a revoke answered, not hidden)', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const send = (query: string, requestId: string) =>
    app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { authorization: `Bearer ${c.tokens.superadmin}`, 'x-request-id': requestId },
      payload: { query, variables: { cid: c.a.companyId } },
    });
  const granted = await send('mutation($cid: ID!) { grantCredits(companyId: $cid, input: { credits: 10, reason: "start" }) { granted } }', 'mr-grant');
  assert.deepEqual(granted.json().data, { grantCredits: { granted: 10 } }, granted.body);

  // The second revoke would take the balance below zero; the first one ran and stays answered.
  const available = app.domains.billing.ledger.balance(c.a.companyId).available;
  const res = await send(
    `mutation($cid: ID!) { a: revokeCredits(companyId: $cid, input: { credits: ${available - 5}, reason: "a" }) { available } ` +
      'b: revokeCredits(companyId: $cid, input: { credits: 6, reason: "b" }) { available } }',
    'mr-revokes',
  );
  const body = res.json();
  assert.deepEqual(body.data, { a: { available: 5 }, b: null }, res.body);
  assert.equal(body.errors.length, 1);
  assert.deepEqual(body.errors[0].path, ['b']);
  assert.equal(app.domains.billing.ledger.balance(c.a.companyId).available, 5);

  // Every mutation of the served schema is nullable, so none can hide another.
  const mutations = app.graphql.schema.getMutationType()!.getFields();
  const nonNull = Object.values(mutations).filter((f) => String(f.type).endsWith('!'));
  assert.deepEqual(nonNull.map((f) => f.name), []);
});
