import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Orm } from '../db/orm';
import { currentEm, runInUnitOfWork } from '../db/unit-of-work';
import { errorText, type Logger } from '../kernel/logger';
import type { Claim, JobPayload, JobQueue } from './job-queue';

/** What a handler learns about the run besides the payload. */
export interface RunningJob {
  readonly id: string;
  readonly kind: string;
  /** 1 on the first run; a run after a crash or a failure counts on. */
  readonly attempt: number;
  readonly maxAttempts: number;
  /**
   * Aborted when the lease is lost (another worker took the job over:
   * nothing will commit) or the process is stopping: stop early. A handler
   * that has not finished its work then throws, so the job is retried.
   */
  readonly signal: AbortSignal;
}

/**
 * Runs one job in its own unit of work. It may run more than once for one
 * job (at least once), so it must be idempotent. What it leaves unflushed
 * in the unit of work commits with the job's completion, in one
 * transaction; what it flushes itself commits at once. Throwing fails the
 * run: it is retried with backoff, then dead-lettered.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type JobHandler<P extends JobPayload = any> = (payload: P, job: RunningJob) => Promise<void>;

/** How long a kind's failed runs wait before their retry (default: the worker's JOB_RETRY_* settings). */
export interface RetryPolicy {
  /** Delay before the first retry; doubled for each further one, up to `maxSeconds` (equal: a fixed interval). */
  baseSeconds: number;
  maxSeconds: number;
}

/** A recurring job: exactly one pending job of the kind, run every `everySeconds` (after a run ends). */
export interface JobSchedule {
  kind: string;
  everySeconds: number;
}

export interface WorkerOptions {
  /** Milliseconds between looks for due jobs (an enqueue of this process wakes the worker at once). */
  pollMs: number;
  /** Jobs run at the same time. */
  concurrency: number;
  /** A claim's lease; renewed every third of it while the handler runs. */
  leaseSeconds: number;
  /** Delay before the first retry; doubled for each further one, up to `retryMaxSeconds`. */
  retryBaseSeconds: number;
  retryMaxSeconds: number;
  /** Completed jobs are kept this long, then pruned by the `jobs.prune` schedule. */
  keepDoneSeconds: number;
}

/** The worker's own schedule: removes completed jobs past JOB_KEEP_DONE_SECONDS. */
export const PRUNE_KIND = 'jobs.prune';
const PRUNE_EVERY_SECONDS = 3600;

/**
 * The delay before retry number `attempt` (1 = after the first failure):
 * exponential with a cap, and "equal jitter" (between half and all of it)
 * so jobs that failed together do not retry together.
 */
export function retryDelaySeconds(attempt: number, baseSeconds: number, maxSeconds: number, random = Math.random()): number {
  const full = Math.min(baseSeconds * 2 ** Math.max(0, attempt - 1), maxSeconds);
  return full / 2 + (full / 2) * random;
}

/**
 * The in-process job worker: claims due jobs of the kinds it has handlers
 * for, runs each in its own unit of work, and reports the outcome. It looks
 * every `pollMs`, and at once after this process commits an enqueue.
 * Started by a serving process only (boot with `background`).
 */
export class JobWorker {
  /** Lease owner: unique per process start, readable by an operator. */
  readonly owner = `${hostname().slice(0, 64)}:${process.pid}:${randomBytes(3).toString('hex')}`;
  private readonly handlers = new Map<string, JobHandler>();
  private readonly retries = new Map<string, RetryPolicy>();
  private readonly schedules = new Map<string, number>();
  private readonly running = new Set<Promise<void>>();
  /** The leases of the running handlers, aborted when the process stops. */
  private readonly leases = new Set<AbortController>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<number> | undefined;
  private wakeQueued = false;
  private started = false;
  private stopped = false;

