import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { buildApp } from '../src/app';
import { lazyChildLogger } from '../src/host/lazy-logger';
import { loadAiConfig } from '../src/domains/ai';
import { fakeOpenAi } from './fake-ai';
import { modulesCast } from './ai-helper';
import { call, gql } from './admin-helper';

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

test("a provider's failure is logged once as a warning with the provider's own words and the request id, over REST, GraphQL and a socket alike; the client's answer leaves them out", async (t) => {
  const fake = await fakeOpenAi(t, () => ({ status: 404 }));
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-log-'));
  const lines: Record<string, unknown>[] = [];
  const app = await buildApp({
    env: { DATA_DIR: dataDir, SCRYPT_COST: '1024' },
    logger: { level: 'info', stream: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) } },
    config: { ai: loadAiConfig({ AI_MAX_RETRIES: '0', AI_BASE_URL: fake.url }).ai },
  });
  t.after(async () => {
    await app.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { keys, tokens } = await modulesCast(app);
  const warnings = () => lines.filter((l) => l.msg === 'answered with a server-side problem');

  const rest = await call(app, keys.ownerA.key, 'POST', '/v1/chat', { message: 'hi', agent: 'general', session_id: 's1' });
  assert.equal(rest.statusCode, 502);
  assert.doesNotMatch(rest.body, /fake error/);
  const graphql = await gql(app, tokens.ownerA, 'mutation { chat(input: { message: "hi", agent: "general", sessionId: "s2" }) { response } }');
  assert.equal(graphql.errors?.[0]?.extensions.code, 'ai_provider_error');
  assert.doesNotMatch(JSON.stringify(graphql), /fake error/);
  // The same mutation over a socket: its line carries the operation's own request id (the upgrade's, then its own).
  const socket = new WebSocket(`ws://127.0.0.1:${(app.server.address() as AddressInfo).port}/graphql`, 'graphql-transport-ws');
  t.after(() => socket.terminate());
  const messages: { type: string; payload?: unknown }[] = [];
  socket.on('message', (data) => messages.push(JSON.parse(String(data)) as { type: string; payload?: unknown }));
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${tokens.ownerA}` } }));
  const query = 'mutation { chat(input: { message: "hi", agent: "general", sessionId: "s3" }) { response } }';
  const until = async (check: () => boolean) => {
    for (const deadline = Date.now() + 5000; !check() && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 20));
  };
  await until(() => messages.some((m) => m.type === 'connection_ack'));
  socket.send(JSON.stringify({ type: 'subscribe', id: '1', payload: { query } }));
  await until(() => messages.some((m) => m.type === 'next'));
  assert.doesNotMatch(JSON.stringify(messages), /fake error/);
  // Over GraphQL nothing was logged: an operator saw neither the failure nor the provider's reason.
  assert.deepEqual(
    warnings().map((l) => [l.code, l.status, l.cause, typeof l.reqId]),
    [
      ['ai_provider_error', 502, '404 fake error 404', 'string'],
      ['ai_provider_error', 502, '404 fake error 404', 'string'],
      ['ai_provider_error', 502, '404 fake error 404', 'string'],
    ],
  );
  assert.match(String(warnings()[2]!.reqId), /^[0-9a-f-]{36}\/[0-9a-f-]{36}$/);
  assert.equal(lines.filter((l) => (l.level as number) >= 40).length, 3);
});

test("a graphql-ws subscription mercurius refuses (another's or an unknown job) is logged under the socket's request id, as the upgrade's other lines are", async (t) => {
  const { app, lines } = await appWithLog(t, 'info');
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { tokens } = await modulesCast(app);
  const requestId = 'ws-refusal-0123456789';
  const socket = new WebSocket(`ws://127.0.0.1:${(app.server.address() as AddressInfo).port}/graphql`, 'graphql-transport-ws', { headers: { 'x-request-id': requestId } });
  t.after(() => socket.terminate());
  const messages: { type: string; payload?: unknown }[] = [];
  socket.on('message', (data) => messages.push(JSON.parse(String(data)) as { type: string; payload?: unknown }));
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  const until = async (check: () => boolean) => {
    for (const deadline = Date.now() + 5000; !check() && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 20));
  };
  socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${tokens.ownerA}` } }));
  await until(() => messages.some((m) => m.type === 'connection_ack'));
  const query = 'subscription { jobProgress(id: "00000000-0000-4000-8000-000000000000") { status } }';
  socket.send(JSON.stringify({ type: 'subscribe', id: '1', payload: { query } }));
  await until(() => messages.some((m) => m.type === 'error'));
  assert.equal((messages.find((m) => m.type === 'error')!.payload as { extensions: { code: string } }[])[0]!.extensions.code, 'not_found');
  await until(() => lines.some((l) => l.msg === 'operation refused'));
  const refused = lines.filter((l) => l.msg === 'operation refused');
  assert.deepEqual(
    refused.map((l) => [l.reqId, l.refused]),
    [[requestId, [{ code: 'not_found', status: 404 }]]],
  );
});
