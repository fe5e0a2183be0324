import type { Orm } from './orm';
import type { ReadStore } from './read-store';

/**
 * The cache-invalidation signal (a port): a number that changes whenever
 * the data may have changed. Caches of hot reads keep a value while the
 * number they saw stays the same. The single-node adapter below watches
 * this process's writes and SQLite's `data_version`; a multi-node one would
 * bump the number on a message from the other nodes (Postgres NOTIFY,
 * Redis pub/sub).
 */
export interface ChangeSignal {
  version(): number;
}

/**
 * How soon another process's writes (the CLI's, on the same file) reach
 * values cached from hot reads. This process's own writes reach them at once.
 */
export const EXTERNAL_WRITES_SEEN_MS = 100;

/**
 * The single-node adapter: bumped by every statement this process writes
 * with (`watchWrites`), and within EXTERNAL_WRITES_SEEN_MS by another
 * process's commit, seen through SQLite's `data_version`.
 */
export class SqliteChangeSignal implements ChangeSignal {
  /** Bumped by every write this process makes and by every change another process is seen to make. */
  private generation = 0;
  private lastDataVersion = -1;
  private lastCheckedAt = 0;

  constructor(private readonly reads: ReadStore) {}

  /** Called synchronously before each statement this process writes with: values cached before it are stale from now on. */
  noteWrite(): void {
    this.generation++;
  }

  version(): number {
    const now = Date.now();
    if (now - this.lastCheckedAt >= EXTERNAL_WRITES_SEEN_MS) {
      this.lastCheckedAt = now;
      const dataVersion = this.reads.dataVersion();
      if (dataVersion !== this.lastDataVersion) {
        this.lastDataVersion = dataVersion;
        this.generation++;
      }
    }
    return this.generation;
  }
}

const READS_ONLY = /^\s*select\b/i;

/**
 * Reports every statement the ORM writes with to the signal. knex emits
 * `query` synchronously right before better-sqlite3 runs the statement (a
 * COMMIT included), so no cached read can slip in between.
 */
export function watchWrites(orm: Orm, signal: SqliteChangeSignal): void {
  orm.em
    .getConnection()
    .getKnex()
    .on('query', (query: { sql: string }) => {
      if (!READS_ONLY.test(query.sql)) signal.noteWrite();
    });
}

/**
 * Values built from hot reads, kept until the data changes at all (see
 * ChangeSignal): never stale after a write of this process, and at most
 * EXTERNAL_WRITES_SEEN_MS after another process's. Any write drops every
 * entry, which suits data read on every request and written rarely (the
 * caller's profile, plans). Callers must treat the values as read-only: they
 * are shared between requests.
 */
export class VersionedCache<V> {
  private readonly entries = new Map<string, V>();
  private version = -1;

  constructor(
    private readonly changes: ChangeSignal,
    private readonly maxEntries = 10_000,
  ) {}

  /** The cached value when it is current; undefined when it would need a read. */
  peek(key: string): V | undefined {
    return this.changes.version() === this.version ? this.entries.get(key) : undefined;
  }

  get(key: string, load: () => V): V {
    // The version is taken before the read: a commit landing in between makes
    // the value newer than its version says, which only costs a reload.
    const version = this.changes.version();
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
