import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { build } from './helper';
import { assertCode, assertInvalid, call, cast, sql } from './admin-helper';
import { inContext } from '../src/boot';
import { csvCell } from '../rest-compat/routes/usage.routes';

const DAY = 86_400_000;

async function record(app: FastifyInstance, r: { companyId: string; userId?: string | null; apiKeyId?: string | null; model: string; feature: string; credits: number; tokens: number; costMicros: number; at?: number }) {
  await sql(
    app,
    'insert into usage_records (id, company_id, user_id, api_key_id, model, feature, credits, tokens, cost_micros, created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    [randomUUID(), r.companyId, r.userId ?? null, r.apiKeyId ?? null, r.model, r.feature, r.credits, r.tokens, r.costMicros, r.at ?? Date.now()],
  );
}

test('a commit records its usage with the currency cost at the model\'s catalog price', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const ledger = app.domains.billing.ledger;
  const hold = await inContext(app.kernel.orm, () => ledger.reserve({ companyId: c.a.companyId, credits: 20, key: 'r1', feature: 'chat', model: 'gpt-4o', userId: c.adminA.userId }));
  const settled = await inContext(app.kernel.orm, () => ledger.commit(hold.id, { credits: 6, tokens: 1200 }));
  // gpt-4o: 0.005 per 1,000 tokens (data/models.json) -> 1,200 tokens cost 0.006.
  assert.equal(settled.costMicros, 6000);
  assert.equal(ledger.balance(c.a.companyId).spendMicros, 6000);
  const report = (await call(app, c.tokens.ownerA, 'GET', '/v1/admin/usage')).json();
  assert.deepEqual(report.rows, [{ key: 'gpt-4o', label: 'GPT-4o', requests: 1, tokens: 1200, credits: 6, cost: '0.006' }]);
  const user = (await call(app, c.tokens.ownerA, 'GET', `/v1/admin/users/${c.adminA.userId}/usage`)).json();
  assert.equal(user.items[0].cost, '0.006');
  assert.equal(user.totals.cost, '0.006');
});

test('GET /admin/usage groups by model, user, feature, api_key and day, with totals, over the last days', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const now = Date.now();
  const a = c.a.companyId;
  await record(app, { companyId: a, userId: c.adminA.userId, model: 'gpt-4o', feature: 'chat', credits: 10, tokens: 2000, costMicros: 10_000, at: now - 1000 });
  await record(app, { companyId: a, userId: c.adminA.userId, model: 'gpt-4o-mini', feature: 'research', credits: 3, tokens: 3000, costMicros: 900, at: now - 2 * DAY });
  await record(app, { companyId: a, apiKeyId: c.keyA.id, model: 'gpt-4o', feature: 'chat', credits: 5, tokens: 1000, costMicros: 5000, at: now - 3 * DAY });
  await record(app, { companyId: a, userId: c.adminA.userId, model: 'gpt-4o', feature: 'chat', credits: 99, tokens: 1, costMicros: 1, at: now - 40 * DAY });
  await record(app, { companyId: c.b.companyId, model: 'gpt-4o', feature: 'chat', credits: 1000, tokens: 1, costMicros: 1 });

  const get = async (q: string) => {
    const res = await call(app, c.tokens.adminA, 'GET', `/v1/admin/usage${q}`);
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const byModel = await get('');
  assert.deepEqual([byModel.group_by, byModel.days, byModel.currency], ['model', 30, 'usd']);
  assert.deepEqual(byModel.rows.map((r: { key: string; credits: number }) => [r.key, r.credits]), [['gpt-4o', 15], ['gpt-4o-mini', 3]]);
  assert.deepEqual(byModel.totals, { requests: 3, tokens: 6000, credits: 18, cost: '0.0159' });
  const byUser = await get('?group_by=user');
  assert.deepEqual(byUser.rows.map((r: { key: string | null; label: string | null; credits: number }) => [r.key, r.label, r.credits]), [
    [c.adminA.userId, c.adminA.email, 13],
    [null, null, 5],
  ]);
  assert.deepEqual((await get('?group_by=feature')).rows.map((r: { key: string }) => r.key), ['chat', 'research']);
  assert.deepEqual((await get('?group_by=api_key')).rows.map((r: { key: string | null }) => r.key), [null, c.keyA.id]);
  const byDay = await get('?group_by=day&days=365');
  assert.equal(byDay.rows.length, 4);
  assert.equal(byDay.rows.at(-1).key, new Date(now).toISOString().slice(0, 10));
  assert.equal(byDay.totals.credits, 117);
  assert.equal((await get('?days=1')).totals.credits, 10);

  for (const bad of ['?days=0', '?days=366', '?days=abc', '?days=1.5']) assertInvalid(await call(app, c.tokens.adminA, 'GET', `/v1/admin/usage${bad}`), 'query.days');
  assertInvalid(await call(app, c.tokens.adminA, 'GET', '/v1/admin/usage?group_by=planet'), 'query.group_by');
  assertCode(await call(app, c.tokens.memberA, 'GET', '/v1/admin/usage'), 403, 'forbidden');
  assert.equal((await call(app, c.tokens.keyA, 'GET', '/api/v1/admin/usage')).statusCode, 200);
  assertCode(await call(app, c.tokens.ownerB, 'GET', `/v1/admin/usage?company_id=${a}`), 404, 'not_found');
  assert.equal((await call(app, c.tokens.superadmin, 'GET', `/v1/admin/usage?company_id=${a}`)).json().totals.credits, 18);
  assertCode(await call(app, c.tokens.superadmin, 'GET', `/v1/admin/usage?company_id=${randomUUID()}`), 404, 'not_found');
});

