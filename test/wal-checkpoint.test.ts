import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { build } from './helper';
import { BACKSTOP_PAGES } from '../src/db/checkpointer';

async function until(check: () => boolean, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(50)) if (check()) return true;
  return check();
}

/** Writes about `mb` megabytes through the write connection, in transactions of 1 MB. */
async function writeMegabytes(app: Awaited<ReturnType<typeof build>>, mb: number) {
  await app.kernel.writer.write((sql) => sql.run('create table if not exists ballast (data blob)'));
  for (let i = 0; i < mb; i++) {
    await app.kernel.writer.write((sql) => {
      for (let j = 0; j < 16; j++) sql.run('insert into ballast (data) values (randomblob(65536))');
    });
  }
}

test('checkpoints leave the write connection: its own automatic checkpoint is only a backstop', async (t) => {
  const app = await build(t);
  const [row] = await app.kernel.orm.em.fork().getConnection().execute<{ wal_autocheckpoint: number }[]>('pragma wal_autocheckpoint');
  assert.equal(row!.wal_autocheckpoint, BACKSTOP_PAGES);
});

test('the background WAL checkpoint starts by itself once the WAL passes 4 MB, copies it into the database, and keeps it from growing', async (t) => {
  const app = await build(t);
  const { checkpointer } = app.kernel;
  const wal = `${app.config.databaseFile}-wal`;
  await writeMegabytes(app, 1);
  await sleep(1200);
  assert.equal(checkpointer.checkpointed, 0, 'a small WAL starts no thread');

  await writeMegabytes(app, 6);
  assert.ok(await until(() => checkpointer.checkpointed > 0, 5000), 'the WAL was checkpointed in the background');
  // Fully checkpointed, the WAL is written again from its start: 30 MB more leave it far below 30 MB.
  const before = fs.statSync(wal).size;
  for (let i = 0; i < 10; i++) {
    await writeMegabytes(app, 3);
    await sleep(300);
  }
  const after = fs.statSync(wal).size;
  assert.ok(after < before + 16 * 1024 * 1024, `WAL ${before} -> ${after} bytes`);
  assert.ok(checkpointer.checkpointed > 30 * 256, `${checkpointer.checkpointed} pages checkpointed`);
  const rows = await app.kernel.writer.write((sql) => sql.get<{ n: number }>('select count(*) as n from ballast'));
  assert.equal(rows!.n, 37 * 16);
});

test('closing the server stops the background checkpoint thread', async (t) => {
  const app = await build(t);
  app.kernel.checkpointer.start();
  await writeMegabytes(app, 2);
  assert.ok(await until(() => app.kernel.checkpointer.checkpointed > 0, 3000));
  await app.close();
  // A thread left running would keep its connection, and the WAL beside the database file.
  assert.equal(fs.existsSync(`${app.config.databaseFile}-wal`), false);
});