  constructor(
    private readonly orm: Orm,
    private readonly queue: JobQueue,
    private readonly options: WorkerOptions,
    private readonly log: Logger,
  ) {
    queue.onEnqueued(() => this.wake());
    this.register(PRUNE_KIND, async () => {
      const pruned = await queue.prune(new Date(Date.now() - options.keepDoneSeconds * 1000));
      if (pruned) log.info({ pruned }, 'completed jobs pruned');
    });
  }

  /** Adds the handler of `kind` (also on a running worker), with its own retry delays if given. A kind has one handler. */
  register(kind: string, handler: JobHandler, retry?: RetryPolicy): void {
    if (this.handlers.has(kind)) throw new Error(`Job kind "${kind}" has a handler already`);
    this.handlers.set(kind, handler);
    if (retry) this.retries.set(kind, retry);
    this.wake();
  }

  /**
   * Keeps one pending job of `kind` (which needs a handler), run every
   * `everySeconds`: enqueued for one interval from now if none is pending
   * (in any process), and again each time a run completes or is
   * dead-lettered. Durable: the pending job survives restarts (it keeps its
   * time), and its dedupe key keeps two processes from doubling it.
   */
  async schedule(kind: string, everySeconds: number): Promise<void> {
    if (!this.handlers.has(kind)) throw new Error(`Scheduled job kind "${kind}" has no handler`);
    if (!(everySeconds > 0)) throw new Error(`Schedule of "${kind}": everySeconds must be > 0`);
    this.schedules.set(kind, everySeconds);
    if (this.started) await this.ensureScheduled(kind);
  }

  /** Starts polling, and enqueues each schedule's next run unless one is pending. */
  async start(): Promise<void> {
    if (this.started || this.stopped) return;
    this.started = true;
    if (!this.schedules.has(PRUNE_KIND)) this.schedules.set(PRUNE_KIND, PRUNE_EVERY_SECONDS);
    for (const kind of this.schedules.keys()) await this.ensureScheduled(kind);
    this.timer = setInterval(() => void this.tick(), this.options.pollMs);
    this.timer.unref();
    this.wake();
  }

  /** Stops claiming, tells the running handlers to stop (their signal), and waits for them to finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    for (const lease of this.leases) lease.abort();
    await this.ticking;
    await Promise.allSettled([...this.running]);
  }

  /**
   * Resolves once no job is running and none is due (a retry planned for
   * later is not waited for). For tests and one-off scripts.
   */
  async drain(): Promise<void> {
    for (;;) {
      await Promise.allSettled([...this.running]);
      const claimed = await this.tick();
      if (claimed === 0 && this.running.size === 0) return;
    }
  }

  /** Looks for due jobs soon (coalesced). */
  wake(): void {
    if (!this.started || this.stopped || this.wakeQueued) return;
    this.wakeQueued = true;
    setImmediate(() => {
      this.wakeQueued = false;
      void this.tick();
    });
  }

  /** One look for due jobs (one at a time); returns how many it claimed. */
  private tick(): Promise<number> {
    if (!this.started || this.stopped) return Promise.resolve(0);
    this.ticking ??= this.claimAndRun()
      .catch((error) => {
        this.log.error({ err: errorText(error) }, 'job worker: claiming failed');
        return 0;
      })
      .finally(() => (this.ticking = undefined));
    return this.ticking;
  }

  private async claimAndRun(): Promise<number> {
    const free = this.options.concurrency - this.running.size;
    const kinds = [...this.handlers.keys()];
    // A plain read first: polling an idle queue writes nothing (and so does
    // not invalidate the read caches, which watch every write).
    if (free <= 0 || !(await this.queue.hasDue(kinds))) return 0;
    for (const job of await this.queue.reapExpired(kinds)) {
      this.log.error({ jobId: job.id, kind: job.kind, attempts: job.attempts }, 'job dead-lettered: its worker stopped during the last attempt');
      if (this.schedules.has(job.kind)) await this.ensureScheduled(job.kind);
    }
    const claims = await this.queue.claim(this.owner, kinds, free, this.options.leaseSeconds);
    for (const claim of claims) {
      const run = this.run(claim).finally(() => {
        this.running.delete(run);
        // A slot is free: there may be more due work.
        this.wake();
      });
      this.running.add(run);
    }
    return claims.length;
  }