test('the CSV export streams the report as a download and neutralises spreadsheet formulas', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const a = c.a.companyId;
  const features = ['=HYPERLINK("http://evil.example","x")', '+1', '-2', '@SUM(A1)', 'plain, with "quotes"\nand a line'];
  for (const [i, feature] of features.entries()) await record(app, { companyId: a, model: 'gpt-4o', feature, credits: 10 - i, tokens: 100, costMicros: 1500 });
  const res = await call(app, c.tokens.ownerA, 'GET', '/v1/admin/usage/export?group_by=feature&days=7');
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.headers['content-type'], 'text/csv; charset=utf-8');
  assert.equal(res.headers['content-disposition'], 'attachment; filename="usage-feature-7d.csv"');
  const lines = res.body.split('\r\n');
  assert.equal(lines[0], 'feature,label,requests,tokens,credits,cost_usd');
  assert.equal(lines[1], `"'=HYPERLINK(""http://evil.example"",""x"")",,1,100,10,0.0015`);
  assert.equal(lines[2], "'+1,,1,100,9,0.0015");
  assert.equal(lines[3], "'-2,,1,100,8,0.0015");
  assert.equal(lines[4], "'@SUM(A1),,1,100,7,0.0015");
  assert.equal(lines[5], '"plain, with ""quotes""\nand a line",,1,100,6,0.0015');
  assert.equal(lines[6], 'total,,5,500,40,0.0075');
  assertInvalid(await call(app, c.tokens.ownerA, 'GET', '/v1/admin/usage/export?days=400'), 'query.days');
  assertCode(await call(app, c.tokens.memberA, 'GET', '/v1/admin/usage/export'), 403, 'forbidden');
  assert.equal((await app.inject({ method: 'GET', url: '/v1/admin/usage/export' })).statusCode, 401);
  assert.equal(csvCell(-3), '-3', 'numbers are never neutralised');
});

test('a long CSV export is read in chunks and holds every group', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const values: unknown[] = [];
  const n = 2500;
  for (let i = 0; i < n; i++) values.push(randomUUID(), c.a.companyId, 'gpt-4o', `feature-${String(i).padStart(5, '0')}`, 1, 10, 2, Date.now());
  for (let i = 0; i < n; i += 500) {
    const chunk = values.slice(i * 8, (i + 500) * 8);
    await sql(app, `insert into usage_records (id, company_id, model, feature, credits, tokens, cost_micros, created_at) values ${Array(chunk.length / 8).fill('(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`, chunk);
  }
  const res = await call(app, c.tokens.ownerA, 'GET', '/v1/admin/usage/export?group_by=feature');
  assert.equal(res.statusCode, 200);
  const lines = res.body.trimEnd().split('\r\n');
  assert.equal(lines.length, n + 2);
  assert.equal(new Set(lines.slice(1, -1).map((l) => l.split(',')[0])).size, n, 'every group once across the chunks');
  assert.equal(lines.at(-1), `total,,${n},${n * 10},${n},${(n * 2) / 1e6}`.replace(/(\.\d*?)0+$/, '$1'));
});
