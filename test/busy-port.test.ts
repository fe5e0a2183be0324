import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describeListenError, SERVER_LISTEN_SETTINGS } from '../src/kernel/listen-error';
import { loadConfig } from '../src/config';
import { ConfigError } from '../src/env';

const MAIN = path.resolve(__dirname, '../src/main.js');
const CLI = path.resolve(__dirname, '../src/cli.js');

/** A port this test holds on 127.0.0.1 until it ends. */
async function heldPort(t: TestContext): Promise<number> {
  const holder = net.createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  t.after(() => holder.close());
  return (holder.address() as AddressInfo).port;
}

function dataDir(t: TestContext): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-busy-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function run(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      args,
      { env: { ...process.env, SCRYPT_COST: '1024', ...env }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
    );
  });
}

/** The database was closed before the process left: SQLite removes its WAL file on the last close only. */
function closedCleanly(dir: string) {
  assert.ok(fs.existsSync(path.join(dir, 'atrium.sqlite')), 'the server booted its database before listening');
  assert.equal(fs.existsSync(path.join(dir, 'atrium.sqlite-wal')), false, 'the database was closed');
}

// `npm start` runs the first, `npx atrium` the second: both listen through app.ts listen().
for (const [name, argv] of [
  ['the server', [MAIN]],
  ['atrium serve', [CLI, 'serve']],
] as const) {
  test(`${name} on a busy port says which setting to change, in one line, and exits 1 after closing its database`, async (t) => {
    const port = await heldPort(t);
    const dir = dataDir(t);
    const result = await run([...argv], { DATA_DIR: dir, HOST: '127.0.0.1', PORT: String(port) });
    assert.equal(result.code, 1);
    assert.equal(result.stderr, `atrium: port ${port} on 127.0.0.1 is already in use; set PORT (or HOST) to another value\n`);
    closedCleanly(dir);
  });
}

test('atrium subgraph on a busy port names --port when it was given, PORT otherwise, and exits 1', async (t) => {
  const port = await heldPort(t);
  const dir = dataDir(t);
  const flag = await run([CLI, 'subgraph', 'identity', '--port', String(port)], { DATA_DIR: dir, HOST: '127.0.0.1' });
  assert.equal(flag.code, 1);
  assert.equal(flag.stderr, `atrium: port ${port} on 127.0.0.1 is already in use; set --port (or HOST) to another value\n`);
  closedCleanly(dir);

  const env = await run([CLI, 'subgraph', 'identity'], { DATA_DIR: dir, HOST: '127.0.0.1', PORT: String(port) });
  assert.equal(env.code, 1);
  assert.equal(env.stderr, `atrium: port ${port} on 127.0.0.1 is already in use; set PORT (or HOST) to another value\n`);
  closedCleanly(dir);
});

test('a privileged port, a foreign address and an unresolved host name each name their setting; other errors keep their stack', () => {
  const at = { host: '0.0.0.0', port: 80 };
  const system = (code: string, syscall: string, extra: object = {}) => Object.assign(new Error(`${syscall} ${code}`), { code, syscall, ...extra });
  assert.equal(
    describeListenError(system('EACCES', 'listen', { address: '0.0.0.0', port: 80 }), at, SERVER_LISTEN_SETTINGS),
    'port 80 on 0.0.0.0 needs privileges this process does not have (ports below 1024 do); set PORT to 1024 or above, or let a proxy or CAP_NET_BIND_SERVICE bind it',
  );
  assert.match(describeListenError(system('EADDRNOTAVAIL', 'listen', { address: '10.9.9.9' }), at, SERVER_LISTEN_SETTINGS)!, /^10\.9\.9\.9 is not an address of this machine; set HOST/);
  assert.match(describeListenError(system('ENOTFOUND', 'getaddrinfo', { hostname: 'nowhere.invalid' }), at, SERVER_LISTEN_SETTINGS)!, /^host name nowhere\.invalid does not resolve; set HOST/);
  // A permission error that is not the listen itself (a file) is not the port's fault.
  assert.equal(describeListenError(system('EACCES', 'open'), at, SERVER_LISTEN_SETTINGS), undefined);
  assert.equal(describeListenError(new Error('boom'), at, SERVER_LISTEN_SETTINGS), undefined);
});

