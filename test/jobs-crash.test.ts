import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';

const CHILD = path.resolve(__dirname, 'fixtures/job-worker-child.js');

interface Child {
  process: ChildProcess;
  /** Resolves with the first stdout line matching `pattern`. */
  line(pattern: RegExp): Promise<RegExpMatchArray>;
  stderr(): string;
}

function startChild(dataDir: string, ...args: string[]): Child {
  const child = spawn(process.execPath, [CHILD, ...args], {
    // A short lease: the job of a killed process is taken over a second later.
    env: { ...process.env, DATA_DIR: dataDir, JOB_LEASE_SECONDS: '1', JOB_POLL_MS: '50', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const waiters: { pattern: RegExp; resolve: (match: RegExpMatchArray) => void }[] = [];
  child.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    for (const waiter of [...waiters]) {
      const match = out.match(waiter.pattern);
      if (match) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(match);
      }
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  return {
    process: child,
    line: (pattern) =>
      new Promise((resolve, reject) => {
        const match = out.match(pattern);
        if (match) return resolve(match);
        waiters.push({ pattern, resolve });
        // A start on a loaded machine can take long: the test is about the crash, not the start's speed.
        const timer = setTimeout(() => reject(new Error(`child never printed ${pattern}; stderr:\n${err}`)), 60_000);
        timer.unref();
        child.once('exit', (code) => reject(new Error(`child exited (${code}) before printing ${pattern}; stderr:\n${err}`)));
      }),
    stderr: () => err,
  };
}

async function waitFor<T>(what: string, probe: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

interface JobRow {
  id: string;
  attempts: number;
  lease_owner: string | null;
  completed_at: number | null;
  dead_lettered_at: number | null;
}

test('kill -9 during a job: after a restart the lease is taken over and the job takes effect exactly once', async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-crash-'));
  const children: ChildProcess[] = [];
  t.after(() => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const first = startChild(dataDir, '--enqueue', '--hang');
  children.push(first.process);
  const [, jobId, attempt] = await first.line(/started (\S+) (\d+)\n/);
  assert.equal(attempt, '1');
  first.process.kill('SIGKILL');
  await once(first.process, 'exit');

  const db = new Database(path.join(dataDir, 'atrium.sqlite'), { readonly: true });
  t.after(() => db.close());
  const job = () => db.prepare('select * from jobs where id = ?').get(jobId) as JobRow;
  const count = (query: string) => (db.prepare(query).pluck().get(jobId) as number) ?? 0;
  const effects = () => count('select count(*) from test_job_effects where job_id = ?');
  const runs = () => count('select count(*) from test_job_runs where job_id = ?');
  const outboxEffects = () => count("select count(*) from audit_events where action = 'test.crash_effect' and target_id = ?");

  const killed = job();
  assert.ok(killed.lease_owner, 'the dead worker still holds the lease');
  assert.equal(killed.completed_at, null);
  assert.deepEqual([effects(), runs(), outboxEffects()], [1, 1, 0], 'the immediate effect happened, the transactional one did not');

  const second = startChild(dataDir);
  children.push(second.process);
  await second.line(/started (\S+) 2\n/);
  const done = await waitFor('the job to complete', () => (job().completed_at ? job() : undefined));
  second.process.kill('SIGTERM');
  const [code] = (await once(second.process, 'exit')) as [number | null];
  assert.equal(code, 0, second.stderr());

  assert.equal(done.attempts, 2);
  assert.equal(done.lease_owner, null);
  assert.equal(done.dead_lettered_at, null);
  const attempts = db.prepare('select attempt, pid from test_job_runs where job_id = ? order by attempt').raw().all(jobId);
  assert.deepEqual(attempts, [
    [1, first.process.pid],
    [2, second.process.pid],
  ], 'the restarted process took the job over');
  assert.deepEqual([effects(), runs(), outboxEffects()], [1, 2, 1], 'two runs, each effect exactly once');
});
