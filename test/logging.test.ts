import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { buildApp } from '../src/app';
import { lazyChildLogger } from '../src/host/lazy-logger';

/** An app logging JSON lines at `level` into an array. */
async function appWithLog(t: { after: (fn: () => unknown) => void }, level: string) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-log-'));
  const lines: Record<string, unknown>[] = [];
  const app = await buildApp({
    env: { DATA_DIR: dataDir, SCRYPT_COST: '1024' },
    logger: { level, stream: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) } },
  });
  t.after(async () => {
    await app.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  return { app, lines };
}

test('request log lines carry the request id (the request logger is built on first use)', async (t) => {
  const { app, lines } = await appWithLog(t, 'info');
  const id = 'log-test-0123456789';
  const res = await app.inject({ url: '/v1/health', headers: { 'x-request-id': id } });
  assert.equal(res.statusCode, 200);
  const line = lines.find((l) => l.msg === 'request completed' && l.url === '/v1/health');
  assert.ok(line, `no access log line in:\n${lines.map((l) => JSON.stringify(l)).join('\n')}`);
  assert.equal(line.reqId, id);
  assert.equal(line.status, 200);
});

test('the lazy request logger keeps the parent level and binds the request id when it first writes', () => {
  const lines: Record<string, unknown>[] = [];
  const parent = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  const log = lazyChildLogger.call(undefined as never, parent, { reqId: 'r-1' }, {}, undefined as never);
  assert.equal(log.level, 'warn');
  log.info('below the level');
  assert.equal(lines.length, 0);
  log.warn({ detail: 1 }, 'written');
  assert.equal(lines.length, 1);
  assert.equal(lines[0]!.reqId, 'r-1');
  assert.equal(lines[0]!.msg, 'written');
  assert.equal(lines[0]!.detail, 1);
});
