import Database from 'better-sqlite3';
import type { Orm } from './orm';

/**
 * The hot read path: a read-only connection to the same SQLite file with
 * prepared statements cached. MikroORM stays the way to write and to run
 * everything else; the few reads on every request (profile, plan, models,
 * health) come here because an ORM round trip costs ~100x a prepared
 * statement (see bench/README.md). WAL lets it read while the ORM writes;
 * it sees committed data only.
 */
export class ReadStore {
  private readonly db: Database.Database;
  private readonly statements = new Map<string, Database.Statement>();
  private readonly dataVersionStatement: Database.Statement;
  /** Bumped by every write this process makes and by every change another process is seen to make. */
  private generation = 0;
  private lastDataVersion = -1;
  private lastCheckedAt = 0;

  constructor(databaseFile: string) {
    if (databaseFile === ':memory:') throw new Error('DATABASE_FILE must be a file; an in-memory database cannot be shared');
    this.db = new Database(databaseFile, { readonly: true, fileMustExist: true });
    this.db.pragma('busy_timeout = 5000');
    this.dataVersionStatement = this.db.prepare('pragma data_version').pluck();
  }

  get<T>(sql: string, ...params: unknown[]): T | undefined {
    return this.prepare(sql).get(...params) as T | undefined;
  }

  all<T>(sql: string, ...params: unknown[]): T[] {
    return this.prepare(sql).all(...params) as T[];
  }

  /**
   * Called for every statement this process writes with (the ORM reports
   * them, see services.ts), synchronously before it runs: values cached
   * before it are stale from now on.
   */
  noteWrite(): void {
    this.generation++;
  }

  /**
   * A number that changes whenever the database may have changed: at once
   * for this process's writes (noteWrite), and within EXTERNAL_WRITES_SEEN_MS
   * for other processes' (the CLI), through SQLite's `data_version`, which
   * changes whenever another connection commits.
   */
  version(): number {
    const now = Date.now();
    if (now - this.lastCheckedAt >= EXTERNAL_WRITES_SEEN_MS) {
      this.lastCheckedAt = now;
      const dataVersion = this.dataVersionStatement.get() as number;
      if (dataVersion !== this.lastDataVersion) {
        this.lastDataVersion = dataVersion;
        this.generation++;
      }
    }
    return this.generation;
  }

  close(): void {
    this.db.close();
  }

  private prepare(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }
}

/**
 * How soon another process's writes (the CLI's, on the same file) reach
 * values cached from hot reads. This process's own writes reach them at once.
 */
export const EXTERNAL_WRITES_SEEN_MS = 100;

/**
 * Values built from hot reads, kept until the database changes at all (see
 * ReadStore.version): never stale after a write of this process, and at most
 * EXTERNAL_WRITES_SEEN_MS after another process's. Any write drops every
 * entry, which suits data read on every request and written rarely (the
 * caller's profile, plans). Callers must treat the values as read-only: they
 * are shared between requests.
 */
export class VersionedCache<V> {
  private readonly entries = new Map<string, V>();
  private version = -1;

  constructor(
    private readonly reads: ReadStore,
    private readonly maxEntries = 10_000,
  ) {}

  /** The cached value when it is current; undefined when it would need a read. */
  peek(key: string): V | undefined {
    return this.reads.version() === this.version ? this.entries.get(key) : undefined;
  }

  get(key: string, load: () => V): V {
    // The version is taken before the read: a commit landing in between makes
    // the value newer than its version says, which only costs a reload.
    const version = this.reads.version();
    if (version !== this.version) {
      this.entries.clear();
      this.version = version;
    } else {
      const hit = this.entries.get(key);
      if (hit !== undefined) return hit;
    }
    const value = load();
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(key, value);
    return value;
  }
}

const READS_ONLY = /^\s*select\b/i;

/**
 * Reports every statement the ORM writes with to the read store. knex emits
 * `query` synchronously right before better-sqlite3 runs the statement (a
 * COMMIT included), so no cached read can slip in between.
 */
export function watchWrites(orm: Orm, reads: ReadStore): void {
  orm.em
    .getConnection()
    .getKnex()
    .on('query', (query: { sql: string }) => {
      if (!READS_ONLY.test(query.sql)) reads.noteWrite();
    });
}

/** SQLite stores MikroORM datetimes as epoch milliseconds. */
export const toDate = (ms: number | null): Date | null => (ms === null ? null : new Date(ms));
