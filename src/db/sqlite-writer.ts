import type Database from 'better-sqlite3';
import type { Knex } from '@mikro-orm/better-sqlite';
import type { Orm } from './orm';
import { afterCommit, openTransaction } from './unit-of-work';

/** Prepared statements over the write connection, run synchronously inside `SqliteWriter.write`. */
export interface SyncSql {
  run(sql: string, ...params: unknown[]): Database.RunResult;
  get<T>(sql: string, ...params: unknown[]): T | undefined;
  all<T>(sql: string, ...params: unknown[]): T[];
  /** Runs `fn` once the writes commit (at once for a write of its own; after the enclosing transaction otherwise). */
  afterCommit(fn: () => void): void;
  /** Rows changed by this write's statements so far. */
  readonly changes: number;
}

type Outcome = { ok: true; value: unknown; hooks: (() => void)[] } | { ok: false; error: unknown };

interface Pending {
  fn: (sql: SyncSql) => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Synchronous SQL on the ORM's own SQLite connection, for the few writes that
 * must be both atomic and fast (the credit ledger: a reserve and a commit
 * each ~10x cheaper than an ORM transaction, see bench/README.md).
 *
 * `write(fn)` runs `fn` with no await inside, so nothing else of this process
 * can interleave:
 * - inside a `transaction(orm, ...)` of the caller's unit of work, on that
 *   transaction's connection, as a savepoint: it commits or rolls back with
 *   the caller's other writes (the webhook's event record, its mail jobs);
 * - otherwise in a transaction of its own, BEGIN IMMEDIATE, after taking the
 *   connection from knex's pool (so it waits for another request's open
 *   transaction instead of joining it), shared with the other writes queued
 *   meanwhile (see `flush`). IMMEDIATE takes SQLite's write lock first, so
 *   another process writing the same file makes it wait (busy_timeout)
 *   rather than fail on upgrading a read.
 */
export class SqliteWriter {
  private readonly statements = new WeakMap<Database.Database, Map<string, Database.Statement>>();
  private readonly runners = new WeakMap<Database.Database, Database.Transaction<(batch: Pending[], outcomes: Outcome[]) => void>>();
  private readonly wrappers = new WeakMap<Database.Database, (fn: (sql: SyncSql) => unknown, sql: SyncSql) => unknown>();
  private readonly queue: Pending[] = [];
  private flushing = false;

  constructor(private readonly orm: Orm) {}

  async write<T>(fn: (sql: SyncSql) => T): Promise<T> {
    const em = openTransaction(this.orm);
    const trx = em?.getTransactionContext<Knex.Transaction>();
    if (em && trx) {
      const db = (await trx.client.acquireConnection()) as Database.Database;
      const hooks: (() => void)[] = [];
      const result = this.savepoint(db)(fn, this.sql(db, hooks)) as T;
      for (const hook of hooks) afterCommit(em, hook);
      return result;
    }
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (value: unknown) => void, reject } as Pending);
      if (!this.flushing) void this.flush();
    });
  }

  /**
   * Group commit: the writes queued while the connection is being taken run
   * in one IMMEDIATE transaction, each in a savepoint of its own (a write
   * that throws rolls back alone). A commit writes every page it changed to
   * the WAL, which costs more than the statements of a ledger write; sharing
   * it among concurrent callers is what lets the ledger keep up with them.
   * Each caller is answered, and its after-commit hooks run, once the
   * transaction has committed.
   */
  private async flush(): Promise<void> {
    this.flushing = true;
    const client = this.orm.em.getConnection().getKnex().client as Knex.Client;
    try {
      while (this.queue.length) {
        let db: Database.Database;
        try {
          db = (await client.acquireConnection()) as Database.Database;
        } catch (error) {
          for (const item of this.queue.splice(0)) item.reject(error);
          return;
        }
        // One turn of the event loop first: callers answered by the last batch queue their next write meanwhile.
        await new Promise((resolve) => setImmediate(resolve));
        const batch = this.queue.splice(0);
        const outcomes: Outcome[] = [];
        try {
          this.batchRunner(db).immediate(batch, outcomes);
        } catch (error) {
          // The transaction itself failed (the lock was not to be had, the commit failed): nothing of it was written.
          outcomes.splice(0, outcomes.length, ...batch.map((): Outcome => ({ ok: false, error })));
        } finally {
          await client.releaseConnection(db);
        }
        batch.forEach((item, i) => {
          const outcome = outcomes[i]!;
          if (!outcome.ok) return item.reject(outcome.error);
          for (const hook of outcome.hooks) {
            try {
              hook();
            } catch (error) {
              process.emitWarning(error as Error);
            }
          }
          item.resolve(outcome.value);
        });
      }
    } finally {
      this.flushing = false;
    }
  }

  /** The group commit's transaction: each queued write in a savepoint of its own. One per connection (building one costs ~12 µs). */
  private batchRunner(db: Database.Database): Database.Transaction<(batch: Pending[], outcomes: Outcome[]) => void> {
    let runner = this.runners.get(db);
    if (!runner) {
      runner = db.transaction((batch: Pending[], outcomes: Outcome[]) => {
        for (const item of batch) {
          const hooks: (() => void)[] = [];
          try {
            outcomes.push({ ok: true, value: this.savepoint(db)(item.fn, this.sql(db, hooks)), hooks });
          } catch (error) {
            outcomes.push({ ok: false, error });
          }
        }
      });
      this.runners.set(db, runner);
    }
    return runner;
  }

  /** `fn(sql)` in a savepoint of the open transaction (better-sqlite3 nests its transactions so); one wrapper per connection. */
  private savepoint(db: Database.Database): (fn: (sql: SyncSql) => unknown, sql: SyncSql) => unknown {
    let wrapper = this.wrappers.get(db);
    if (!wrapper) this.wrappers.set(db, (wrapper = db.transaction((fn: (sql: SyncSql) => unknown, sql: SyncSql) => fn(sql))));
    return wrapper;
  }

  private sql(db: Database.Database, hooks: (() => void)[]): SyncSql {
    const prepare = (text: string) => {
      let cache = this.statements.get(db);
      if (!cache) this.statements.set(db, (cache = new Map()));
      let statement = cache.get(text);
      if (!statement) cache.set(text, (statement = db.prepare(text)));
      return statement;
    };
    let changes = 0;
    return {
      run: (text, ...params) => {
        const result = prepare(text).run(...params);
        changes += result.changes;
        return result;
      },
      get: <T>(text: string, ...params: unknown[]) => prepare(text).get(...params) as T | undefined,
      all: <T>(text: string, ...params: unknown[]) => prepare(text).all(...params) as T[],
      afterCommit: (hook) => hooks.push(hook),
      get changes() {
        return changes;
      },
    };
  }
}
