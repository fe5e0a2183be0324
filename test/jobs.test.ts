import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { build, sql } from './helper';
import { boot, type Atrium } from '../src/boot';
import { loadConfig } from '../src/config';
import { defineDomain } from '../src/kernel/domain';
import { loadKernelConfig, type JobsConfig } from '../src/kernel/config';
import { currentEm, runInUnitOfWork, transaction } from '../src/db/unit-of-work';
import { AuditEvent } from '../src/domains/audit/audit-event.entity';
import { JobWorker, retryDelaySeconds } from '../src/jobs/worker';
import type { JobPayload } from '../src/jobs/job-queue';

const CLI = path.resolve(__dirname, '../src/cli.js');

/** The worker's settings, fast: tests wait milliseconds, not seconds. */
function fastJobs(overrides: Partial<JobsConfig> = {}): JobsConfig {
  return { ...loadKernelConfig({}).jobs, pollMs: 20, retryBaseSeconds: 0.1, retryMaxSeconds: 1, ...overrides };
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined | null | false>, timeoutMs = 5000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > until) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

interface JobRow {
  id: string;
  kind: string;
  attempts: number;
  last_error: string | null;
  dead_lettered_at: number | null;
  completed_at: number | null;
  lease_owner: string | null;
  dedupe_key: string | null;
}

const jobsOf = (app: FastifyInstance, kind: string) => sql<JobRow>(app, 'select * from jobs where kind = ? order by id', [kind]);
const liveJobsOf = (app: FastifyInstance, kind: string) =>
  sql<JobRow>(app, 'select * from jobs where kind = ? and completed_at is null and dead_lettered_at is null', [kind]);

function enqueueIn(app: FastifyInstance, kind: string, payload: JobPayload = {}, options = {}) {
  return runInUnitOfWork(app.kernel.orm, async () => {
    const job = app.kernel.jobs.enqueue(kind, payload, options);
    await currentEm(app.kernel.orm).flush();
    return job;
  });
}

function atrium(dataDir: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn' }, timeout: 30_000 },
      // A process killed by a signal has no exit code: say which signal, so a failure says why.
      (error, stdout, stderr) =>
        resolve({
          code: error ? (typeof error.code === 'number' ? error.code : -1) : 0,
          stdout,
          stderr: error && typeof error.code !== 'number' ? `${stderr}(ended by ${error.signal ?? error.code ?? error.message})` : stderr,
        }),
    );
  });
}

const jsonLines = (out: string) =>
  out
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);

test('a job enqueued in a rolled-back transaction is never stored; one in a committed transaction is stored once and run at once', async (t) => {
  // Polling only every minute: the run can only come from the wake-up after the commit.
  const app = await build(t, { jobs: fastJobs({ pollMs: 60_000 }) });
  const orm = app.kernel.orm;
  const runs: JobPayload[] = [];
  app.kernel.worker.register('test.note', async (payload) => {
    runs.push(payload);
  });

  await runInUnitOfWork(orm, () =>
    assert.rejects(
      transaction(orm, async (em) => {
        em.create(AuditEvent, { action: 'test.change', actorType: 'system' });
        app.kernel.jobs.enqueue('test.note', { n: 1 });
        await em.flush();
        throw new Error('the change fails');
      }),
      /the change fails/,
    ),
  );
  assert.deepEqual(await jobsOf(app, 'test.note'), []);
  assert.deepEqual(await sql(app, "select id from audit_events where action = 'test.change'"), []);

  await runInUnitOfWork(orm, () =>
    transaction(orm, async (em) => {
      em.create(AuditEvent, { action: 'test.change', actorType: 'system' });
      app.kernel.jobs.enqueue('test.note', { n: 2 });
    }),
  );
  assert.equal((await sql(app, "select id from audit_events where action = 'test.change'")).length, 1);
  const [job] = await waitFor('the job to complete', async () => {
    const rows = await jobsOf(app, 'test.note');
    return rows[0]?.completed_at ? rows : undefined;
  });
  assert.equal((await jobsOf(app, 'test.note')).length, 1);
  assert.equal(job!.attempts, 1);
  assert.equal(job!.lease_owner, null);
  assert.deepEqual(runs, [{ n: 2 }]);
});

