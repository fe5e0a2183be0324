import { int, type Env } from '../../env';
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

export function loadIdentityConfig(env: Env): IdentityConfig {
  const owner =
    env.ATRIUM_OWNER_EMAIL && env.ATRIUM_OWNER_PASSWORD
      ? { email: env.ATRIUM_OWNER_EMAIL, password: env.ATRIUM_OWNER_PASSWORD, company: env.ATRIUM_OWNER_COMPANY || 'Default' }
      : undefined;
  return {
    accessTokenTtlSeconds: 15 * 60,
    refreshTokenTtlSeconds: 30 * 24 * 3600,
    refreshReuseGraceSeconds: int(env, 'REFRESH_REUSE_GRACE_SECONDS', 30),
    scryptCost: int(env, 'SCRYPT_COST', 2 ** 15, 2),
    owner,
    emailChangeTokenTtlMinutes: int(env, 'EMAIL_CHANGE_TOKEN_TTL_MINUTES', 24 * 60, 1),
    accountDeletionGraceDays: int(env, 'ACCOUNT_DELETION_GRACE_DAYS', 14),
    accountDeletionIntervalSeconds: int(env, 'ACCOUNT_DELETION_INTERVAL_SECONDS', 3600),
    invitationTtlDays: int(env, 'INVITATION_TTL_DAYS', 7, 1),
    sso: loadSsoConfig(env),
    loginThrottle: loadLoginThrottleConfig(env),
    passwordReset: loadPasswordResetConfig(env),
  };
}
