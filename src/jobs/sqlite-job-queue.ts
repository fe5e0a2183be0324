import type { Transaction } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/better-sqlite';
import type { Orm } from '../db/orm';
import { afterCommit, beforeCommit, currentEm, inUnitOfWork } from '../db/unit-of-work';
import { Job, type JobPayload } from './job.entity';
import type { Claim, EnqueueOptions, JobFilter, JobQueue, JobRecord, JobStatus } from './job-queue';

/** `<domain>.<name>`: lower-case words, dots, dashes, underscores, colons. */
const KIND = /^[a-z0-9_.:-]{1,64}$/;
const MAX_ERROR_LENGTH = 2000;
const MAX_DEDUPE_KEY_LENGTH = 255;

/** A live job: neither completed nor dead-lettered (the first two columns of the claim index). */
const LIVE = 'completed_at is null and dead_lettered_at is null';
/** Free to take: never leased, released after a run, or its worker stopped renewing. */
const LEASE_FREE = '(lease_owner is null or lease_expires_at <= ?)';

/** The rows of a status (see jobStatus), as a WHERE clause and its parameters. */
function statusWhere(status: JobStatus, now: number): [string, unknown[]] {
  switch (status) {
    case 'pending':
      return [`${LIVE} and attempts = 0 and ${LEASE_FREE}`, [now]];
    case 'running':
      return [`${LIVE} and lease_owner is not null and lease_expires_at > ?`, [now]];
    case 'failed':
      return [`${LIVE} and attempts > 0 and ${LEASE_FREE}`, [now]];
    case 'dead':
      return ['dead_lettered_at is not null', []];
    case 'done':
      return ['completed_at is not null', []];
  }
}

/** Thrown inside complete/fail's transaction to roll it back when the lease is gone. */
class LeaseLost extends Error {}

/**
 * The job queue on the process's SQLite database, through the ORM. SQLite
 * runs one write at a time, so each conditional UPDATE below is atomic
 * between processes sharing the file (the server, the CLI). Timestamps are
 * compared as MikroORM stores them: epoch milliseconds.
 */
export class SqliteJobQueue implements JobQueue {
  private readonly listeners: (() => void)[] = [];

  constructor(
    private readonly orm: Orm,
    private readonly defaults: { maxAttempts: number },
  ) {}

  enqueue(kind: string, payload: JobPayload = {}, options: EnqueueOptions = {}): JobRecord {
    if (!KIND.test(kind)) throw new Error(`Invalid job kind "${kind}"`);
    if (!inUnitOfWork(this.orm)) throw new Error('jobs.enqueue runs inside a unit of work (a request, a job, runInUnitOfWork or transaction)');
    const maxAttempts = options.maxAttempts ?? this.defaults.maxAttempts;
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new Error('maxAttempts must be an integer >= 1');
    const key = options.dedupeKey;
    if (key !== undefined && (key.length === 0 || key.length > MAX_DEDUPE_KEY_LENGTH)) {
      throw new Error(`A dedupe key has 1 to ${MAX_DEDUPE_KEY_LENGTH} characters`);
    }
    const em = currentEm(this.orm);
    // Inserted without its key; the key is taken just before COMMIT, where
    // the unique index decides: a taken key drops this row instead of
    // failing the caller's transaction.
    const job = em.create(Job, { kind, payload, runAt: options.runAt ?? new Date(), maxAttempts });
    if (key !== undefined) beforeCommit(em, (tx) => this.takeKey(em, tx, job.id, key));
    afterCommit(em, () => this.notify());
    return job;
  }

  onEnqueued(listener: () => void): void {
    this.listeners.push(listener);
  }

  async hasDue(kinds: readonly string[]): Promise<boolean> {
    if (!kinds.length) return false;
    const now = Date.now();
    const rows = await this.execute<unknown[]>(
      `select 1 from jobs where ${LIVE} and run_at <= ? and ${LEASE_FREE} and kind in (${marks(kinds)}) limit 1`,
      [now, now, ...kinds],
    );
    return rows.length > 0;
  }

  async reapExpired(kinds: readonly string[]): Promise<JobRecord[]> {
    if (!kinds.length) return [];
    const now = Date.now();
    const rows = await this.execute<Record<string, unknown>[]>(
      `update jobs set dead_lettered_at = ?, updated_at = ?, lease_owner = null, lease_expires_at = null, dedupe_key = null,
         last_error = 'The worker stopped during the last attempt (lease expired)'
       where ${LIVE} and lease_owner is not null and lease_expires_at <= ? and attempts >= max_attempts and kind in (${marks(kinds)})
       returning *`,
      [now, now, now, ...kinds],
    );
    return this.map(rows);
  }

  async claim(owner: string, kinds: readonly string[], limit: number, leaseSeconds: number): Promise<Claim[]> {
    if (!kinds.length || limit < 1) return [];
    const now = Date.now();
    // The subquery picks; the outer WHERE repeats the conditions, so a row
    // another process claimed meanwhile is skipped rather than stolen.
    const due = `${LIVE} and run_at <= ? and ${LEASE_FREE} and attempts < max_attempts and kind in (${marks(kinds)})`;
    const rows = await this.execute<Record<string, unknown>[]>(
      `update jobs set lease_owner = ?, lease_expires_at = ?, attempts = attempts + 1, updated_at = ?
       where id in (select id from jobs where ${due} order by run_at, id limit ?) and ${due}
       returning *`,
      [owner, now + leaseSeconds * 1000, now, now, now, ...kinds, limit, now, now, ...kinds],
    );
    return this.map(rows)
      .sort((a, b) => a.runAt.getTime() - b.runAt.getTime() || a.id.localeCompare(b.id))
      .map((job) => ({ job, owner }));
  }

