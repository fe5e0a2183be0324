import path from 'node:path';
import { parseKeyring } from './crypto/secret-box';
import { loadSsoConfig, type SsoConfig } from './domains/identity/sso.config';
import {
  loadLoginThrottleConfig,
  loadPasswordResetConfig,
  type LoginThrottleConfig,
  type PasswordResetConfig,
} from './domains/identity/account-security.config';
import { loadConnectorsConfig, type ConnectorsConfig } from './domains/admin/connectors.config';

/**
 * Every setting Atrium reads, with its default. The README's configuration table
 * is written from this file; keep the two in step.
 */
export interface Config {
  host: string;
  port: number;
  dataDir: string;
  /** SQLite file; ':memory:' is accepted for tests. */
  databaseFile: string;
  publicUrl: string;
  docsUrl: string;
  logLevel: string;
  /** Trust X-Forwarded-* from a reverse proxy (for client IPs). */
  trustProxy: boolean;
  /** Allowed browser origins; empty means CORS is closed. */
  corsOrigins: string[];
  bodyLimitBytes: number;
  /** Secret for HS256 access tokens; generated into DATA_DIR when not given. */
  jwtSecret?: string;
  /**
   * AES-256-GCM keys for secrets at rest (TOTP secrets): `id:<base64 32 bytes>,…`,
   * the first seals, all open. Generated into DATA_DIR when not given.
   */
  encryptionKeys?: string;
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
  rateLimit: RateLimitConfig;
  /** Run migrations on start (the default; the CLI and tests rely on it). */
  migrate: boolean;
  owner?: { email: string; password: string; company: string };
  /** SMTP server for outgoing mail (smtp:// or smtps:// URL); unset keeps mail in the outbox table only. */
  smtpUrl?: string;
  /** From header of outgoing mail. */
  mailFrom: string;
  /** Seconds between automatic retries of failed mail; 0 turns them off. */
  mailRetrySeconds: number;
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
  /** Cloud-storage connector checks: token endpoints, test-only loopback switch (CONNECTOR_*). */
  connectors: ConnectorsConfig;
}

export interface RateLimitConfig {
  windowSeconds: number;
  /** Per authenticated credential (user or API key). */
  authenticated: number;
  /** Per client IP for callers without a credential. */
  anonymous: number;
  /** Per client IP on /auth/*: login, refresh, logout. */
  auth: number;
  /** Per client IP on the public feedback collector. */
  feedback: number;
}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) {
    throw new Error(`${name} must be an integer >= ${min}, got "${raw}"`);
  }
  return value;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new Error(`${name} must be true or false, got "${raw}"`);
}

function list(env: Env, name: string): string[] {
  return (env[name] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** SMTP_URL, checked without ever echoing it (it may carry a password). */
function smtpUrl(env: Env): string | undefined {
  const raw = env.SMTP_URL?.trim();
  if (!raw) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') || !url.hostname) {
    throw new Error('SMTP_URL must look like smtp://user:pass@host:587 or smtps://user:pass@host:465');
  }
  return raw;
}

/** MAIL_FROM: `address` or `Name <address>` on one line. */
function mailFrom(env: Env): string {
  const raw = (env.MAIL_FROM || 'Atrium <no-reply@localhost>').trim();
  if (!/^(?:[^<>\r\n]*<[^\s@<>]+@[^\s@<>]+>|[^\s@<>]+@[^\s@<>]+)$/.test(raw)) {
    throw new Error(`MAIL_FROM must be an address or "Name <address>", got "${raw}"`);
  }
  return raw;
}

export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const host = env.HOST || '127.0.0.1';
  const port = int(env, 'PORT', 8080);
  const dataDir = path.resolve(env.DATA_DIR || './data');
  const publicUrl = (env.PUBLIC_URL || `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/+$/, '');
  const owner =
    env.ATRIUM_OWNER_EMAIL && env.ATRIUM_OWNER_PASSWORD
      ? {
          email: env.ATRIUM_OWNER_EMAIL,
          password: env.ATRIUM_OWNER_PASSWORD,
          company: env.ATRIUM_OWNER_COMPANY || 'Default',
        }
      : undefined;
  const config: Config = {
    host,
    port,
    dataDir,
    databaseFile: env.DATABASE_FILE || path.join(dataDir, 'atrium.sqlite'),
    publicUrl,
    docsUrl: (env.DOCS_URL || `${publicUrl}/docs`).replace(/\/+$/, ''),
    logLevel: env.LOG_LEVEL || 'info',
    trustProxy: bool(env, 'TRUST_PROXY', false),
    corsOrigins: list(env, 'CORS_ORIGINS'),
    bodyLimitBytes: int(env, 'BODY_LIMIT_BYTES', 1024 * 1024, 1024),
    jwtSecret: env.JWT_SECRET || undefined,
    encryptionKeys: env.ENCRYPTION_KEYS?.trim() || undefined,
    accessTokenTtlSeconds: 15 * 60,
    refreshTokenTtlSeconds: 30 * 24 * 3600,
    refreshReuseGraceSeconds: int(env, 'REFRESH_REUSE_GRACE_SECONDS', 30),
    scryptCost: int(env, 'SCRYPT_COST', 2 ** 15, 2),
    rateLimit: {
      windowSeconds: int(env, 'RATE_LIMIT_WINDOW_SECONDS', 60, 1),
      authenticated: int(env, 'RATE_LIMIT_AUTHENTICATED', 600, 1),
      anonymous: int(env, 'RATE_LIMIT_ANONYMOUS', 120, 1),
      auth: int(env, 'RATE_LIMIT_AUTH', 20, 1),
      feedback: int(env, 'RATE_LIMIT_FEEDBACK', 10, 1),
    },
    migrate: true,
    owner,
    smtpUrl: smtpUrl(env),
    mailFrom: mailFrom(env),
    mailRetrySeconds: int(env, 'MAIL_RETRY_SECONDS', 300),
    emailChangeTokenTtlMinutes: int(env, 'EMAIL_CHANGE_TOKEN_TTL_MINUTES', 24 * 60, 1),
    accountDeletionGraceDays: int(env, 'ACCOUNT_DELETION_GRACE_DAYS', 14),
    accountDeletionIntervalSeconds: int(env, 'ACCOUNT_DELETION_INTERVAL_SECONDS', 3600),
    invitationTtlDays: int(env, 'INVITATION_TTL_DAYS', 7, 1),
    sso: loadSsoConfig(env),
    loginThrottle: loadLoginThrottleConfig(env),
    passwordReset: loadPasswordResetConfig(env),
    connectors: loadConnectorsConfig(env),
  };
  if (config.jwtSecret !== undefined && Buffer.byteLength(config.jwtSecret) < 32) {
    throw new Error('JWT_SECRET must be at least 32 bytes');
  }
  if (config.encryptionKeys !== undefined) parseKeyring(config.encryptionKeys, 'ENCRYPTION_KEYS');
  return { ...config, ...overrides };
}
