import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import Database from 'better-sqlite3';
import { fakeOpenAi } from './fake-ai';
import { buildWithAi, modulesCast } from './ai-helper';
import { makeCsv, multipartForm } from './fixtures/document-files';
import { PASSWORD } from './helper';

const CHILD = path.resolve(__dirname, 'fixtures/server-child.js');
const ROWS = 80;

/**
 * SIGTERM while a client follows a bulk job's rows: the server closes as
 * app.close() does on a stop signal (src/main.ts). The worker stopped only
 * once HTTP had drained, so with a stream open the job ran to its end after
 * the signal and the process exited with the connection's keep-alive timeout.
 */
test('SIGTERM with a live rows stream open: the worker stops and hands the job back at once, the stream ends with a 503 line, the process exits within seconds', async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-shutdown-streams-'));
  // 80 rows, two at a time, 300 ms each: about 12 s of work, far more than a clean stop may take.
  const fake = await fakeOpenAi(t, (request) => ({ content: `out:${request.messages.at(-1)!.content}`, delayMs: 300, usage: { prompt: 5, completion: 5 } }));
  const child: ChildProcess = spawn(process.execPath, [CHILD, '--seed', 'stop@example.com'], {
    env: { ...process.env, DATA_DIR: dataDir, AI_BASE_URL: fake.url, AI_MAX_RETRIES: '0', AI_DEFAULT_MODEL: 'gpt-4o-mini', AI_MAX_OUTPUT_TOKENS: '16', SCRYPT_COST: '1024', LOG_LEVEL: 'warn', BULK_CONCURRENCY: '2', JOB_POLL_MS: '50' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number>((resolve) => child.once('exit', () => resolve(Date.now())));
  const deadline = Date.now() + 60_000;
  while (!/listening \d+/.test(out)) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the server did not start; stderr:\n${err}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  const port = Number(/listening (\d+)/.exec(out)![1]);
  const base = `http://127.0.0.1:${port}/v1`;
  const login = await fetch(`${base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'stop@example.com', password: PASSWORD }) });
  const token = ((await login.json()) as { access_token: string }).access_token;
  const form = multipartForm({ input_column: 'q', prompt_template: '{text}' }, { content: makeCsv([['q'], ...Array.from({ length: ROWS }, (_, i) => [`q${i + 1}`])]), filename: 'q.csv' });
  const submitted = await fetch(`${base}/bulk/jobs`, { method: 'POST', headers: { ...form.headers, authorization: `Bearer ${token}` }, body: form.payload });
  assert.equal(submitted.status, 202, await submitted.clone().text());
  const { id } = (await submitted.json()) as { id: string };

  // A dashboard follows the rows over a keep-alive connection (node's default agent keeps it).
  const lines: Record<string, unknown>[] = [];
  let buffer = '';
  const agent = new http.Agent({ keepAlive: true });
  t.after(() => agent.destroy());
  const streamEnded = new Promise<number>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, agent, path: `/v1/bulk/jobs/${id}/rows`, headers: { authorization: `Bearer ${token}` } }, (res) => {
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffer += chunk;
          for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
            lines.push(JSON.parse(buffer.slice(0, i)) as Record<string, unknown>);
            buffer = buffer.slice(i + 1);
          }
        });
        res.on('end', () => resolve(Date.now()));
        res.on('error', reject);
      })
      .on('error', reject);
  });
  for (let i = 0; i < 400 && lines.length < 4; i++) await new Promise((r) => setTimeout(r, 25));
  assert.ok(lines.length >= 4, 'rows are streaming');

  const signalled = Date.now();
  child.kill('SIGTERM');
  const [endedAt, exitedAt] = await Promise.all([streamEnded, Promise.race([exited, new Promise<number>((r) => setTimeout(() => r(Infinity), 20_000))])]);
  assert.ok(endedAt - signalled < 2000, `the stream ended ${endedAt - signalled} ms after SIGTERM`);
  assert.ok(exitedAt - signalled < 5000, `the process exited ${exitedAt - signalled} ms after SIGTERM`);
  assert.equal(child.exitCode, 0, err);
  const last = lines.at(-1)!;
  assert.equal((last.error as { code: string; status: number } | undefined)?.code, 'server_busy', JSON.stringify(last));
  assert.match((last.error as { detail: string }).detail, new RegExp(`\\?after=${(lines.at(-2) as { row: number }).row}\\b`));

  // Handed back, not run to its end: the job is still running with rows left, its worker job not completed and due again.
  const db = new Database(path.join(dataDir, 'atrium.sqlite'), { readonly: true });
  t.after(() => db.close());
  const job = db.prepare('select status, finished_at from bulk_jobs where id = ?').get(id) as { status: string; finished_at: number | null };
  assert.deepEqual(job, { status: 'running', finished_at: null });
  const done = (db.prepare("select count(*) as n from bulk_rows where job_id = ? and status != 'pending'").get(id) as { n: number }).n;
  assert.ok(done < ROWS / 2, `${done} of ${ROWS} rows ran`);
  const worker = db.prepare("select completed_at, dead_lettered_at from jobs where kind = 'bulk.process'").all() as { completed_at: unknown; dead_lettered_at: unknown }[];
  assert.ok(worker.length === 1 && worker[0]!.completed_at === null, JSON.stringify(worker));
});

test('a stopping server closes a connection still busy after SHUTDOWN_GRACE_SECONDS, not after a fixed 5 s', async (t) => {
  // The provider never finishes its answer: the chat request stays busy until its connection is closed.
  const fake = await fakeOpenAi(t, () => ({ stall: true }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url }, { shutdownGraceSeconds: 1 });
  const { keys } = await modulesCast(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const busy = fetch(`http://127.0.0.1:${port}/v1/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${keys.ownerA.key}` },
    body: JSON.stringify({ message: 'hi', agent: 'general', session_id: 'grace' }),
  }).catch((error: Error) => error);
  for (let i = 0; i < 250 && fake.seen.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(fake.seen.length, 1, 'the request is waiting on the provider');
  const started = Date.now();
  await app.close();
  const took = Date.now() - started;
  assert.ok(took >= 900 && took < 3000, `close took ${took} ms with a grace of 1 s`);
  assert.ok((await busy) instanceof Error, 'the busy connection was closed, unanswered');
});