/** One line `atrium: …` naming `setting`, and nothing else: no stack. */
function oneLine(result: { code: number | null; stderr: string }, setting: string) {
  assert.equal(result.code, 1, result.stderr);
  assert.match(result.stderr, /^atrium: [^\n]+\n$/, result.stderr);
  assert.ok(result.stderr.includes(setting), result.stderr);
}

test('a setting the server cannot start with is one line naming it, and exit code 1, from the server and the CLI', async (t) => {
  const dir = dataDir(t);
  const stripe = { STRIPE_SECRET_KEY: 'sk_test', STRIPE_WEBHOOK_SECRET: 'whsec_test' };
  const cases: [string, Record<string, string>][] = [
    ['PORT', { PORT: 'abc' }],
    // Past the last port: once a RangeError from listen, with its stack.
    ['PORT', { PORT: '65536' }],
    ['TRUST_PROXY', { TRUST_PROXY: 'maybe' }],
    ['JWT_SECRET', { JWT_SECRET: 'short' }],
    ['STRIPE_PRICES', { ...stripe, STRIPE_PRICES: 'garbage' }],
    ['AI_MODEL_MAP', { AI_MODEL_MAP: 'garbage' }],
    ['BODY_LIMIT_BYTES', { BODY_LIMIT_BYTES: 'abc' }],
    ['ENCRYPTION_KEYS', { ENCRYPTION_KEYS: 'garbage' }],
    ['GRAPHQL_INTROSPECTION', { GRAPHQL_INTROSPECTION: 'maybe' }],
    // pino's own refusal came later, from inside fastify, with its stack.
    ['LOG_LEVEL', { LOG_LEVEL: 'loud' }],
    ['SSO_REDIRECT_ALLOWLIST', { SSO_REDIRECT_ALLOWLIST: 'ftp://example.com' }],
  ];
  // A few at a time: ten servers loading at once outlast run()'s time limit on a busy machine.
  for (let i = 0; i < cases.length; i += 3) {
    await Promise.all(
      cases.slice(i, i + 3).map(async ([setting, env]) => oneLine(await run([MAIN], { DATA_DIR: dir, HOST: '127.0.0.1', PORT: '0', ...env }), setting)),
    );
  }
  oneLine(await run([CLI, 'serve'], { DATA_DIR: dir, LOG_LEVEL: 'loud' }), 'LOG_LEVEL');
  oneLine(await run([CLI, 'create-owner', '--email', 'a@b.test', '--password', 'correct-horse-battery', '--company', 'A'], { DATA_DIR: dir, JWT_SECRET: 'short' }), 'JWT_SECRET');
});

test('a DATA_DIR or DATABASE_FILE the server cannot write is one line naming the setting, before SQLite fails on it', async (t) => {
  const dir = dataDir(t);
  const file = path.join(dir, 'a-file');
  fs.writeFileSync(file, '');
  const base = { HOST: '127.0.0.1', PORT: '0' };
  const [isFile, underFile, dbIsFolder] = await Promise.all([
    run([MAIN], { ...base, DATA_DIR: file }),
    run([MAIN], { ...base, DATA_DIR: path.join(file, 'data') }),
    run([MAIN], { ...base, DATA_DIR: dir, DATABASE_FILE: path.join(dir) }),
  ]);
  oneLine(isFile, `DATA_DIR ${file} is not a directory`);
  oneLine(underFile, `DATA_DIR ${path.join(file, 'data')} is not a directory`);
  oneLine(dbIsFolder, `DATABASE_FILE ${dir} is not a file`);
  oneLine(await run([MAIN], { ...base, DATA_DIR: dir, DATABASE_FILE: path.join(file, 'db.sqlite') }), `the folder of DATABASE_FILE ${path.join(file, 'db.sqlite')} is not a directory`);
  // Permissions do not hold root back: only another user can be refused a folder this way.
  if (process.getuid?.() !== 0) {
    const locked = path.join(dir, 'locked');
    fs.mkdirSync(locked, { mode: 0o500 });
    oneLine(await run([MAIN], { ...base, DATA_DIR: locked }), `DATA_DIR ${locked} is not writable by this process`);
  }
});

