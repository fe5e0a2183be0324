import type { ReadStore } from '../db/read-store';
import type { SqliteWriter } from '../db/sqlite-writer';

/** Where a daily limit's counts outlive the process (MemoryRateLimiter keeps the live ones). */
export interface DailyCountStore {
  /** The requests of `key` counted on `day` so far, this process's unwritten ones included. */
  load(key: string, day: number): number;
  /** Counts `units` more requests of `key` on `day` (written soon, not at once). */
  add(key: string, day: number, units?: number): void;
}

/** How often counted requests are written: a restart forgets at most this much of a day. */
const FLUSH_MS = 1000;

/**
 * Daily counts in SQLite: the first request of a key in a day reads its row
 * (one indexed read), and the counts are added to the rows in one write a
 * second, off the request path. Another process on the same file adds its
 * own counts to the same rows; each reads the others' only on its first
 * request of a key in the day.
 */
export class SqliteDailyCounts implements DailyCountStore {
  private pending = new Map<string, { key: string; day: number; count: number }>();
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly reads: ReadStore,
    private readonly writer: SqliteWriter,
  ) {
    this.timer = setInterval(() => void this.flush(), FLUSH_MS);
    this.timer.unref();
  }

  load(key: string, day: number): number {
    const stored = this.reads.get<{ count: number }>('select count from daily_request_counts where key = ? and day = ?', key, day)?.count ?? 0;
    return stored + (this.pending.get(`${day}:${key}`)?.count ?? 0);
  }

  add(key: string, day: number, units = 1): void {
    const id = `${day}:${key}`;
    const entry = this.pending.get(id);
    if (entry) entry.count += units;
    else this.pending.set(id, { key, day, count: units });
  }

  /** Writes the counts not yet written, and forgets days before yesterday. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (!this.pending.size) return;
      const batch = [...this.pending.values()];
      this.pending = new Map();
      try {
        await this.writer.write((sql) => {
          for (const { key, day, count } of batch) {
            sql.run('insert into daily_request_counts (key, day, count) values (?, ?, ?) on conflict (key, day) do update set count = count + excluded.count', key, day, count);
          }
          sql.run('delete from daily_request_counts where day < ?', Math.min(...batch.map((b) => b.day)) - 1);
        });
      } catch {
        // Not written (the database busy or closing): counted again with the next write.
        for (const entry of batch) {
          const id = `${entry.day}:${entry.key}`;
          const now = this.pending.get(id);
          if (now) now.count += entry.count;
          else this.pending.set(id, entry);
        }
      }
    });
    return this.flushing;
  }

  /** Stops the timer and writes what is left (before the database closes). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
