import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { build, seedOwner, sql } from './helper';
import { assertLedgerAddsUp } from './ledger-helper';
import { inContext } from '../src/boot';
import { transaction } from '../src/db/unit-of-work';
import { AppError } from '../src/errors/catalog';
import { calendarPeriod } from '../src/domains/billing';

const ledger = (app: FastifyInstance) => app.domains.billing.ledger;
const run = <T>(app: FastifyInstance, fn: () => Promise<T>) => inContext(app.kernel.orm, fn);

async function rejects(promise: Promise<unknown>, code: string) {
  await assert.rejects(promise, (error: unknown) => error instanceof AppError && error.code === code);
}

test('a new company gets its plan\'s monthly credits for the current calendar month', async (t) => {
  const app = await build(t);
  const { companyId } = await seedOwner(app);
  const balance = ledger(app).balance(companyId);
  const period = calendarPeriod(new Date());
  assert.equal(balance.monthly, 2000);
  assert.equal(balance.available, 2000);
  assert.equal(balance.periodKey, period.periodKey);
  assert.equal(balance.periodEnd?.toISOString(), period.periodEnd.toISOString());
  await assertLedgerAddsUp(app);
});

test('reserve holds credits, commit spends up to the hold and returns the rest, release returns all', async (t) => {
  const app = await build(t);
  const { companyId } = await seedOwner(app);
  const hold = await run(app, () => ledger(app).reserve({ companyId, credits: 100, key: 'req-1', feature: 'chat' }));
  assert.equal(ledger(app).balance(companyId).available, 1900);
  assert.equal(ledger(app).balance(companyId).held, 100);
  const settled = await run(app, () => ledger(app).commit(hold.id, { credits: 35, tokens: 1200, model: 'gpt-4o' }));
  assert.equal(settled.credits, 35);
  assert.equal(ledger(app).balance(companyId).available, 1965);
  assert.equal(ledger(app).balance(companyId).held, 0);
  const [usage] = await sql<{ credits: number; tokens: number; hold_id: string }>(app, 'select * from usage_records where company_id = ?', [companyId]);
  assert.deepEqual([usage.credits, usage.tokens, usage.hold_id], [35, 1200, hold.id]);

  const second = await run(app, () => ledger(app).reserve({ companyId, credits: 50, key: 'req-2', feature: 'chat' }));
  await run(app, () => ledger(app).release(second.id));
  assert.equal(ledger(app).balance(companyId).available, 1965);
  await assertLedgerAddsUp(app);
});

test('a commit above the hold spends only the hold', async (t) => {
  const app = await build(t);
  const { companyId } = await seedOwner(app);
  const hold = await run(app, () => ledger(app).reserve({ companyId, credits: 10, key: 'r', feature: 'chat' }));
  const settled = await run(app, () => ledger(app).commit(hold.id, { credits: 500 }));
  assert.equal(settled.credits, 10);
  assert.equal(ledger(app).balance(companyId).available, 1990);
});

test('replayed ledger writes change nothing: the same key answers the first result', async (t) => {
  const app = await build(t);
  const { companyId } = await seedOwner(app);
  const first = await run(app, () => ledger(app).reserve({ companyId, credits: 40, key: 'same', feature: 'chat' }));
  const again = await run(app, () => ledger(app).reserve({ companyId, credits: 40, key: 'same', feature: 'chat' }));
  assert.equal(again.id, first.id);
  assert.equal(ledger(app).balance(companyId).held, 40);
  await run(app, () => ledger(app).commit(first.id, { credits: 30 }));
  const replay = await run(app, () => ledger(app).commit(first.id, { credits: 30 }));
  assert.equal(replay.credits, 30);
  await rejects(run(app, () => ledger(app).release(first.id)), 'hold_settled');
  assert.equal(await run(app, () => ledger(app).topUp({ companyId, credits: 500, key: 'pi_1' })), true);
  assert.equal(await run(app, () => ledger(app).topUp({ companyId, credits: 500, key: 'pi_1' })), false);
  const period = calendarPeriod(new Date());
  assert.equal(await run(app, () => ledger(app).allocate({ companyId, credits: 2000, ...period })), false);
  assert.equal(ledger(app).balance(companyId).available, 1970 + 500);
  const [{ n }] = await sql<{ n: number }>(app, 'select count(*) as n from usage_records where company_id = ?', [companyId]);
  assert.equal(n, 1);
  await assertLedgerAddsUp(app);
});

test('not enough credits answers 402 insufficient_credits with what is needed and the balance', async (t) => {
  const app = await build(t);
  const { companyId } = await seedOwner(app);
  const error = await run(app, () => ledger(app).reserve({ companyId, credits: 2001, key: 'big', feature: 'chat' })).catch((e: unknown) => e);
  assert.ok(error instanceof AppError);
  assert.equal(error.code, 'insufficient_credits');
  assert.equal(error.status, 402);
  assert.equal(error.message, 'needs 2001 credits; balance 2000');
  assert.deepEqual(error.extra, { required: 2001, balance: 2000 });
  assert.equal(ledger(app).balance(companyId).held, 0);
});

