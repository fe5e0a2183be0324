import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../src/errors/catalog';
import { MAX_WAITING, OperationScheduler, UNSCHEDULED_COST } from '../subgraphs/policy/scheduler';

/**
 * The scheduler keeps a flooded process answering light requests: heavier
 * operations take turns by estimated cost, and a scheduled operation's root
 * fields leave a turn of the event loop between them.
 */


test('a light operation is not scheduled and pays nothing', () => {
  const scheduler = new OperationScheduler(1000);
  assert.equal(scheduler.schedule(UNSCHEDULED_COST - 1), undefined);
});

test('heavier operations run while their costs fit the capacity, the rest wait in order', async () => {
  const scheduler = new OperationScheduler(1000);
  const order: string[] = [];
  const a = scheduler.schedule(600)!;
  const b = scheduler.schedule(600)!;
  const c = scheduler.schedule(300)!;
  const ran = [a.run(() => order.push('a')), b.run(() => order.push('b')), c.run(() => order.push('c'))];
  await ran[0];
  // b does not fit beside a, and c (which would fit) waits behind b: first come, first served.
  assert.deepEqual(order, ['a']);
  await Promise.all(ran);
  assert.deepEqual(order, ['a', 'b', 'c']);
});

test('a grant is given back once its operation has been idle for a turn, also when no field ran', async () => {
  const scheduler = new OperationScheduler(1000);
  scheduler.schedule(1000); // refused by the validator after admission: no field ever runs
  const next = scheduler.schedule(1000)!;
  let ran = false;
  await next.run(() => (ran = true));
  assert.equal(ran, true);
});

test('an operation over the capacity still runs, alone', async () => {
  const scheduler = new OperationScheduler(1000);
  const run = scheduler.schedule(50_000)!;
  assert.equal(await run.run(() => 'done'), 'done');
});

test('root fields of a scheduled operation leave the event loop a turn between them', async () => {
  const scheduler = new OperationScheduler(1000);
  const run = scheduler.schedule(500)!;
  const events: string[] = [];
  const fields = [1, 2, 3].map((n) => run.run(() => events.push(`field ${n}`)));
  // What another request would do meanwhile: it gets a turn before the last field.
  setImmediate(() => events.push('other request'));
  await Promise.all(fields);
  const other = events.indexOf('other request');
  assert.ok(other > 0 && other < events.length - 1, events.join(', '));
});

test('a failing root field does not stop the others nor keep the grant', async () => {
  const scheduler = new OperationScheduler(1000);
  const run = scheduler.schedule(1000)!;
  const failed = run.run(() => {
    throw new AppError('not_found');
  });
  const second = run.run(() => 'second');
  await assert.rejects(failed);
  assert.equal(await second, 'second');
  const after = scheduler.schedule(1000)!;
  assert.equal(await after.run(() => 'after'), 'after');
});

test('past MAX_WAITING operations the server is busy: 503 server_busy with Retry-After', () => {
  const scheduler = new OperationScheduler(1000);
  scheduler.schedule(1000);
  for (let i = 0; i < MAX_WAITING; i++) scheduler.schedule(1000);
  assert.throws(
    () => scheduler.schedule(1000),
    (error: unknown) => error instanceof AppError && error.code === 'server_busy' && error.status === 503 && error.headers['retry-after'] === '1',
  );
});
