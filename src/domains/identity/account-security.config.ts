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

export function loadLoginThrottleConfig(env: Env): LoginThrottleConfig {
  return {
    delayAfterFailures: int(env, 'LOGIN_DELAY_AFTER_FAILURES', 5, 0),
    maxDelaySeconds: int(env, 'LOGIN_DELAY_MAX_SECONDS', 60, 1),
    lockAfterFailures: int(env, 'LOGIN_LOCK_AFTER_FAILURES', 10, 0),
    lockSeconds: int(env, 'LOGIN_LOCK_SECONDS', 15 * 60, 1),
    failureMemorySeconds: int(env, 'LOGIN_FAILURE_MEMORY_SECONDS', 24 * 3600, 60),
  };
}

export function loadPasswordResetConfig(env: Env): PasswordResetConfig {
  return {
    ttlMinutes: int(env, 'PASSWORD_RESET_TTL_MINUTES', 30, 1),
    mailsPerHour: int(env, 'PASSWORD_RESET_MAILS_PER_HOUR', 5, 1),
  };
}
