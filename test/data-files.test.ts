import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildApp } from '../src/app';

const mode = (file: string) => fs.statSync(file).mode & 0o777;

test('a new database file, its -wal and -shm, and secrets.json are 0600, and a data directory we create is 0700', { skip: process.platform === 'win32' }, async (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-files-'));
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  const dataDir = path.join(root, 'not-yet', 'data');

  const app = await buildApp({ env: { DATA_DIR: dataDir, SCRYPT_COST: '1024' }, logger: false });
  t.after(() => app.close());
  const database = path.join(dataDir, 'atrium.sqlite');
  assert.equal(mode(dataDir), 0o700);
  assert.equal(mode(path.dirname(dataDir)), 0o700);
  assert.equal(mode(database), 0o600);
  assert.equal(mode(path.join(dataDir, 'secrets.json')), 0o600);
  // The migrations wrote through the WAL, and the open connection holds the shared memory file.
  for (const companion of ['-wal', '-shm']) assert.equal(mode(database + companion), 0o600, companion);
  const health = await app.inject({ url: '/v1/health' });
  assert.equal(health.statusCode, 200, health.body);
});

test('an existing database file and data directory keep the modes their operator gave them', { skip: process.platform === 'win32' }, async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-files-'));
  t.after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  fs.chmodSync(dataDir, 0o750);
  const database = path.join(dataDir, 'atrium.sqlite');
  fs.writeFileSync(database, '');
  fs.chmodSync(database, 0o640);

  const app = await buildApp({ env: { DATA_DIR: dataDir, SCRYPT_COST: '1024' }, logger: false });
  t.after(() => app.close());
  assert.equal(mode(dataDir), 0o750);
  assert.equal(mode(database), 0o640);
  assert.equal((await app.inject({ url: '/v1/health' })).statusCode, 200);
});
