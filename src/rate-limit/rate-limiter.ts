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
  /** Counts `units` hits of `key` (all or none allowed) against `limit` in the current window. */
  hit(key: string, limit: number, units?: number, nowMs?: number): RateLimitDecision;
}

export class MemoryRateLimiter implements RateLimitStore {
  private windows = new Map<string, Window>();
  private nextSweep = 0;

  constructor(private readonly windowSeconds: number) {}

  hit(key: string, limit: number, units = 1, nowMs = Date.now()): RateLimitDecision {
    const now = Math.floor(nowMs / 1000);
    this.sweep(now);
    let window = this.windows.get(key);
    if (window === undefined || window.resetAt <= now) {
      window = { count: 0, resetAt: now + this.windowSeconds };
      this.windows.set(key, window);
    }
    window.count += units;
    return {
      limit,
      remaining: Math.max(0, limit - window.count),
      resetAt: window.resetAt,
      allowed: window.count <= limit,
    };
  }

  /** Drops expired windows at most once per window, so the map stays bounded. */
  private sweep(now: number): void {
    if (now < this.nextSweep) return;
    this.nextSweep = now + this.windowSeconds;
    for (const [key, window] of this.windows) if (window.resetAt <= now) this.windows.delete(key);
  }
}