test('a job enqueued in a plain unit of work commits with its next flush; outside a unit of work enqueue refuses', async (t) => {
  const app = await build(t, { jobs: fastJobs() });
  const orm = app.kernel.orm;
  const runs: JobPayload[] = [];
  app.kernel.worker.register('test.note', async (payload) => {
    runs.push(payload);
  });
  await runInUnitOfWork(orm, async () => {
    app.kernel.jobs.enqueue('test.note', { n: 1 });
    assert.deepEqual(await jobsOf(app, 'test.note'), [], 'not stored before the flush');
    await currentEm(orm).flush();
  });
  await app.kernel.worker.drain();
  assert.deepEqual(runs, [{ n: 1 }]);
  assert.throws(() => app.kernel.jobs.enqueue('test.note', {}), /unit of work/);
  await runInUnitOfWork(orm, async () => assert.throws(() => app.kernel.jobs.enqueue('Not A Kind', {}), /Invalid job kind/));
});

test('whatever a handler leaves unflushed commits with its completion, and is dropped when it fails', async (t) => {
  const app = await build(t, { jobs: fastJobs() });
  const orm = app.kernel.orm;
  app.kernel.worker.register('test.effect', async (payload: { fail: boolean }, job) => {
    currentEm(orm).create(AuditEvent, { action: 'test.effect', actorType: 'system', data: { attempt: job.attempt } });
    app.kernel.jobs.enqueue('test.follow_up', { from: job.id });
    if (payload.fail && job.attempt === 1) throw new Error('first attempt fails');
  });
  await enqueueIn(app, 'test.effect', { fail: true });
  await waitFor('the retry to complete', async () => (await jobsOf(app, 'test.effect'))[0]?.completed_at);
  const effects = await sql<{ data: string }>(app, "select data from audit_events where action = 'test.effect'");
  assert.deepEqual(
    effects.map((row) => JSON.parse(row.data)),
    [{ attempt: 2 }],
  );
  assert.equal((await jobsOf(app, 'test.follow_up')).length, 1);
});

test('retries back off; a handler that always throws is dead-lettered after its attempts, and the CLI shows and retries it', async (t) => {
  const app = await build(t, { jobs: fastJobs({ retryBaseSeconds: 0.1 }) });
  const attempts: number[] = [];
  let healthy = false;
  app.kernel.worker.register('test.flaky', async (_payload, job) => {
    attempts.push(Date.now());
    if (!healthy) throw new Error(`upstream down (attempt ${job.attempt})`);
  });
  const job = await enqueueIn(app, 'test.flaky', { userId: 'u-1' }, { maxAttempts: 3 });

  const [dead] = await waitFor('dead-lettering', async () => {
    const rows = await jobsOf(app, 'test.flaky');
    return rows[0]?.dead_lettered_at ? rows : undefined;
  });
  assert.equal(dead!.attempts, 3);
  assert.equal(dead!.last_error, 'upstream down (attempt 3)');
  assert.equal(dead!.lease_owner, null);
  assert.equal(attempts.length, 3);
  // Retry n waits between half and all of base * 2^(n-1).
  assert.ok(attempts[1]! - attempts[0]! >= 50, `first retry after ${attempts[1]! - attempts[0]!} ms`);
  assert.ok(attempts[2]! - attempts[1]! >= 100, `second retry after ${attempts[2]! - attempts[1]!} ms`);

  // The CLI on the running server's database; read-only runs side by side to keep the test short.
  const dataDir = app.config.dataDir;
  const [list, shown] = await Promise.all([atrium(dataDir, 'jobs', '--status', 'dead'), atrium(dataDir, 'jobs', '--show', job.id)]);
  assert.equal(list.code, 0, list.stderr);
  const lines = jsonLines(list.stdout);
  assert.deepEqual(
    lines.map((line) => [line.id, line.kind, line.status, line.attempts, line.last_error]),
    [[job.id, 'test.flaky', 'dead', 3, 'upstream down (attempt 3)']],
  );
  assert.ok(lines[0]!.dead_lettered_at);
  assert.equal('payload' in lines[0]!, false, 'lists never print payloads');

  assert.equal(shown.code, 0, shown.stderr);
  assert.deepEqual(jsonLines(shown.stdout)[0]!.payload, { userId: 'u-1' });

  healthy = true;
  const retried = await atrium(dataDir, 'jobs', '--retry', job.id);
  assert.equal(retried.code, 0, retried.stderr);
  assert.equal(jsonLines(retried.stdout)[0]!.attempts, 0);
  // The server's worker finds it on its next poll.
  const [done] = await waitFor('the retried job to complete', async () => {
    const rows = await jobsOf(app, 'test.flaky');
    return rows[0]?.completed_at ? rows : undefined;
  });
  assert.equal(done!.attempts, 1);
  assert.equal(done!.dead_lettered_at, null);

  const [again, doneList, wrong] = await Promise.all([
    atrium(dataDir, 'jobs', '--retry', job.id),
    atrium(dataDir, 'jobs', '--status', 'done', '--kind', 'test.flaky'),
    atrium(dataDir, 'jobs', '--status', 'sleeping'),
  ]);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /is done, not dead-lettered/);
  assert.deepEqual(jsonLines(doneList.stdout).map((line) => line.id), [job.id]);
  assert.equal(wrong.code, 2);
  assert.match(wrong.stderr, /--status must be one of pending, running, failed, dead, done/);
});

