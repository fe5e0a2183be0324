import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildApp } from '../src/app';

const CLI = path.resolve(__dirname, '../src/cli.js');
const PASSWORD = 'correct-horse-battery-staple';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function atrium(dataDir: string, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { ...process.env, DATA_DIR: dataDir, SCRYPT_COST: '1024' }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** The JSON result is the last stdout line (a first run may log migrations before it). */
function lastJson(out: string) {
  return JSON.parse(out.trim().split('\n').at(-1)!);
}

test('create-owner and create-api-key give working credentials', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-cli-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));

  const owner = await atrium(dir, 'create-owner', '--email', 'Owner@Acme.test', '--password', PASSWORD, '--company', 'Acme');
  assert.equal(owner.code, 0, owner.stderr);
  const created = lastJson(owner.stdout);
  assert.match(created.company_id, /^[0-9a-f-]{36}$/);
  assert.match(created.user_id, /^[0-9a-f-]{36}$/);
  assert.equal(created.email, 'owner@acme.test');

  const again = await atrium(dir, 'create-owner', '--email', 'owner@acme.test', '--password', PASSWORD, '--company', 'Other');
  assert.equal(again.code, 1);
  assert.match(again.stderr, /already exists/);

  const short = await atrium(dir, 'create-owner', '--email', 'second@acme.test', '--password', 'short', '--company', 'Beta');
  assert.equal(short.code, 1);
  assert.match(short.stderr, /password/);

  const keyRun = await atrium(dir, 'create-api-key', '--company', 'Acme');
  assert.equal(keyRun.code, 0, keyRun.stderr);
  const key = lastJson(keyRun.stdout) as { id: string; name: string; key: string };
  assert.match(key.key, /^svc_/);
  assert.equal(key.name, 'cli');
  assert.match(keyRun.stderr, /only once/);

  const app = await buildApp({ env: { DATA_DIR: dir, SCRYPT_COST: '1024' }, logger: false });
  t.after(() => app.close());

  const profile = await app.inject({ url: '/v1/me/profile', headers: { authorization: `Bearer ${key.key}` } });
  assert.equal(profile.statusCode, 200, profile.body);
  const me = profile.json();
  assert.equal(me.auth_method, 'api_key');
  assert.equal(me.role, 'admin');
  assert.equal(me.id, null);

  const login = await app.inject({
    method: 'POST',
    url: '/v1/auth/login',
    payload: { email: 'owner@acme.test', password: PASSWORD },
  });
  assert.equal(login.statusCode, 200, login.body);
  assert.equal(login.json().user.id, created.user_id);

  const rows = (await app.kernel.orm.em
    .fork()
    .getConnection()
    .execute('select key_hash, prefix from api_keys')) as { key_hash: string; prefix: string }[];
  assert.equal(rows.length, 1);
  assert.equal(rows[0]!.key_hash, createHash('sha256').update(key.key).digest('hex'));
  assert.ok(!JSON.stringify(rows).includes(key.key), 'the plaintext key is not stored');
  assert.ok(key.key.startsWith(rows[0]!.prefix));
});

test('create-owner refuses a company name that exists (trimmed, any case) unless --allow-duplicate-name; create-api-key lists the ids of an ambiguous name', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-cli-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));

  const first = await atrium(dir, 'create-owner', '--email', 'one@acme.test', '--password', PASSWORD, '--company', 'Acme');
  assert.equal(first.code, 0, first.stderr);
  const firstId = lastJson(first.stdout).company_id as string;

  const twice = await atrium(dir, 'create-owner', '--email', 'two@acme.test', '--password', PASSWORD, '--company', '  ACME ');
  assert.equal(twice.code, 1, twice.stderr);
  assert.match(twice.stderr, /company named "Acme" already exists/);
  assert.ok(twice.stderr.includes(firstId), twice.stderr);
  assert.match(twice.stderr, /--allow-duplicate-name/);

  // One company key by name still works while the name is unique, in any case.
  const unique = await atrium(dir, 'create-api-key', '--company', 'acme');
  assert.equal(unique.code, 0, unique.stderr);

  const allowed = await atrium(dir, 'create-owner', '--email', 'two@acme.test', '--password', PASSWORD, '--company', 'Acme', '--allow-duplicate-name');
  assert.equal(allowed.code, 0, allowed.stderr);
  const secondId = lastJson(allowed.stdout).company_id as string;
  assert.notEqual(secondId, firstId);

  const ambiguous = await atrium(dir, 'create-api-key', '--company', 'Acme');
  assert.equal(ambiguous.code, 1, ambiguous.stderr);
  assert.match(ambiguous.stderr, /2 companies are named "Acme"; pass the id/);
  assert.ok(ambiguous.stderr.includes(firstId) && ambiguous.stderr.includes(secondId), ambiguous.stderr);

  const byId = await atrium(dir, 'create-api-key', '--company', secondId);
  assert.equal(byId.code, 0, byId.stderr);

  const app = await buildApp({ env: { DATA_DIR: dir, SCRYPT_COST: '1024' }, logger: false });
  t.after(() => app.close());
  const rows = (await app.kernel.orm.em.fork().getConnection().execute('select name from companies order by created_at')) as { name: string }[];
  assert.deepEqual(rows.map((r) => r.name), ['Acme', 'Acme'], 'the refused run created nothing');
});

test('help, unknown commands and missing flags', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-cli-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));

  const help = await atrium(dir, '--help');
  assert.equal(help.code, 0);
  assert.match(help.stdout, /create-api-key/);

  const unknown = await atrium(dir, 'frobnicate');
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /Usage: atrium/);

  const missing = await atrium(dir, 'create-owner', '--email', 'a@b.test');
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /--password is required/);

  const noCompany = await atrium(dir, 'create-api-key', '--company', 'Nobody');
  assert.equal(noCompany.code, 1);
  assert.match(noCompany.stderr, /Nobody/);
});

test('create-owner refuses a password longer than the API takes (1024 characters), which could never sign in', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-cli-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const long = await atrium(dir, 'create-owner', '--email', 'long@acme.test', '--password', 'y'.repeat(1025), '--company', 'Long');
  assert.equal(long.code, 1, long.stderr);
  assert.equal(long.stderr, 'atrium: invalid --password: must be at most 1024 characters\n');
  const longest = await atrium(dir, 'create-owner', '--email', 'long@acme.test', '--password', 'y'.repeat(1024), '--company', 'Long');
  assert.equal(longest.code, 0, longest.stderr);
});

test('create-owner refuses a company name longer than the API takes (200 characters)', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-cli-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const long = await atrium(dir, 'create-owner', '--email', 'long@acme.test', '--password', PASSWORD, '--company', 'z'.repeat(201));
  assert.equal(long.code, 1, long.stderr);
  assert.equal(long.stderr, 'atrium: invalid --company: must be 1 to 200 characters\n');
  const longest = await atrium(dir, 'create-owner', '--email', 'long@acme.test', '--password', PASSWORD, '--company', 'z'.repeat(200));
  assert.equal(longest.code, 0, longest.stderr);
});
