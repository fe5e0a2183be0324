import { test } from 'node:test';
import assert from 'node:assert/strict';
import { build, seedOwner, sql } from './helper';
import { User } from '../src/domains/identity/user.entity';
import { AuditEvent } from '../src/domains/audit/audit-event.entity';
import { afterCommit, beforeCommit, currentEm, runInUnitOfWork, transaction } from '../src/db/unit-of-work';

test('a flush of loaded but unchanged entities writes nothing (dates do not read as dirty)', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const em = app.kernel.orm.em.fork();
  await em.findOneOrFail(User, { id: owner.userId }, { populate: ['company'] });
  const writes: string[] = [];
  const connection = em.getConnection();
  const execute = connection.execute.bind(connection);
  connection.execute = ((query: string, ...rest: unknown[]) => {
    writes.push(String(query));
    return (execute as (...args: unknown[]) => unknown)(query, ...rest);
  }) as typeof connection.execute;
  await em.flush();
  assert.deepEqual(writes, []);
});

test('a flush does not undo a concurrent native update of a loaded entity', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  await app.kernel.orm.em.fork().nativeUpdate(User, { id: owner.userId }, { lastLoginAt: new Date(Date.now() - 60_000) });
  const em = app.kernel.orm.em.fork();
  const user = await em.findOneOrFail(User, { id: owner.userId });
  // Another unit of work records a login meanwhile.
  const later = new Date(Date.now() + 60_000);
  await app.kernel.orm.em.fork().nativeUpdate(User, { id: owner.userId }, { lastLoginAt: later, name: 'Renamed' });
  user.role = 'owner';
  await em.flush();
  const fresh = await app.kernel.orm.em.fork().findOneOrFail(User, { id: owner.userId });
  assert.equal(fresh.lastLoginAt?.getTime(), later.getTime());
  assert.equal(fresh.name, 'Renamed');
});

test('every date property of every entity is mapped with DateTimeType', async (t) => {
  // The string type 'datetime' snapshots a Date but compares epoch milliseconds,
  // so every loaded entity looked changed and each flush rewrote its dates.
  const app = await build(t);
  const offenders: string[] = [];
  for (const meta of Object.values(app.kernel.orm.getMetadata().getAll())) {
    for (const prop of Object.values(meta.properties)) {
      // DateTimeType normalises to type 'Date', whose snapshot and comparison agree.
      if (prop.runtimeType === 'Date' && prop.type !== 'Date') offenders.push(`${meta.className}.${prop.name}: ${prop.type}`);
    }
  }
  assert.deepEqual(offenders, []);
});

test('afterCommit runs once when the flush commits, and not for a later commit', async (t) => {
  const app = await build(t);
  const orm = app.kernel.orm;
  let calls = 0;
  await runInUnitOfWork(orm, async () => {
    const em = currentEm(orm);
    em.create(AuditEvent, { action: 'test.first', actorType: 'system' });
    afterCommit(em, () => calls++);
    assert.equal(calls, 0, 'not before the commit');
    await em.flush();
    assert.equal(calls, 1);
    em.create(AuditEvent, { action: 'test.second', actorType: 'system' });
    await em.flush();
    assert.equal(calls, 1, 'a callback runs for one commit only');
  });
});

test('transaction: a rollback runs no afterCommit callback and stores nothing; a commit runs them once, at the end', async (t) => {
  const app = await build(t);
  const orm = app.kernel.orm;
  const events: string[] = [];
  await runInUnitOfWork(orm, async () => {
    await assert.rejects(
      transaction(orm, async (em) => {
        em.create(AuditEvent, { action: 'test.rolled_back', actorType: 'system' });
        afterCommit(em, () => events.push('rolled back'));
        await em.flush();
        throw new Error('boom');
      }),
      /boom/,
    );
    await transaction(orm, async (em) => {
      em.create(AuditEvent, { action: 'test.committed', actorType: 'system' });
      afterCommit(em, () => events.push('committed'));
      // A flush inside the transaction is no commit yet.
      await em.flush();
      assert.deepEqual(events, []);
    });
  });
  assert.deepEqual(events, ['committed']);
  const stored = await sql<{ action: string }>(app, "select action from audit_events where action like 'test.%'");
  assert.deepEqual(stored.map((row) => row.action), ['test.committed']);
});

test('transaction: currentEm inside is the transaction em, nested ones are savepoints whose callbacks wait for the outer commit', async (t) => {
  const app = await build(t);
  const orm = app.kernel.orm;
  const events: string[] = [];
  await runInUnitOfWork(orm, async () => {
    const outer = currentEm(orm);
    await transaction(orm, async (em) => {
      assert.equal(currentEm(orm), em);
      assert.notEqual(em, outer);
      assert.ok(em.isInTransaction());
      await transaction(orm, async (inner) => {
        assert.equal(currentEm(orm), inner);
        assert.notEqual(inner, em);
        inner.create(AuditEvent, { action: 'test.inner', actorType: 'system' });
        afterCommit(inner, () => events.push('inner'));
      });
      await assert.rejects(
        transaction(orm, async (inner) => {
          inner.create(AuditEvent, { action: 'test.inner_rolled_back', actorType: 'system' });
          afterCommit(inner, () => events.push('inner rolled back'));
          await inner.flush();
          throw new Error('boom');
        }),
      );
      assert.equal(currentEm(orm), em, 'the scope is restored after a nested transaction');
      assert.deepEqual(events, [], 'a savepoint is no commit');
    });
    assert.equal(currentEm(orm), outer, 'the scope is restored after the transaction');
  });
  assert.deepEqual(events, ['inner']);
  const stored = await sql<{ action: string }>(app, "select action from audit_events where action like 'test.%'");
  assert.deepEqual(stored.map((row) => row.action), ['test.inner']);
});

test('transaction: changes pending before it commit on their own, so its rollback cannot lose them', async (t) => {
  const app = await build(t);
  const orm = app.kernel.orm;
  await runInUnitOfWork(orm, async () => {
    const em = currentEm(orm);
    const event = em.create(AuditEvent, { action: 'test.before', actorType: 'system' });
    await em.flush();
    event.action = 'test.changed';
    await assert.rejects(
      transaction(orm, async () => {
        throw new Error('boom');
      }),
    );
  });
  const stored = await sql<{ action: string }>(app, "select action from audit_events where action like 'test.%'");
  assert.deepEqual(stored.map((row) => row.action), ['test.changed']);
});

test('beforeCommit runs inside the transaction: its error rolls the work back', async (t) => {
  const app = await build(t);
  const orm = app.kernel.orm;
  let committed = 0;
  await runInUnitOfWork(orm, async () => {
    const em = currentEm(orm);
    em.create(AuditEvent, { action: 'test.vetoed', actorType: 'system' });
    beforeCommit(em, async () => {
      throw new Error('veto');
    });
    afterCommit(em, () => committed++);
    await assert.rejects(em.flush(), /veto/);
  });
  assert.equal(committed, 0);
  assert.deepEqual(await sql(app, "select action from audit_events where action like 'test.%'"), []);
});