  private async run(claim: Claim): Promise<void> {
    const { job } = claim;
    const handler = this.handlers.get(job.kind)!;
    const lease = new AbortController();
    this.leases.add(lease);
    let finished = false;
    const renewal = setInterval(() => {
      this.queue.renew(claim, this.options.leaseSeconds).then(
        (held) => {
          // A renewal that waited for the completing transaction finds the lease released.
          if (held || finished || lease.signal.aborted) return;
          this.log.warn({ jobId: job.id, kind: job.kind }, 'job lease lost: another worker may run it');
          lease.abort();
        },
        (error) => this.log.warn({ jobId: job.id, kind: job.kind, err: errorText(error) }, 'job lease renewal failed'),
      );
    }, (this.options.leaseSeconds * 1000) / 3);
    renewal.unref();
    const context: RunningJob = { id: job.id, kind: job.kind, attempt: job.attempts, maxAttempts: job.maxAttempts, signal: lease.signal };
    const started = Date.now();
    let failure: unknown;
    try {
      const completed = await runInUnitOfWork(this.orm, async () => {
        await handler(job.payload, context);
        // The next run of a schedule commits with this one's completion.
        if (this.schedules.has(job.kind)) this.enqueueNextRun(job.kind);
        return this.queue.complete(claim);
      });
      if (completed) this.log.debug({ jobId: job.id, kind: job.kind, attempt: job.attempts, ms: Date.now() - started }, 'job completed');
      else this.log.warn({ jobId: job.id, kind: job.kind }, 'job lease lost before completion: its changes were rolled back');
    } catch (error) {
      failure = error;
    } finally {
      finished = true;
      clearInterval(renewal);
      this.leases.delete(lease);
    }
    if (failure !== undefined) await this.recordFailure(claim, failure);
  }

  /** The handler's unit of work is dropped; the failure is recorded in a new one. */
  private async recordFailure(claim: Claim, error: unknown): Promise<void> {
    const { job } = claim;
    const dead = job.attempts >= job.maxAttempts;
    const retry = this.retries.get(job.kind) ?? { baseSeconds: this.options.retryBaseSeconds, maxSeconds: this.options.retryMaxSeconds };
    const retryAt = dead ? null : new Date(Date.now() + retryDelaySeconds(job.attempts, retry.baseSeconds, retry.maxSeconds) * 1000);
    const fields = { jobId: job.id, kind: job.kind, attempt: job.attempts, maxAttempts: job.maxAttempts, err: errorText(error) };
    try {
      const recorded = await runInUnitOfWork(this.orm, async () => {
        if (dead && this.schedules.has(job.kind)) this.enqueueNextRun(job.kind);
        return this.queue.fail(claim, errorText(error), retryAt);
      });
      if (!recorded) this.log.warn(fields, 'job failed after its lease was lost');
      else if (dead) this.log.error(fields, 'job dead-lettered: its attempts ran out');
      else this.log.warn({ ...fields, retryAt: retryAt!.toISOString() }, 'job failed; will retry');
    } catch (recordError) {
      // The lease runs out and the job is taken over: nothing is lost.
      this.log.error({ ...fields, recordErr: errorText(recordError) }, 'job failed and the failure could not be recorded');
    }
  }

  /** Adds the next run of a schedule to the current unit of work; its key keeps it the only pending one. */
  private enqueueNextRun(kind: string): void {
    const runAt = new Date(Date.now() + this.schedules.get(kind)! * 1000);
    this.queue.enqueue(kind, {}, { dedupeKey: `schedule:${kind}`, runAt });
  }

  /** A schedule's pending job, due in one interval, unless one is pending; committed on its own. */
  private ensureScheduled(kind: string): Promise<void> {
    return runInUnitOfWork(this.orm, async () => {
      this.enqueueNextRun(kind);
      await currentEm(this.orm).flush();
    });
  }
}
