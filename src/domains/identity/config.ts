import { ConfigError, int, type Env } from '../../env';
import type { KernelConfig } from '../../kernel/config';
import {
  loadLoginThrottleConfig,
  loadPasswordResetConfig,
  type LoginThrottleConfig,
  type PasswordResetConfig,
} from './account-security.config';
import { loadSsoConfig, type SsoConfig } from './sso.config';

/** The identity domain's settings. The README's configuration table lists each variable. */
export interface IdentityConfig {
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
  /**
   * A rotated refresh token presented again within this many seconds is the
   * loser of a client race (401 only); later it is taken as stolen: the session
   * is revoked (its newest tokens fail too) and the reuse is audited.
   */
  refreshReuseGraceSeconds: number;
  /** Password hashing cost (scrypt N). Lowered only by tests. */
  scryptCost: number;
  /** On a start with no user yet, this company and owner are created (ATRIUM_OWNER_*). */
  owner?: { email: string; password: string; company: string };
  /** How long an email-change confirmation link stays valid (EMAIL_CHANGE_TOKEN_TTL_MINUTES). */
  emailChangeTokenTtlMinutes: number;
  /** Days between an account-deletion request and its execution (ACCOUNT_DELETION_GRACE_DAYS). */
  accountDeletionGraceDays: number;
  /** Seconds between sweeps that execute due account deletions; 0 turns the sweep off (ACCOUNT_DELETION_INTERVAL_SECONDS). */
  accountDeletionIntervalSeconds: number;
  /** Days an emailed invitation link stays valid (INVITATION_TTL_DAYS). */
  invitationTtlDays: number;
  /** Single sign-on providers and the start endpoint's redirect_uri allow-list (SSO_*). */
  sso: SsoConfig;
  /** Per-address delays and lock after failed password logins (LOGIN_*). */
  loginThrottle: LoginThrottleConfig;
  /** Password reset links: lifetime and mails per user and hour (PASSWORD_RESET_*). */
  passwordReset: PasswordResetConfig;
}

/** What identity's services read: their own settings and the kernel's (public URL, log level). */
export type IdentitySettings = KernelConfig & IdentityConfig;

/**
 * The largest value each identity setting takes: beyond it a value is a typo
 * or works against what the setting is for, so it stops the start (ConfigError)
 * instead of failing at the first sign-in or stretching a link's life for years.
 */
const IDENTITY_SETTING_MAX = {
  /** A client racing itself retries within seconds; a longer grace only lets a stolen token be replayed unnoticed. */
  REFRESH_REUSE_GRACE_SECONDS: 3600,
  /**
   * Each hash holds 128 * N * r bytes (r = 8) and its CPU time grows alike: 1 GiB and
   * seconds at 2^20, for every sign-in. (node's own limit, N < 2^32, is checked only when
   * a hash is made, and maxmem is passed as twice the need, so neither bounds it sooner.)
   */
  SCRYPT_COST: 2 ** 20,
  /** A confirmation link is a credential lying in a mailbox: a week covers anyone away for one. */
  EMAIL_CHANGE_TOKEN_TTL_MINUTES: 7 * 24 * 60,
  /** A deletion a year out is no grace period any more; the user can ask again. */
  ACCOUNT_DELETION_GRACE_DAYS: 365,
  /** Due deletions wait at most one sweep: a day keeps the grace, counted in days, about right. */
  ACCOUNT_DELETION_INTERVAL_SECONDS: 24 * 3600,
  /** An invitation unanswered for a quarter is resent (a new link), not kept open. */
  INVITATION_TTL_DAYS: 90,
} as const;

const max = IDENTITY_SETTING_MAX;

/** scrypt takes only a power of two for N; any other value would fail every sign-in, not the start. */
function scryptCost(env: Env): number {
  const cost = int(env, 'SCRYPT_COST', 2 ** 15, 2, max.SCRYPT_COST);
  if ((cost & (cost - 1)) !== 0) throw new ConfigError(`SCRYPT_COST must be a power of two from 2 to ${max.SCRYPT_COST}, got "${env.SCRYPT_COST}"`);
  return cost;
}

export function loadIdentityConfig(env: Env): IdentityConfig {
  const owner =
    env.ATRIUM_OWNER_EMAIL && env.ATRIUM_OWNER_PASSWORD
      ? { email: env.ATRIUM_OWNER_EMAIL, password: env.ATRIUM_OWNER_PASSWORD, company: env.ATRIUM_OWNER_COMPANY || 'Default' }
      : undefined;
  return {
    accessTokenTtlSeconds: 15 * 60,
    refreshTokenTtlSeconds: 30 * 24 * 3600,
    refreshReuseGraceSeconds: int(env, 'REFRESH_REUSE_GRACE_SECONDS', 30, 0, max.REFRESH_REUSE_GRACE_SECONDS),
    scryptCost: scryptCost(env),
    owner,
    emailChangeTokenTtlMinutes: int(env, 'EMAIL_CHANGE_TOKEN_TTL_MINUTES', 24 * 60, 1, max.EMAIL_CHANGE_TOKEN_TTL_MINUTES),
    accountDeletionGraceDays: int(env, 'ACCOUNT_DELETION_GRACE_DAYS', 14, 0, max.ACCOUNT_DELETION_GRACE_DAYS),
    accountDeletionIntervalSeconds: int(env, 'ACCOUNT_DELETION_INTERVAL_SECONDS', 3600, 0, max.ACCOUNT_DELETION_INTERVAL_SECONDS),
    invitationTtlDays: int(env, 'INVITATION_TTL_DAYS', 7, 1, max.INVITATION_TTL_DAYS),
    sso: loadSsoConfig(env),
    loginThrottle: loadLoginThrottleConfig(env),
    passwordReset: loadPasswordResetConfig(env),
  };
}