test('integer settings are decimal digits within their bounds: PORT 0 to 65535, no exponent, sign, hex, fraction or padding', () => {
  assert.equal(loadConfig({ PORT: '8080' }).port, 8080);
  assert.equal(loadConfig({ PORT: '0' }).port, 0);
  assert.equal(loadConfig({ PORT: '65535' }).port, 65535);
  for (const raw of ['65536', '70000', '1e3', '1.9361e4', ' 8080', '8080 ', '+80', '-1', '0x50', '80.0', '99999999999999999999']) {
    assert.throws(() => loadConfig({ PORT: raw }), (error: Error) => error instanceof ConfigError && /^PORT must be an integer from 0 to 65535/.test(error.message), raw);
  }
  assert.throws(() => loadConfig({ JOB_CONCURRENCY: '0x8' }), /^ConfigError: JOB_CONCURRENCY must be an integer >= 1/);
  // A delay a Node timer cannot hold would fire at once, every millisecond.
  assert.throws(() => loadConfig({ JOB_POLL_MS: '3000000000' }), /JOB_POLL_MS must be an integer from 10 to 2147483647/);
  assert.throws(() => loadConfig({ AI_TIMEOUT_SECONDS: '2147484' }), /AI_TIMEOUT_SECONDS must be an integer from 1 to 2147483/);
  assert.throws(() => loadConfig({ TOPUP_MAX_CREDITS: '1e6' }), /TOPUP_MAX_CREDITS must be an integer/);
  assert.throws(() => loadConfig({ TOPUP_MIN_CREDITS: '500', TOPUP_MAX_CREDITS: '100' }), /TOPUP_MAX_CREDITS \(100\) must be at least TOPUP_MIN_CREDITS \(500\)/);
});

test('identity settings have an upper bound each: an absurd TTL, grace, interval, limit or scrypt cost (or one no power of two) stops the start in one line', () => {
  const maxima = {
    REFRESH_REUSE_GRACE_SECONDS: 3600,
    SCRYPT_COST: 2 ** 20,
    EMAIL_CHANGE_TOKEN_TTL_MINUTES: 10_080,
    ACCOUNT_DELETION_GRACE_DAYS: 365,
    ACCOUNT_DELETION_INTERVAL_SECONDS: 86_400,
    INVITATION_TTL_DAYS: 90,
    LOGIN_DELAY_AFTER_FAILURES: 100,
    LOGIN_DELAY_MAX_SECONDS: 3600,
    LOGIN_LOCK_AFTER_FAILURES: 100,
    LOGIN_LOCK_SECONDS: 86_400,
    LOGIN_FAILURE_MEMORY_SECONDS: 2_592_000,
    PASSWORD_RESET_TTL_MINUTES: 1440,
    PASSWORD_RESET_MAILS_PER_HOUR: 100,
  };
  for (const [name, max] of Object.entries(maxima)) {
    assert.doesNotThrow(() => loadConfig({ [name]: String(max) }), name);
    assert.throws(
      () => loadConfig({ [name]: String(max + 1) }),
      (error: Error) => error instanceof ConfigError && new RegExp(`^${name} must be an integer from \\d+ to ${max} `).test(error.message) && !error.message.includes('\n'),
      name,
    );
  }
  assert.throws(() => loadConfig({ SCRYPT_COST: String(2 ** 40) }), /^ConfigError: SCRYPT_COST must be an integer from 2 to 1048576/);
  assert.throws(() => loadConfig({ SCRYPT_COST: '3000' }), /^ConfigError: SCRYPT_COST must be a power of two from 2 to 1048576, got "3000"$/);
  assert.equal(loadConfig({ SCRYPT_COST: '1024' }).scryptCost, 1024);
  assert.throws(() => loadConfig({ INVITATION_TTL_DAYS: '1000000000000' }), /^ConfigError: INVITATION_TTL_DAYS must be an integer from 1 to 90/);
});

