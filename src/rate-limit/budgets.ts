import type { Principal } from '../auth/principal';
import { AppError } from '../errors/catalog';
import type { RateLimitConfig } from '../kernel/config';
import type { RateLimitDecision, RateLimitStore } from './rate-limiter';

/**
 * The budgets a request can spend: `default` per credential (per IP without
 * one), and the stricter per-IP classes that operations declare (`auth` for
 * sign-in style operations, `feedback` for the public feedback collector).
 */
export const rateLimitClasses = ['default', 'auth', 'feedback'] as const;
export type RateLimitClass = (typeof rateLimitClasses)[number];

export interface BudgetHit extends RateLimitDecision {
  /** The class spent, or `daily` for a plan's daily request limit. */
  cls: RateLimitClass | 'daily';
  windowSeconds: number;
}

/** The rolling window of an AI-modules key's budget. */
export const MODULE_KEY_WINDOW_SECONDS = 60;

/**
 * A decision with its class, built in one literal. Adding the two members to
 * the store's object instead cost ~4% of a profile read's server time: every
 * hit grew the object's shape on the request path.
 */
function budgetHit(decision: RateLimitDecision, cls: BudgetHit['cls'], windowSeconds: number): BudgetHit {
  return {
    limit: decision.limit,
    remaining: decision.remaining,
    resetAt: decision.resetAt,
    allowed: decision.allowed,
    cls,
    windowSeconds,
  };
}

/** Rate-limit budgets over the store port, for every transport. */
export class Budgets {
  constructor(
    private readonly store: RateLimitStore,
    private readonly config: RateLimitConfig,
  ) {}

  /**
   * Counts a request against a budget (`units` for an operation that runs
   * several fields of the class at once); the transport shows the decision
   * and refuses when it is not allowed.
   */
  hit(cls: RateLimitClass, principal: Principal, ip: string, units = 1): BudgetHit {
    let key: string;
    let limit: number;
    if (principal.kind === 'module_key' && cls === 'default') {
      // AI-modules keys: a rolling minute per key, as that API documents.
      return budgetHit(this.store.slide(`mk:${principal.keyId}`, this.config.moduleKey, MODULE_KEY_WINDOW_SECONDS, Date.now(), units), cls, MODULE_KEY_WINDOW_SECONDS);
    }
    if (cls === 'auth' || cls === 'feedback') {
      key = `${cls}:${ip}`;
      limit = this.config[cls];
    } else if (principal.kind === 'user') {
      key = `u:${principal.userId}`;
      limit = this.config.authenticated;
    } else if (principal.kind === 'api_key') {
      key = `k:${principal.keyId}`;
      limit = this.config.authenticated;
    } else {
      key = `ip:${ip}`;
      limit = this.config.anonymous;
    }
    return budgetHit(this.store.hit(key, limit, units), cls, this.config.windowSeconds);
  }

  /** Counts `units` requests of `key` against a daily limit, reset at midnight UTC (a plan's daily requests). */
  daily(key: string, limit: number, units = 1): BudgetHit {
    return budgetHit(this.store.daily(key, limit, Date.now(), units), 'daily', 86_400);
  }

  /** The refusal of a spent budget: 429 rate_limited with Retry-After and the budget's headers. */
  static refusal(hit: BudgetHit): AppError {
    const retryAfter = Math.max(1, hit.resetAt - Math.floor(Date.now() / 1000));
    const detail =
      hit.cls === 'daily'
        ? `Daily limit of ${hit.limit} requests reached; it resets at midnight UTC`
        : `Rate limit of ${hit.limit} requests per ${hit.windowSeconds}s exceeded`;
    return new AppError('rate_limited', detail, { headers: { ...Budgets.headers(hit), 'retry-after': String(retryAfter) } });
  }

  /** The response headers of a decision: X-RateLimit-* and the IETF RateLimit-Policy / RateLimit pair. */
  static headers(hit: BudgetHit): Record<string, string> {
    const resetIn = Math.max(0, hit.resetAt - Math.floor(Date.now() / 1000));
    return {
      'x-ratelimit-limit': String(hit.limit),
      'x-ratelimit-remaining': String(hit.remaining),
      'x-ratelimit-reset': String(hit.resetAt),
      'ratelimit-policy': `"${hit.cls}";q=${hit.limit};w=${hit.windowSeconds}`,
      ratelimit: `"${hit.cls}";r=${hit.remaining};t=${resetIn}`,
    };
  }
}
