import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

test('SIGTERM to `npm start` stops the server it started (no orphan left on the port)', { timeout: 120_000 }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-npm-start-'));
  const npm = spawn('npm', ['start'], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dir, HOST: '127.0.0.1', PORT: '0', SCRYPT_COST: '1024' },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group, so a failed test can end the server too before its pid is known.
    detached: true,
  });
  const server: { pid?: number } = {};
  t.after(() => {
    // Whatever failed, leave nothing running.
    if (server.pid && alive(server.pid)) process.kill(server.pid, 'SIGKILL');
    try {
      if (npm.pid) process.kill(-npm.pid, 'SIGKILL');
    } catch {
      // The group has ended: nothing of it runs.
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  let out = '';
  let err = '';
  npm.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  // The start-up line (pino) carries the server's own pid and its address.
  const { pid, port } = await new Promise<{ pid: number; port: number }>((resolve, reject) => {
    npm.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n').find((l) => l.includes('"msg":"Atrium '));
      if (line) {
        const record = JSON.parse(line) as { pid: number; msg: string };
        resolve({ pid: record.pid, port: Number(/ at http:\/\/127\.0\.0\.1:(\d+)\//.exec(record.msg)![1]) });
      }
    });
    npm.once('exit', (code) => reject(new Error(`npm start exited (${code}) before listening:\n${out}\n${err}`)));
  });
  server.pid = pid;
  assert.notEqual(pid, npm.pid, 'the server is its own process under npm');
  assert.equal(await refused(port), false);

  const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
  // The pipe ends once both npm and the server have let go of it: all they wrote is read.
  const drained = new Promise<void>((resolve) => npm.stdout.once('close', () => resolve()));
  // Sent as soon as the start-up line is read: the server answers even a signal
  // that arrives while it finishes starting (it once died on one, silently).
  npm.kill('SIGTERM');
  await exited;
  // npm waits for its script; the server closes (its database too) and leaves.
  for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(alive(pid), false, `node dist/src/main.js (pid ${pid}) outlived npm`);
  assert.equal(await refused(port), true);
  await drained;
  assert.match(out, /"signal":"SIGTERM","msg":"shutting down"/);
});
