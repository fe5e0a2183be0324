import { int, type Env } from '../../env';

/**
 * Brute-force protection of password sign-in and password reset by mail
 * (assembled by ./config.ts). The README's configuration table lists these.
 */

/** Per-address throttling of failed password logins (login-throttle.service.ts). */
export interface LoginThrottleConfig {
  /**
   * Consecutive failures after which each further attempt must wait
   * 2^(failures − this) seconds (1, 2, 4, … s); 0 turns the delays off.
   */
  delayAfterFailures: number;
  /** Longest wait between two attempts while delayed. */
  maxDelaySeconds: number;
  /** Consecutive failures that lock the address; 0 never locks. */
  lockAfterFailures: number;
  /** How long a lock lasts; a failure after it ends locks again at once. */
  lockSeconds: number;
  /** A failure more than this long after the previous one starts a new count. */
  failureMemorySeconds: number;
}

export interface PasswordResetConfig {
  /** How long a reset link stays valid. */
  ttlMinutes: number;
  /** Reset mails per user and hour through the public request (further requests are answered alike and send nothing). */
  mailsPerHour: number;
}

/** The largest value of each setting (see IDENTITY_SETTING_MAX in ./config.ts for why there are any). */
const ACCOUNT_SECURITY_SETTING_MAX = {
  /** A throttle that first acts after more guesses than this protects nothing; 0 turns it off instead. */
  LOGIN_DELAY_AFTER_FAILURES: 100,
  LOGIN_LOCK_AFTER_FAILURES: 100,
  /** A longer wait is a lock, which LOGIN_LOCK_* sets. */
  LOGIN_DELAY_MAX_SECONDS: 3600,
  /** Anyone can lock an address by failing on purpose: a longer lock keeps its owner out for days. */
  LOGIN_LOCK_SECONDS: 24 * 3600,
  /** Failures are kept this long (one row per address tried): a month is the longest a count needs. */
  LOGIN_FAILURE_MEMORY_SECONDS: 30 * 24 * 3600,
  /** A reset link sets a password: one older than a day is asked for again, not honoured. */
  PASSWORD_RESET_TTL_MINUTES: 24 * 60,
  /** More is no limit on the mails anyone can have sent to an address. */
  PASSWORD_RESET_MAILS_PER_HOUR: 100,
} as const;

const max = ACCOUNT_SECURITY_SETTING_MAX;

export function loadLoginThrottleConfig(env: Env): LoginThrottleConfig {
  return {
    delayAfterFailures: int(env, 'LOGIN_DELAY_AFTER_FAILURES', 5, 0, max.LOGIN_DELAY_AFTER_FAILURES),
    maxDelaySeconds: int(env, 'LOGIN_DELAY_MAX_SECONDS', 60, 1, max.LOGIN_DELAY_MAX_SECONDS),
    lockAfterFailures: int(env, 'LOGIN_LOCK_AFTER_FAILURES', 10, 0, max.LOGIN_LOCK_AFTER_FAILURES),
    lockSeconds: int(env, 'LOGIN_LOCK_SECONDS', 15 * 60, 1, max.LOGIN_LOCK_SECONDS),
    failureMemorySeconds: int(env, 'LOGIN_FAILURE_MEMORY_SECONDS', 24 * 3600, 60, max.LOGIN_FAILURE_MEMORY_SECONDS),
  };
}

export function loadPasswordResetConfig(env: Env): PasswordResetConfig {
  return {
    ttlMinutes: int(env, 'PASSWORD_RESET_TTL_MINUTES', 30, 1, max.PASSWORD_RESET_TTL_MINUTES),
    mailsPerHour: int(env, 'PASSWORD_RESET_MAILS_PER_HOUR', 5, 1, max.PASSWORD_RESET_MAILS_PER_HOUR),
  };
}
