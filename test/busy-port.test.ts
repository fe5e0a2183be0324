import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describeListenError, SERVER_LISTEN_SETTINGS } from '../src/kernel/listen-error';

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
