import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { parse } from 'csv-parse/sync';
import { fakeOpenAi } from './fake-ai';
import { makeCsv, multipartForm } from './fixtures/document-files';
import { PASSWORD } from './helper';

const CHILD = path.resolve(__dirname, 'fixtures/server-child.js');
const ROWS = 2000;

function start(env: Record<string, string>, ...args: string[]): { process: ChildProcess; line: (pattern: RegExp) => Promise<RegExpMatchArray> } {
  const child = spawn(process.execPath, [CHILD, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  return {
    process: child,
    line: async (pattern) => {
      // A start on a loaded machine (CI beside other work) can take long: the test is about the crash, not the start's speed.
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        const match = out.match(pattern);
        if (match) return match;
        if (child.exitCode !== null) throw new Error(`child exited (${child.exitCode}); stderr:\n${err}`);
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error(`child never printed ${pattern}; stderr:\n${err}`);
    },
  };
}

test(`kill -9 in the middle of a ${ROWS}-row bulk job: after a restart every row appears exactly once, is charged once, and the job completes`, async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-bulk-crash-'));
  const children: ChildProcess[] = [];
  t.after(() => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  // A few milliseconds a row: the kill lands mid-job.
  const fake = await fakeOpenAi(t, (request) => ({ content: `done:${request.messages.at(-1)!.content}`, delayMs: 3, usage: { prompt: 10, completion: 5 } }));
  const env = {
    DATA_DIR: dataDir,
    AI_BASE_URL: fake.url,
    AI_MAX_RETRIES: '0',
    AI_DEFAULT_MODEL: 'gpt-4o-mini',
    AI_MAX_OUTPUT_TOKENS: '16',
    SCRYPT_COST: '1024',
    LOG_LEVEL: 'warn',
    // A killed worker's job is taken over a second after its lease ends.
    JOB_LEASE_SECONDS: '1',
    JOB_POLL_MS: '50',
    BULK_CONCURRENCY: '8',
    // The test polls the job with the key; a slow machine polls long enough to pass the default 30 a minute.
    RATE_LIMIT_MODULE_KEY: '1000',
  };
  const first = start(env, '--seed', 'crash@example.com');
  children.push(first.process);
  const [, companyId] = await first.line(/seeded (\S+)/);
  const port = Number((await first.line(/listening (\d+)/))[1]);
  const base = `http://127.0.0.1:${port}/v1`;
  const login = (await (await fetch(`${base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'crash@example.com', password: PASSWORD }) })).json()) as { access_token: string };
  const key = (await (await fetch(`${base}/apikeys`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${login.access_token}` }, body: JSON.stringify({ name: 'crash' }) })).json()) as { key: string };
  const csv = makeCsv([['n', 'text'], ...Array.from({ length: ROWS }, (_, i) => [i + 1, `row ${i + 1}`])]);
  const form = multipartForm({ input_column: 'text', prompt_template: '{text}' }, { content: csv, filename: 'rows.csv' });
  const submitted = await fetch(`${base}/bulk/submit`, { method: 'POST', headers: { ...form.headers, authorization: `Bearer ${key.key}` }, body: form.payload });
  assert.equal(submitted.status, 202, await submitted.clone().text());
  const { job_id: jobId } = (await submitted.json()) as { job_id: string };
  const status = async (at: string) => (await (await fetch(`${at}/bulk/status/${jobId}`, { headers: { authorization: `Bearer ${key.key}` } })).json()) as { status: string; rows_completed: number; rows_failed: number; total_rows: number };

  // Kill -9 once a fair part of the rows is done (read from the file, the moment it happens).
  const watch = new Database(path.join(dataDir, 'atrium.sqlite'), { readonly: true });
  for (let i = 0; i < 2000; i++) {
    const done = (watch.prepare("select count(*) as n from bulk_rows where status = 'completed'").get() as { n: number }).n;
    if (done >= ROWS / 4) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  watch.close();
  first.process.kill('SIGKILL');
  await new Promise((resolve) => first.process.once('exit', resolve));
  const before = new Database(path.join(dataDir, 'atrium.sqlite'), { readonly: true });
  const doneAtKill = (before.prepare("select count(*) as n from bulk_rows where status = 'completed'").get() as { n: number }).n;
  before.close();
  assert.ok(doneAtKill > 0 && doneAtKill < ROWS, `killed mid-job (${doneAtKill} of ${ROWS} done)`);

  const second = start(env);
  children.push(second.process);
  const port2 = Number((await second.line(/listening (\d+)/))[1]);
  const base2 = `http://127.0.0.1:${port2}/v1`;
  let final = await status(base2);
  for (let i = 0; i < 120 && final.status !== 'completed'; i++) {
    await new Promise((r) => setTimeout(r, 500));
    final = await status(base2);
  }
  assert.deepEqual([final.status, final.total_rows, final.rows_completed, final.rows_failed], ['completed', ROWS, ROWS, 0]);

  // The result file: every row once, in order, with its own output.
  const file = await fetch(`${base2}/bulk/download/${jobId}`, { headers: { authorization: `Bearer ${key.key}` } });
  const rows = parse(await file.text()) as string[][];
  assert.equal(rows.length, ROWS + 1);
  rows.slice(1).forEach((r, i) => assert.deepEqual(r, [String(i + 1), `row ${i + 1}`, `done:row ${i + 1}`, '']));

  second.process.kill('SIGTERM');
  await new Promise((resolve) => second.process.once('exit', resolve));
  const db = new Database(path.join(dataDir, 'atrium.sqlite'), { readonly: true });
  t.after(() => db.close());
  // Charged once per row: one committed hold and one usage record each, none left held.
  const holds = db.prepare("select status, count(*) as n, sum(committed_credits) as credits from credit_holds where feature = 'bulk' group by status").all() as { status: string; n: number; credits: number }[];
  assert.deepEqual(holds, [{ status: 'committed', n: ROWS, credits: ROWS }]);
  assert.equal((db.prepare("select count(*) as n from usage_records where feature = 'bulk'").get() as { n: number }).n, ROWS);
  assert.equal((db.prepare("select count(distinct hold_id) as n from usage_records where feature = 'bulk'").get() as { n: number }).n, ROWS);
  const account = db.prepare('select monthly + granted + purchased as available, held from credit_accounts where company_id = ?').get(companyId) as { available: number; held: number };
  assert.deepEqual(account, { available: 2000 + 10_000 - ROWS, held: 0 });
  // Rows in flight at the kill were asked again; none was charged twice.
  assert.ok(fake.seen.length >= ROWS);
});
