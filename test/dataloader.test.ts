import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { bearer, build, login, seedOwner } from './helper';
import { sqlDuring } from './sql-counter';

async function gql(app: FastifyInstance, token: string, query: string) {
  const res = await app.inject({ method: 'POST', url: '/graphql', payload: { query }, headers: bearer(token) });
  const body = res.json();
  assert.equal(body.errors, undefined, res.body);
  return body.data;
}

async function addAuditEvents(app: FastifyInstance, companyId: string, n: number) {
  for (let i = 0; i < n; i++) {
    await app.domains.audit.log.record({
      action: 'test.event',
      companyId,
      actor: { actorType: 'system', actorId: null, actorLabel: 'test' },
      data: { i },
    });
  }
}

/** Statements that read data; `pragma data_version` only asks whether cached reads are still current. */
const dataReads = (log: string[]) => log.filter((sql) => sql !== 'pragma data_version');

const ME_AND_AUDIT = '{ me { company { plan { id } } } auditLog(perPage: 100) { total items { id action } } }';

test('the spy sees statements of every connection', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const seen = await sqlDuring(() => login(app, owner.email));
  assert.ok(seen.some((sql) => /\busers\b/i.test(sql)), `login reads users: ${seen.join('\n')}`);
  assert.ok(seen.some((sql) => /^insert/i.test(sql)), 'login writes');
});

test('me + auditLog costs a bounded number of SQL statements, the same for 5 and 15 items', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app); // company.created
  const other = await seedOwner(app, undefined, 'Other');
  const { access_token } = await login(app, owner.email); // auth.login
  await addAuditEvents(app, owner.companyId, 3);
  await addAuditEvents(app, other.companyId, 20);
  // Warm-up: the credential is now resolved and cached, like on any busy connection.
  await gql(app, access_token, ME_AND_AUDIT);
  // A write elsewhere, so this request finds the read cache as cold as the next one will.
  await addAuditEvents(app, other.companyId, 1);

  let data: { me: { company: { plan: { id: string } } }; auditLog: { total: number; items: unknown[] } } | undefined;
  const five = dataReads(await sqlDuring(async () => (data = await gql(app, access_token, ME_AND_AUDIT))));
  assert.equal(data!.auditLog.items.length, 5);
  assert.equal(data!.me.company.plan.id, 'starter');

  await addAuditEvents(app, owner.companyId, 10);
  const fifteen = dataReads(await sqlDuring(async () => (data = await gql(app, access_token, ME_AND_AUDIT))));
  assert.equal(data!.auditLog.items.length, 15);
  assert.equal(data!.auditLog.total, 15);

  assert.equal(fifteen.length, five.length, `5 items:\n${five.join('\n')}\n15 items:\n${fifteen.join('\n')}`);
  // viewer, plan batch, audit page, audit count: a handful, never one per item.
  assert.ok(five.length <= 6, `too many statements:\n${five.join('\n')}`);
  assert.equal(five.filter((sql) => /\bplans\b/i.test(sql)).length, 1, five.join('\n'));
  assert.equal(five.filter((sql) => /\baudit_events\b/i.test(sql)).length <= 2, true, five.join('\n'));
});

test('the plan loader reads a company plan once per request, however often it is selected', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  await gql(app, access_token, '{ me { role } }');

  const plansIn = (log: string[]) => log.filter((sql) => /\bplans\b/i.test(sql));
  // Any write empties the read cache, so each request below reads the plan afresh.
  const write = () => app.domains.audit.log.record({
    action: 'test.event',
    companyId: owner.companyId,
    actor: { actorType: 'system', actorId: null, actorLabel: 'test' },
  });
  await write();
  const once = await sqlDuring(() => gql(app, access_token, '{ me { company { plan { id } } } }'));
  await write();
  const twice = await sqlDuring(async () => {
    const data = await gql(
      app,
      access_token,
      '{ me { company { plan { id } } user { company { id plan { id monthlyCredits } } } } }',
    );
    assert.equal(data.me.company.plan.id, 'starter');
    assert.equal(data.me.user.company.plan.id, 'starter');
  });
  assert.equal(plansIn(once).length, 1, once.join('\n'));
  assert.equal(plansIn(twice).length, 1, `plan read again for the same company:\n${twice.join('\n')}`);
});
