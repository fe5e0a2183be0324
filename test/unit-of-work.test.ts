import { test } from 'node:test';
import assert from 'node:assert/strict';
import { build, seedOwner } from './helper';
import { User } from '../src/domains/identity/user.entity';

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
