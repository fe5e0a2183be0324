import { DateTimeType, Entity, Index, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';
import { uuidv7 } from '../ids';

/**
 * A job's arguments, stored as JSON. Keep it to ids and small values: the
 * handler reads current state from the database when it runs (the row may
 * wait through retries), and an operator may print it. Never secrets.
 */
export type JobPayload = Record<string, unknown>;

/**
 * One unit of background work (src/jobs). A row is live until it completes
 * or is dead-lettered. Completed rows stay for JOB_KEEP_DONE_SECONDS so an
 * operator can see recent work (`atrium jobs --status done`), then the
 * worker's `jobs.prune` removes them; dead-lettered rows stay until retried.
 */
@Entity({ tableName: 'jobs' })
// The claim query: live rows (both nulls) that are due, oldest first; pruning
// reads completed_at alone.
@Index({ name: 'jobs_completed_at_dead_lettered_at_run_at_index', properties: ['completedAt', 'deadLetteredAt', 'runAt'] })
export class Job {
  [OptionalProps]?:
    | 'id'
    | 'runAt'
    | 'attempts'
    | 'leaseOwner'
    | 'leaseExpiresAt'
    | 'lastError'
    | 'deadLetteredAt'
    | 'completedAt'
    | 'dedupeKey'
    | 'createdAt'
    | 'updatedAt';

  /** UUIDv7: ids sort by creation. */
  @PrimaryKey({ type: 'uuid' })
  id: string = uuidv7();

  /** Which handler runs it, `<domain>.<name>` (e.g. `identity.deletion_sweep`). */
  @Property({ type: 'string', length: 64 })
  kind!: string;

  @Property({ type: 'json' })
  payload!: JobPayload;

  /** Not before then: the enqueuer's choice, then each retry's backoff. */
  @Property({ type: DateTimeType })
  runAt: Date = new Date();

  /** Runs started so far (a claim counts one, even if its process died). */
  @Property({ type: 'integer' })
  attempts: number = 0;

  /** Dead-lettered when a run fails and this many have started. */
  @Property({ type: 'integer' })
  maxAttempts!: number;

  /** The worker running it; its lease ends at `leaseExpiresAt`, after which any worker may take it over. */
  @Property({ type: 'string', length: 128, nullable: true })
  leaseOwner: string | null = null;

  @Property({ type: DateTimeType, nullable: true })
  leaseExpiresAt: Date | null = null;

  /** The error of the latest failed run. */
  @Property({ type: 'text', nullable: true })
  lastError: string | null = null;

  /** Set when the attempts ran out; the job then waits for an operator (`atrium jobs --retry`). */
  @Property({ type: DateTimeType, nullable: true })
  deadLetteredAt: Date | null = null;

  @Property({ type: DateTimeType, nullable: true })
  completedAt: Date | null = null;

  /**
   * At most one live job holds a key (the unique index): enqueueing another
   * with a taken key is a no-op. Released (null) when the job completes or
   * is dead-lettered, so the next one can take it.
   */
  @Property({ type: 'string', length: 255, nullable: true, unique: 'jobs_dedupe_key_unique' })
  dedupeKey: string | null = null;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();

  @Property({ type: DateTimeType, onUpdate: () => new Date() })
  updatedAt: Date = new Date();
}
