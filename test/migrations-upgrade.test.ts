import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Migration } from '@mikro-orm/migrations';
import { recordReplacedMigrations } from '../src/db/migrations';
import { openDatabase } from '../src/db/orm';
import { MailOutbox } from '../src/mail/outbox.entity';

function tempDir(t: { after: (fn: () => unknown) => void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-upgrade-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('a migration is recorded in place of those it replaces only when all of them ran', async (t) => {
  class Noop extends Migration {
    override up(): void {}
  }
  const orm = await openDatabase(path.join(tempDir(t), 'replaces.sqlite'), { entities: [MailOutbox], migrations: [] }, { migrate: false });
  t.after(() => orm.close());
  await orm.getMigrator().getExecutedMigrations(); // creates the migrations table
  await orm.em.getConnection().execute("insert into `mikro_orm_migrations` (`name`) values ('Old')");

  const recorded = await recordReplacedMigrations(orm, [
    { name: 'Whole', class: Noop, replaces: ['Old'] },
    { name: 'Partly', class: Noop, replaces: ['Old', 'NeverRan'] },
    { name: 'Plain', class: Noop },
  ]);
  assert.deepEqual(recorded, ['Whole']);
  const executed = (await orm.getMigrator().getExecutedMigrations()).map((row) => row.name);
  assert.deepEqual(executed, ['Old', 'Whole']);
  assert.deepEqual(await recordReplacedMigrations(orm, [{ name: 'Whole', class: Noop, replaces: ['Old'] }]), [], 'already recorded');

  await assert.rejects(
    recordReplacedMigrations(orm, [
      { name: 'Old', class: Noop },
      { name: 'Whole', class: Noop, replaces: ['Old'] },
    ]),
    /replaces Old, which is still listed/,
  );
});
