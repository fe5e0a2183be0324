import type { JobPayload } from './job.entity';

export type { JobPayload } from './job.entity';

/** A job as the queue reports it (the columns of the `jobs` table). */
export interface JobRecord {
  readonly id: string;
  readonly kind: string;
  readonly payload: JobPayload;
  readonly runAt: Date;
  readonly attempts: number;
  readonly maxAttempts: number;
  readonly leaseOwner: string | null;
  readonly leaseExpiresAt: Date | null;
  readonly lastError: string | null;
  readonly deadLetteredAt: Date | null;
  readonly completedAt: Date | null;
  readonly dedupeKey: string | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

/**
 * What an operator sees (`atrium jobs --status`):
 * - `pending`: waiting for its first run (or put back by an operator);
 * - `running`: a worker holds an unexpired lease on it;
 * - `failed`: a run failed or its worker died; it is retried at `runAt`;
 * - `dead`: its attempts ran out; it waits for `atrium jobs --retry`;
 * - `done`: completed (kept for a while, then pruned).
 */
export const jobStatuses = ['pending', 'running', 'failed', 'dead', 'done'] as const;
export type JobStatus = (typeof jobStatuses)[number];

export function jobStatus(job: JobRecord, now = new Date()): JobStatus {
  if (job.completedAt) return 'done';
  if (job.deadLetteredAt) return 'dead';
  if (job.leaseOwner && job.leaseExpiresAt && job.leaseExpiresAt > now) return 'running';
  return job.attempts > 0 ? 'failed' : 'pending';
}

export interface EnqueueOptions {
  /** Not before then (default: now). */
  runAt?: Date;
  /** Runs before it is dead-lettered (default JOB_MAX_ATTEMPTS). */
  maxAttempts?: number;
  /**
   * At most one live (not completed, not dead-lettered) job per key: when a
   * live job holds the key at commit, this one is dropped. For singletons
   * ("expire this session", a recurring schedule).
   */
  dedupeKey?: string;
}

/** A job claimed by a worker: it holds the lease until it reports the outcome. */
export interface Claim {
  readonly job: JobRecord;
  readonly owner: string;
}

export interface JobFilter {
  status?: JobStatus;
  kind?: string;
  limit: number;
}

/**
 * The durable job queue (the port; src/jobs/sqlite-job-queue.ts is the
 * single-node adapter). Delivery is at least once: a run may be repeated
 * after a crash or a lost lease, so handlers are idempotent.
 *
 * Writes join the current unit of work (src/db/unit-of-work.ts): `enqueue`
 * commits with the caller's change (a transactional outbox), `complete` and
 * `fail` commit whatever the unit of work holds together with the outcome.
 */
export interface JobQueue {
  /**
   * Adds a job to the current unit of work without flushing: it commits
   * with the caller's next flush or enclosing `transaction()`, and not at
   * all if that rolls back. Throws outside a unit of work (the job would be
   * lost). With a `dedupeKey` the returned job may be dropped at commit.
   */
  enqueue(kind: string, payload?: JobPayload, options?: EnqueueOptions): JobRecord;

  /** Calls `listener` after each commit of this process that added a job (to wake a worker). */
  onEnqueued(listener: () => void): void;

  /** Whether a job of one of `kinds` is due or has an expired lease; a read only, cheap to poll. */
  hasDue(kinds: readonly string[]): Promise<boolean>;

  /**
   * Dead-letters the jobs of `kinds` whose worker died during their last
   * attempt (lease expired, attempts used up) and returns them.
   */
  reapExpired(kinds: readonly string[]): Promise<JobRecord[]>;

  /**
   * Leases up to `limit` due jobs of `kinds` to `owner` for `leaseSeconds`
   * and counts an attempt for each, atomically: two workers never claim
   * the same job while its lease runs. Takes over expired leases.
   */
  claim(owner: string, kinds: readonly string[], limit: number, leaseSeconds: number): Promise<Claim[]>;

  /** Extends a running claim's lease; false when it was lost (expired and taken over). */
  renew(claim: Claim, leaseSeconds: number): Promise<boolean>;

  /**
   * Commits the current unit of work together with the job's completion;
   * false, with nothing committed, when the lease was lost.
   */
  complete(claim: Claim): Promise<boolean>;

  /**
   * Commits the current unit of work together with a failed run: retried
   * at `retryAt`, or dead-lettered when it is null. False, with nothing
   * committed, when the lease was lost.
   */
  fail(claim: Claim, error: string, retryAt: Date | null): Promise<boolean>;

  /**
   * Whether a live job (neither completed nor dead-lettered) of `kind` has
   * each of `payload`'s members with that value: whether work that job
   * would do is still to come.
   */
  hasLive(kind: string, payload: Record<string, string>): Promise<boolean>;

  /** Newest first. */
  list(filter: JobFilter): Promise<JobRecord[]>;

  get(id: string): Promise<JobRecord | null>;

  /**
   * Puts a dead-lettered job back (attempts reset, due now). `retried` is
   * false when the job was not dead-lettered (then it is left as it was);
   * null when no job has the id.
   */
  retry(id: string): Promise<{ job: JobRecord; retried: boolean } | null>;

  /** Deletes jobs completed before `before`; returns how many. */
  prune(before: Date): Promise<number>;
}