  async renew(claim: Claim, leaseSeconds: number): Promise<boolean> {
    const now = Date.now();
    const result = await this.execute<{ affectedRows: number }>(
      `update jobs set lease_expires_at = ?, updated_at = ? where id = ? and lease_owner = ? and ${LIVE}`,
      [now + leaseSeconds * 1000, now, claim.job.id, claim.owner],
      'run',
    );
    return result.affectedRows > 0;
  }

  complete(claim: Claim): Promise<boolean> {
    const now = new Date();
    return this.settle(claim, {
      completedAt: now,
      leaseOwner: null,
      leaseExpiresAt: null,
      dedupeKey: null,
      updatedAt: now,
    });
  }

  fail(claim: Claim, error: string, retryAt: Date | null): Promise<boolean> {
    const now = new Date();
    const lastError = error.length > MAX_ERROR_LENGTH ? `${error.slice(0, MAX_ERROR_LENGTH - 1)}…` : error;
    return this.settle(
      claim,
      retryAt
        ? { runAt: retryAt, lastError, leaseOwner: null, leaseExpiresAt: null, updatedAt: now }
        : { deadLetteredAt: now, lastError, leaseOwner: null, leaseExpiresAt: null, dedupeKey: null, updatedAt: now },
    );
  }

  async hasLive(kind: string, payload: Record<string, string>): Promise<boolean> {
    const members = Object.entries(payload);
    if (members.some(([name]) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))) throw new Error('hasLive matches payload members named as identifiers');
    // Live rows are the claim index's first two columns: few, whatever the table holds.
    const rows = await this.execute<unknown[]>(
      `select 1 from jobs where ${LIVE} and kind = ?${members.map(() => ' and json_extract(payload, ?) = ?').join('')} limit 1`,
      [kind, ...members.flatMap(([name, value]) => [`$.${name}`, value])],
    );
    return rows.length > 0;
  }

  async list(filter: JobFilter): Promise<JobRecord[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.status) {
      const [sql, values] = statusWhere(filter.status, Date.now());
      where.push(sql);
      params.push(...values);
    }
    if (filter.kind) {
      where.push('kind = ?');
      params.push(filter.kind);
    }
    const rows = await this.execute<Record<string, unknown>[]>(
      `select * from jobs${where.length ? ` where ${where.join(' and ')}` : ''} order by id desc limit ?`,
      [...params, filter.limit],
    );
    return this.map(rows);
  }

  get(id: string): Promise<JobRecord | null> {
    return this.orm.em.fork().findOne(Job, { id });
  }

  async retry(id: string): Promise<{ job: JobRecord; retried: boolean } | null> {
    const now = Date.now();
    // The row as this update left it: a worker may claim it the moment it is due again.
    const rows = await this.execute<Record<string, unknown>[]>(
      `update jobs set dead_lettered_at = null, attempts = 0, run_at = ?, updated_at = ? where id = ? and dead_lettered_at is not null returning *`,
      [now, now, id],
    );
    const [retried] = this.map(rows);
    if (retried) {
      this.notify();
      return { job: retried, retried: true };
    }
    const job = await this.get(id);
    return job && { job, retried: false };
  }

  async prune(before: Date): Promise<number> {
    const result = await this.execute<{ affectedRows: number }>('delete from jobs where completed_at < ?', [before.getTime()], 'run');
    return result.affectedRows;
  }

  /**
   * Commits the current unit of work and the job's outcome in one
   * transaction, the outcome only while `claim.owner` still holds the lease.
   */
  private async settle(claim: Claim, outcome: Partial<Job>): Promise<boolean> {
    const em = currentEm(this.orm);
    await em.begin();
    try {
      await em.flush();
      const updated = await em.nativeUpdate(Job, { id: claim.job.id, leaseOwner: claim.owner, completedAt: null, deadLetteredAt: null }, outcome);
      if (updated === 0) throw new LeaseLost();
      await em.commit();
      return true;
    } catch (error) {
      await em.rollback();
      if (error instanceof LeaseLost) return false;
      throw error;
    }
  }

  /** Runs in the enqueuer's transaction, just before COMMIT. */
  private async takeKey(em: EntityManager, tx: Transaction, id: string, key: string): Promise<void> {
    const run = (sql: string, params: unknown[]) =>
      em.getConnection().execute<{ affectedRows: number }>(sql, params, 'run', tx);
    // OR IGNORE: when the unique index finds the key taken, no error, no change.
    if ((await run('update or ignore jobs set dedupe_key = ? where id = ?', [key, id])).affectedRows > 0) return;
    if ((await run('delete from jobs where id = ?', [id])).affectedRows > 0) return;
    // The row is not written yet (enqueued while this transaction was
    // already flushing): it goes with the em's next commit.
    beforeCommit(em, (next) => this.takeKey(em, next, id, key));
  }

  private notify(): void {
    for (const listener of this.listeners) listener();
  }

  private execute<T>(sql: string, params: unknown[], method: 'all' | 'run' = 'all'): Promise<T> {
    return this.orm.em.fork().getConnection().execute(sql, params, method) as Promise<T>;
  }

  private map(rows: Record<string, unknown>[]): JobRecord[] {
    const em = this.orm.em.fork();
    return rows.map((row) => em.map(Job, row));
  }
}

function marks(values: readonly unknown[]): string {
  return values.map(() => '?').join(', ');
}
