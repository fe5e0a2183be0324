import { test } from 'node:test';
import assert from 'node:assert/strict';
import { build } from './helper';

test('every migration is applied on start', async (t) => {
  const app = await build(t);
  const pending = await app.kernel.orm.getMigrator().getPendingMigrations();
  assert.deepEqual(pending.map((m) => m.name), []);
  const executed = await app.kernel.orm.getMigrator().getExecutedMigrations();
  assert.ok(executed.length > 0, 'no migration ran');
});

test('the migrations produce exactly the schema the entities describe', async (t) => {
  const app = await build(t);
  const diff = await app.kernel.orm.getSchemaGenerator().getUpdateSchemaSQL({ wrap: false });
  assert.equal(diff.trim(), '', `entities and migrations disagree; add a migration for:\n${diff}`);
});

test('the database runs with foreign keys on and the WAL journal', async (t) => {
  const app = await build(t);
  const connection = app.kernel.orm.em.fork().getConnection();
  const [foreignKeys] = await connection.execute<{ foreign_keys: number }[]>('pragma foreign_keys');
  assert.equal(foreignKeys.foreign_keys, 1);
  const [journal] = await connection.execute<{ journal_mode: string }[]>('pragma journal_mode');
  assert.equal(journal.journal_mode, 'wal');
});