test('retry delays double per attempt, with jitter, up to the cap', () => {
  assert.equal(retryDelaySeconds(1, 10, 3600, 0), 5);
  assert.equal(retryDelaySeconds(1, 10, 3600, 1), 10);
  assert.equal(retryDelaySeconds(3, 10, 3600, 1), 40);
  assert.equal(retryDelaySeconds(20, 10, 3600, 1), 3600);
  assert.equal(retryDelaySeconds(20, 10, 3600, 0), 1800);
});

test('a dedupe key keeps one live job per key, without failing the enqueuing change; it is free again once the job completed', async (t) => {
  const app = await build(t, { jobs: fastJobs() });
  const orm = app.kernel.orm;
  const key = { dedupeKey: 'session:42' };
  // No handler yet: the jobs stay pending.
  await enqueueIn(app, 'test.single', { n: 1 }, key);
  await enqueueIn(app, 'test.single', { n: 2 }, key);
  await runInUnitOfWork(orm, async () => {
    const em = currentEm(orm);
    em.create(AuditEvent, { action: 'test.with_duplicate', actorType: 'system' });
    app.kernel.jobs.enqueue('test.single', { n: 3 }, key);
    app.kernel.jobs.enqueue('test.single', { n: 4 }, key);
    await em.flush();
  });
  await runInUnitOfWork(orm, () => transaction(orm, async () => void app.kernel.jobs.enqueue('test.single', { n: 5 }, key)));
  const live = await liveJobsOf(app, 'test.single');
  assert.equal(live.length, 1);
  assert.equal(live[0]!.dedupe_key, 'session:42');
  assert.equal((await jobsOf(app, 'test.single')).length, 1, 'duplicates leave no row');
  assert.equal((await sql(app, "select id from audit_events where action = 'test.with_duplicate'")).length, 1, 'the change still commits');

  const runs: JobPayload[] = [];
  app.kernel.worker.register('test.single', async (payload) => {
    runs.push(payload);
  });
  await app.kernel.worker.drain();
  assert.deepEqual(runs, [{ n: 1 }]);
  const [done] = await jobsOf(app, 'test.single');
  assert.equal(done!.dedupe_key, null, 'a completed job releases its key');
  await enqueueIn(app, 'test.single', { n: 6 }, key);
  await app.kernel.worker.drain();
  assert.deepEqual(runs, [{ n: 1 }, { n: 6 }]);
});

test('a recurring schedule keeps exactly one pending job, also with a second worker on the same database', async (t) => {
  const app = await build(t, { jobs: fastJobs() });
  const log = { debug() {}, info() {}, warn() {}, error() {} };
  const second = new JobWorker(app.kernel.orm, app.kernel.jobs, fastJobs(), log);
  t.after(() => second.stop());
  const runs: string[] = [];
  for (const [name, worker] of [
    ['first', app.kernel.worker],
    ['second', second],
  ] as const) {
    worker.register('test.tick', async () => {
      runs.push(name);
    });
    await worker.schedule('test.tick', 0.05);
  }
  await second.start();
  const counts: number[] = [];
  await waitFor('five runs', async () => {
    counts.push((await liveJobsOf(app, 'test.tick')).length);
    return runs.length >= 5;
  });
  assert.deepEqual([...new Set(counts)], [1], 'always exactly one live job');
  const all = await jobsOf(app, 'test.tick');
  assert.ok(all.every((job) => job.attempts <= 1), 'no run was repeated');
  assert.equal(all.filter((job) => job.completed_at === null).length, 1);
  assert.equal((await liveJobsOf(app, 'jobs.prune')).length, 1, "the worker's own schedule");
});