test('SHUTDOWN_GRACE_SECONDS is the stop\'s wait for busy connections: 5 by default, 0 to 600, anything else one line naming it', () => {
  assert.equal(loadConfig({}).shutdownGraceSeconds, 5);
  assert.equal(loadConfig({ SHUTDOWN_GRACE_SECONDS: '0' }).shutdownGraceSeconds, 0);
  assert.equal(loadConfig({ SHUTDOWN_GRACE_SECONDS: '600' }).shutdownGraceSeconds, 600);
  for (const raw of ['601', '-1', '2.5', '5s', '1e2']) {
    assert.throws(() => loadConfig({ SHUTDOWN_GRACE_SECONDS: raw }), (error: Error) => error instanceof ConfigError && error.message === `SHUTDOWN_GRACE_SECONDS must be an integer from 0 to 600 (decimal digits only), got "${raw}"`, raw);
  }
});

test('an ATRIUM_OWNER_* value the first start cannot create is one line naming the variable and why, and exit code 1', async (t) => {
  const base = { HOST: '127.0.0.1', PORT: '0', ATRIUM_OWNER_EMAIL: 'owner@example.com', ATRIUM_OWNER_PASSWORD: 'correct-horse-battery-staple' };
  const [password, email] = await Promise.all([
    run([MAIN], { ...base, DATA_DIR: dataDir(t), ATRIUM_OWNER_PASSWORD: 'short' }),
    run([MAIN], { ...base, DATA_DIR: dataDir(t), ATRIUM_OWNER_EMAIL: 'bad' }),
  ]);
  assert.equal(password.code, 1);
  assert.equal(password.stderr, 'atrium: invalid ATRIUM_OWNER_PASSWORD: must be at least 12 characters\n');
  assert.equal(email.code, 1);
  assert.equal(email.stderr, 'atrium: invalid ATRIUM_OWNER_EMAIL: not a valid email address\n');
});

test('STRIPE_PRICES naming a plan the catalog lacks, or a CORS_ORIGINS entry that is no origin, stops the start with one line naming it', async (t) => {
  const base = { HOST: '127.0.0.1', PORT: '0', STRIPE_SECRET_KEY: 'sk_test', STRIPE_WEBHOOK_SECRET: 'whsec_test' };
  const [plan, cors] = await Promise.all([
    run([MAIN], { ...base, DATA_DIR: dataDir(t), STRIPE_PRICES: 'starter:price_0,enterprize:price_1' }),
    run([MAIN], { ...base, DATA_DIR: dataDir(t), CORS_ORIGINS: 'https://app.example.com,not a url' }),
  ]);
  assert.equal(plan.code, 1, plan.stderr);
  assert.equal(plan.stderr, 'atrium: STRIPE_PRICES names "enterprize", not a plan of the catalog (starter, professional)\n');
  oneLine(cors, 'CORS_ORIGINS entries must be origins');
  assert.match(cors.stderr, /"not a url"/);

  for (const bad of ['not a url', 'https://app.example.com/path', 'https://app.example.com?x=1', 'ftp://files.example.com', 'https://user:pw@app.example.com', '*']) {
    assert.throws(() => loadConfig({ CORS_ORIGINS: bad }), /CORS_ORIGINS entries must be origins/, bad);
  }
  // As a browser writes its Origin header, which the CORS plugin compares as text.
  assert.deepEqual(loadConfig({ CORS_ORIGINS: 'https://App.Example.com/, http://localhost:3000' }).corsOrigins, ['https://app.example.com', 'http://localhost:3000']);
});