test('monthly credits are spent first, then granted, then purchased; what returns goes back where it came from', async (t) => {
  const app = await build(t);
  const { companyId } = await seedOwner(app);
  await run(app, () => ledger(app).topUp({ companyId, credits: 300, key: 'pi_a' }));
  await sql(app, "update credit_accounts set granted = 200 where company_id = ?", [companyId]);
  await sql(
    app,
    `insert into credit_entries (id, company_id, kind, idempotency_key, credits, monthly, granted, purchased, held, created_at)
     values ('00000000-0000-7000-8000-000000000001', ?, 'grant', 'grant:test', 200, 0, 200, 0, 0, 0)`,
    [companyId],
  );
  const hold = await run(app, () => ledger(app).reserve({ companyId, credits: 2400, key: 'all', feature: 'bulk' }));
  let b = ledger(app).balance(companyId);
  assert.deepEqual([b.monthly, b.granted, b.purchased, b.held], [0, 0, 100, 2400]);
  await run(app, () => ledger(app).commit(hold.id, { credits: 2050 }));
  b = ledger(app).balance(companyId);
  // 350 unspent: the 200 purchased first, then 150 of the granted.
  assert.deepEqual([b.monthly, b.granted, b.purchased, b.held], [0, 150, 300, 0]);
  await assertLedgerAddsUp(app);
});

test('a new period expires the unused monthly credits and never rolls back to an older one', async (t) => {
  const app = await build(t);
  const { companyId } = await seedOwner(app);
  const hold = await run(app, () => ledger(app).reserve({ companyId, credits: 500, key: 'open', feature: 'chat' }));
  const next = calendarPeriod(new Date(Date.now() + 32 * 86400_000));
  assert.equal(await run(app, () => ledger(app).allocate({ companyId, credits: 2000, ...next })), true);
  let b = ledger(app).balance(companyId);
  assert.deepEqual([b.monthly, b.held, b.periodKey], [2000, 500, next.periodKey]);
  // The old period's held monthly credits expire when released, not return into the new period.
  await run(app, () => ledger(app).release(hold.id));
  b = ledger(app).balance(companyId);
  assert.deepEqual([b.monthly, b.held], [2000, 0]);
  const old = calendarPeriod(new Date(Date.now() - 40 * 86400_000));
  assert.equal(await run(app, () => ledger(app).allocate({ companyId, credits: 6000, ...old })), false);
  assert.equal(ledger(app).balance(companyId).monthly, 2000);
  const kinds = await sql<{ kind: string }>(app, 'select kind from credit_entries where company_id = ? order by id', [companyId]);
  assert.deepEqual(kinds.map((k) => k.kind), ['allocation', 'hold', 'expiry', 'allocation', 'release', 'expiry']);
  await assertLedgerAddsUp(app);
});

test('a ledger write inside a rolled-back transaction leaves no trace', async (t) => {
  const app = await build(t);
  const { companyId } = await seedOwner(app);
  await assert.rejects(
    run(app, () =>
      transaction(app.kernel.orm, async () => {
        await ledger(app).topUp({ companyId, credits: 999, key: 'pi_rollback' });
        throw new Error('the event failed after its ledger write');
      }),
    ),
    /the event failed/,
  );
  assert.equal(ledger(app).balance(companyId).purchased, 0);
  assert.equal(await run(app, () => ledger(app).topUp({ companyId, credits: 999, key: 'pi_rollback' })), true);
  assert.equal(ledger(app).balance(companyId).purchased, 999);
  await assertLedgerAddsUp(app);
});

test('holds past their timeout are released by the hold expiry job', async (t) => {
  const app = await build(t);
  const { companyId } = await seedOwner(app);
  const hold = await run(app, () => ledger(app).reserve({ companyId, credits: 70, key: 'crashed', feature: 'chat' }));
  assert.equal(await run(app, () => ledger(app).releaseExpiredHolds()), 0);
  assert.equal(await run(app, () => ledger(app).releaseExpiredHolds(new Date(hold.expiresAt.getTime() + 1))), 1);
  const b = ledger(app).balance(companyId);
  assert.deepEqual([b.available, b.held], [2000, 0]);
  await assertLedgerAddsUp(app);
});

test('credits.changed announces each committed balance change', async (t) => {
  const app = await build(t);
  const { companyId } = await seedOwner(app);
  const seen: number[] = [];
  const stop = app.kernel.events.subscribe('credits.changed', (e) => {
    if (e.companyId === companyId) seen.push(e.balance.available);
  });
  t.after(() => stop());
  await run(app, () => ledger(app).topUp({ companyId, credits: 10, key: 'pi_ev' }));
  await run(app, () => ledger(app).topUp({ companyId, credits: 10, key: 'pi_ev' }));
  assert.deepEqual(seen, [2010]);
});