test('a handler running longer than its lease keeps it by renewal; a worker whose lease was taken over cannot complete', async (t) => {
  const app = await build(t, { jobs: fastJobs({ leaseSeconds: 0.5 }) });
  const orm = app.kernel.orm;
  const log = { debug() {}, info() {}, warn() {}, error() {} };
  const second = new JobWorker(orm, app.kernel.jobs, fastJobs({ leaseSeconds: 0.5 }), log);
  t.after(() => second.stop());
  let runs = 0;
  for (const worker of [app.kernel.worker, second]) {
    worker.register('test.long', async () => {
      runs++;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    });
  }
  await second.start();
  await enqueueIn(app, 'test.long');
  await waitFor('the long job to complete', async () => (await jobsOf(app, 'test.long'))[0]?.completed_at);
  assert.equal(runs, 1);
  assert.equal((await jobsOf(app, 'test.long'))[0]!.attempts, 1);

  // The port directly, with a kind no worker handles.
  const queue = app.kernel.jobs;
  await enqueueIn(app, 'test.port', {}, { maxAttempts: 2 });
  const [stale] = await queue.claim('worker-a', ['test.port'], 1, 0.05);
  assert.equal(stale!.job.attempts, 1);
  assert.deepEqual(await queue.claim('worker-b', ['test.port'], 1, 0.05), [], 'not while the lease runs');
  await new Promise((resolve) => setTimeout(resolve, 80));
  const [current] = await queue.claim('worker-b', ['test.port'], 1, 60);
  assert.equal(current!.job.attempts, 2, 'the expired lease is taken over');
  assert.equal(await queue.renew(stale!, 60), false);
  const completedByStale = await runInUnitOfWork(orm, async () => {
    currentEm(orm).create(AuditEvent, { action: 'test.stale_effect', actorType: 'system' });
    return queue.complete(stale!);
  });
  assert.equal(completedByStale, false);
  assert.deepEqual(await sql(app, "select id from audit_events where action = 'test.stale_effect'"), [], 'rolled back');
  assert.equal(await runInUnitOfWork(orm, () => queue.complete(current!)), true);

  // A worker that dies during the last attempt: dead-lettered once its lease expires.
  await enqueueIn(app, 'test.port', {}, { maxAttempts: 1 });
  const [last] = await queue.claim('worker-a', ['test.port'], 1, 0.05);
  await new Promise((resolve) => setTimeout(resolve, 80));
  const reaped = await queue.reapExpired(['test.port']);
  assert.deepEqual(reaped.map((job) => job.id), [last!.job.id]);
  assert.match(reaped[0]!.lastError!, /lease expired/);
});

test("a domain's job handlers and schedules are run by a serving process, never by a CLI boot", async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-jobs-'));
  t.after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const runs: string[] = [];
  const testDomain = defineDomain({
    name: 'jobtest',
    requires: {},
    entities: [],
    migrations: [],
    create: () => ({ runs }),
    jobs: (api) => ({
      'jobtest.sweep': async () => {
        api.runs.push('sweep');
      },
    }),
    schedules: () => [{ kind: 'jobtest.sweep', everySeconds: 0.2 }],
  });
  const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' }, { jobs: fastJobs() });
  const sweeps = async (atrium: Atrium) => (await atrium.kernel.jobs.list({ kind: 'jobtest.sweep', limit: 10 })).length;

  const cli = await boot(config, { domains: [testDomain] });
  assert.equal(await sweeps(cli), 0, 'a CLI boot schedules nothing');
  await cli.close();

  const server = await boot(config, { domains: [testDomain], background: true });
  t.after(() => server.close());
  const [first] = await server.kernel.jobs.list({ kind: 'jobtest.sweep', limit: 10 });
  assert.equal(first!.dedupeKey, 'schedule:jobtest.sweep');
  assert.ok(first!.runAt.getTime() > Date.now(), 'the first run is one interval away');
  await waitFor('the first run', async () => runs.length === 1);
  const jobs = await server.kernel.jobs.list({ kind: 'jobtest.sweep', limit: 10 });
  assert.deepEqual(
    jobs.map((job) => [job.completedAt !== null, job.dedupeKey]),
    [
      [false, 'schedule:jobtest.sweep'],
      [true, null],
    ],
    'the next run is pending, keyed to its schedule',
  );
});
