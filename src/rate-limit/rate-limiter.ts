import type { DailyCountStore } from './daily-counts';

/**
 * Rate-limit counters: a port. `MemoryRateLimiter` (fixed windows in this
 * process's memory) is the single-node adapter; a Redis store with the same
 * `hit` is the scale-out path, where every node must count the same window.
 */
export interface RateLimitDecision {
  limit: number;
  remaining: number;
  /** Unix epoch seconds at which the window resets. */
  resetAt: number;
  allowed: boolean;
}

interface Window {
  count: number;
  resetAt: number;
}

export interface RateLimitStore {
  /** Counts `units` hits of `key` (all or none) against `limit` in the current window. A refused hit is not counted. */
  hit(key: string, limit: number, units?: number, nowMs?: number): RateLimitDecision;
  /**
   * Counts `units` hits of `key` (all or none) against `limit` over the
   * rolling `windowSeconds` before now (not a fixed window: a burst at a
   * window's edge cannot pass twice the limit). A refused hit is not counted.
   */
  slide(key: string, limit: number, windowSeconds: number, nowMs?: number, units?: number): RateLimitDecision;
  /** Counts `units` hits of `key` (all or none) against `limit` for the current UTC day (reset at midnight UTC). A refused hit is not counted. */
  daily(key: string, limit: number, nowMs?: number, units?: number): RateLimitDecision;
}

const DAY_MS = 86_400_000;

export class MemoryRateLimiter implements RateLimitStore {
  private windows = new Map<string, Window>();
  private nextSweep = 0;
  /** Per key, the times (ms) of the hits inside its rolling window, oldest first. */
  private logs = new Map<string, number[]>();
  private nextLogSweep = 0;
  private days = new Map<string, { day: number; count: number }>();

  /** `persisted`: where daily counts outlive the process (without it they live in memory only). */
  constructor(
    private readonly windowSeconds: number,
    private readonly persisted?: DailyCountStore,
  ) {}

  hit(key: string, limit: number, units = 1, nowMs = Date.now()): RateLimitDecision {
    const now = Math.floor(nowMs / 1000);
    this.sweep(now);
    let window = this.windows.get(key);
    if (window === undefined || window.resetAt <= now) {
      window = { count: 0, resetAt: now + this.windowSeconds };
      this.windows.set(key, window);
    }
    // All or none, and a refused hit is not counted: an operation refused for its many fields leaves the budget to smaller ones.
    const allowed = window.count + units <= limit;
    if (allowed) window.count += units;
    return { limit, remaining: Math.max(0, limit - window.count), resetAt: window.resetAt, allowed };
  }

  slide(key: string, limit: number, windowSeconds: number, nowMs = Date.now(), units = 1): RateLimitDecision {
    const windowMs = windowSeconds * 1000;
    this.sweepLogs(nowMs, windowMs);
    let log = this.logs.get(key);
    if (!log) this.logs.set(key, (log = []));
    let expired = 0;
    while (expired < log.length && log[expired]! <= nowMs - windowMs) expired++;
    if (expired) log.splice(0, expired);
    const allowed = log.length + units <= limit;
    if (allowed) for (let i = 0; i < units; i++) log.push(nowMs);
    // The window frees its next slot when its oldest hit leaves it.
    const resetAt = Math.ceil(((log.length ? log[0]! : nowMs) + windowMs) / 1000);
    return { limit, remaining: Math.max(0, limit - log.length), resetAt, allowed };
  }

  daily(key: string, limit: number, nowMs = Date.now(), units = 1): RateLimitDecision {
    const day = Math.floor(nowMs / DAY_MS);
    let counter = this.days.get(key);
    if (!counter || counter.day !== day) {
      // Bounded: a key dropped here is read back from the persisted counts (without them, it starts again).
      if (this.days.size > 100_000) this.days.clear();
      this.days.set(key, (counter = { day, count: this.persisted?.load(key, day) ?? 0 }));
    }
    const allowed = counter.count + units <= limit;
    if (allowed) {
      counter.count += units;
      this.persisted?.add(key, day, units);
    }
    return { limit, remaining: Math.max(0, limit - counter.count), resetAt: ((day + 1) * DAY_MS) / 1000, allowed };
  }

  /** Drops logs whose every hit has left the window, at most once per window. */
  private sweepLogs(nowMs: number, windowMs: number): void {
    if (nowMs < this.nextLogSweep) return;
    this.nextLogSweep = nowMs + windowMs;
    for (const [key, log] of this.logs) if (!log.length || log[log.length - 1]! <= nowMs - windowMs) this.logs.delete(key);
  }

  /** Drops expired windows at most once per window, so the map stays bounded. */
  private sweep(now: number): void {
    if (now < this.nextSweep) return;
    this.nextSweep = now + this.windowSeconds;
    for (const [key, window] of this.windows) if (window.resetAt <= now) this.windows.delete(key);
  }
}
