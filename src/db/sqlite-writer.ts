import type Database from 'better-sqlite3';
import type { Knex } from '@mikro-orm/better-sqlite';
import type { Orm } from './orm';
import { afterCommit, currentEm, inUnitOfWork } from './unit-of-work';

/** Prepared statements over the write connection, run synchronously inside `SqliteWriter.write`. */
export interface SyncSql {
  run(sql: string, ...params: unknown[]): Database.RunResult;
  get<T>(sql: string, ...params: unknown[]): T | undefined;
  all<T>(sql: string, ...params: unknown[]): T[];
  /** Runs `fn` once the writes commit (at once for a write of its own; after the enclosing transaction otherwise). */
  afterCommit(fn: () => void): void;
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
 *   transaction instead of joining it). IMMEDIATE takes SQLite's write lock
 *   first, so another process writing the same file makes it wait
 *   (busy_timeout) rather than fail on upgrading a read.
 */
export class SqliteWriter {
  private readonly statements = new WeakMap<Database.Database, Map<string, Database.Statement>>();

  constructor(private readonly orm: Orm) {}

  async write<T>(fn: (sql: SyncSql) => T): Promise<T> {
    if (inUnitOfWork(this.orm)) {
      const em = currentEm(this.orm);
      const trx = em.isInTransaction() ? em.getTransactionContext<Knex.Transaction>() : undefined;
      if (trx) {
        const db = (await trx.client.acquireConnection()) as Database.Database;
        const hooks: (() => void)[] = [];
        const result = db.transaction(() => fn(this.sql(db, hooks)))();
        for (const hook of hooks) afterCommit(em, hook);
        return result;
      }
    }
    const client = this.orm.em.getConnection().getKnex().client as Knex.Client;
    const db = (await client.acquireConnection()) as Database.Database;
    const hooks: (() => void)[] = [];
    let result: T;
    try {
      result = db.transaction(() => fn(this.sql(db, hooks))).immediate();
    } finally {
      await client.releaseConnection(db);
    }
    for (const hook of hooks) {
      try {
        hook();
      } catch (error) {
        process.emitWarning(error as Error);
      }
    }
    return result;
  }

  private sql(db: Database.Database, hooks: (() => void)[]): SyncSql {
    const prepare = (text: string) => {
      let cache = this.statements.get(db);
      if (!cache) this.statements.set(db, (cache = new Map()));
      let statement = cache.get(text);
      if (!statement) cache.set(text, (statement = db.prepare(text)));
      return statement;
    };
    return {
      run: (text, ...params) => prepare(text).run(...params),
      get: <T>(text: string, ...params: unknown[]) => prepare(text).get(...params) as T | undefined,
      all: <T>(text: string, ...params: unknown[]) => prepare(text).all(...params) as T[],
      afterCommit: (hook) => hooks.push(hook),
    };
  }
}
