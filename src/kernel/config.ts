import path from 'node:path';
import { parseKeyring } from '../crypto/secret-box';
import { parseCidr } from '../net/address-list';
import pino from 'pino';
import { bool, ConfigError, int, list, oneOf, TIMER_MAX_MS, TIMER_MAX_SECONDS, type Env } from '../env';

/**
 * The kernel's settings: where Atrium listens and stores, how it logs, what
 * every request is held to, and the mail transport. Each domain reads its own
 * settings in its `config.ts`; src/config.ts assembles them all. The README's
 * configuration table is written from these files; keep them in step.
 */
export interface KernelConfig {
  host: string;
  port: number;
  dataDir: string;
  /** SQLite file; ':memory:' is accepted for tests. */
  databaseFile: string;
  publicUrl: string;
  docsUrl: string;
  logLevel: string;
  /**
   * Which X-Forwarded-For entries to believe (for client IPs): none (false),
   * the last N, which your own N proxies appended (TRUST_PROXY=true is 1), or
   * those appended by the listed proxy addresses and CIDRs. Never the whole
   * header: its left-most entries are whatever the client wrote.
   */
  trustProxy: TrustProxy;
  /** Allowed browser origins; empty means CORS is closed. */
  corsOrigins: string[];
  bodyLimitBytes: number;
  /** Secret for HS256 access tokens; generated into DATA_DIR when not given. */
  jwtSecret?: string;
  /**
   * AES-256-GCM keys for secrets at rest: `id:<base64 32 bytes>,…`, the first
   * seals, all open. Generated into DATA_DIR when not given.
   */
  encryptionKeys?: string;
  rateLimit: RateLimitConfig;
  /** What one GraphQL operation may ask, on every transport (subgraphs/policy/limits.ts). */
  graphql: GraphqlLimitsConfig;
  /** How often open sockets' sessions and keys are read again, for revocations another process made. */
  socketReauthenticateSeconds: number;
  /** How long a stopping server waits for requests in flight before it closes their connections anyway (0: at once). */
  shutdownGraceSeconds: number;
  /** Run migrations on start (the default; the CLI and tests rely on it). */
  migrate: boolean;
  /** SMTP server for outgoing mail (smtp:// or smtps:// URL); unset keeps mail in the outbox table only. */
  smtpUrl?: string;
  /** From header of outgoing mail. */
  mailFrom: string;
  /** Seconds between automatic retries of failed mail, and between sweeps of the outbox that blank the bodies of mail whose one-time link expired; 0 turns both off. */
  mailRetrySeconds: number;
  /** The job worker of a serving process (src/jobs); tests lower these. */
  jobs: JobsConfig;
  /**
   * Test-only: fetches of user- and web-supplied URLs (connector checks,
   * research pages) may reach loopback, over http too (src/net/ssrf-guard.ts).
   * Private, link-local and metadata addresses stay refused.
   */
  ssrfAllowLoopback: boolean;
}

export interface JobsConfig {
  /** Milliseconds between looks for due jobs; an enqueue by this process wakes the worker at once. */
  pollMs: number;
  /** Jobs run at the same time by one process. */
  concurrency: number;
  /** How long a claimed job is reserved to its worker, renewed while it runs; after a crash, another worker takes it over once it ends. */
  leaseSeconds: number;
  /** Attempts of a job (unless its enqueuer sets its own) before it is dead-lettered. */
  maxAttempts: number;
  /** Delay before the first retry; doubled for each further retry (with jitter) up to `retryMaxSeconds`. */
  retryBaseSeconds: number;
  retryMaxSeconds: number;
  /** How long completed jobs stay visible (`atrium jobs --status done`) before they are pruned. */
  keepDoneSeconds: number;
}

export interface RateLimitConfig {
  windowSeconds: number;
  /** Per authenticated credential (user or API key). */
  authenticated: number;
  /** Per AI-modules key, over a rolling minute (not the fixed window). */
  moduleKey: number;
  /** Per client IP for callers without a credential. */
  anonymous: number;
  /** Per client IP on /auth/*: login, refresh, logout. */
  auth: number;
  /** Per client IP on the public feedback collector. */
  feedback: number;
}

/** pino's levels, and `silent`: what LOG_LEVEL takes (pino itself would refuse another with a stack, later). */
const logLevels = [...Object.keys(pino.levels.values), 'silent'] as const;

export const introspectionAccess = ['public', 'authenticated', 'off'] as const;

/**
 * The caps every GraphQL operation is measured against before it runs; an
 * operation over one is refused (400 query_too_complex) and never executed.
 */
export interface GraphqlLimitsConfig {
  /** Lexical tokens of the document: bounds parsing and every later walk of it. */
  maxTokens: number;
  /** Deepest field nesting (fragments followed); the standard introspection query needs 13. */
  maxDepth: number;
  /** Aliased fields in the document. */
  maxAliases: number;
  /** Root fields (response keys) of one operation. */
  maxRootFields: number;
  /** Estimated cost: every field 1, times the page size of the lists around it. */
  maxCost: number;
  /** Who may run __schema / __type: anyone, a signed-in caller, or nobody. */
  introspection: (typeof introspectionAccess)[number];
}

/**
 * SSRF_ALLOW_LOOPBACK, or its old name CONNECTOR_ALLOW_LOOPBACK (either true
 * turns it on). The one definition: the connectors domain's config reads it
 * through this too.
 */
export function ssrfAllowLoopback(env: Env): boolean {
  return bool(env, 'SSRF_ALLOW_LOOPBACK', false) || bool(env, 'CONNECTOR_ALLOW_LOOPBACK', false);
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
    throw new ConfigError('SMTP_URL must look like smtp://user:pass@host:587 or smtps://user:pass@host:465');
  }
  return raw;
}

/**
 * CORS_ORIGINS: origins, scheme://host[:port] (a trailing slash is dropped),
 * written as a browser's Origin header is: the CORS plugin compares them as
 * text, so a path, or a word that is no URL, could never match one.
 */
function corsOrigins(env: Env): string[] {
  return list(env, 'CORS_ORIGINS').map((entry) => {
    let url: URL | undefined;
    try {
      url = new URL(entry);
    } catch {
      url = undefined;
    }
    const bare = url && url.pathname === '/' && !url.search && !url.hash && !url.username && !url.password && !/[?#]/.test(entry);
    if (!url || !bare || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      throw new ConfigError(`CORS_ORIGINS entries must be origins, scheme://host[:port] without a path (e.g. https://app.example.com), got "${entry}"`);
    }
    return url.origin;
  });
}

/** MAIL_FROM: `address` or `Name <address>` on one line. */
function mailFrom(env: Env): string {
  const raw = (env.MAIL_FROM || 'Atrium <no-reply@localhost>').trim();
  if (!/^(?:[^<>\r\n]*<[^\s@<>]+@[^\s@<>]+>|[^\s@<>]+@[^\s@<>]+)$/.test(raw)) {
    throw new ConfigError(`MAIL_FROM must be an address or "Name <address>", got "${raw}"`);
  }
  return raw;
}

export function loadKernelConfig(env: Env): KernelConfig {
  const host = env.HOST || '127.0.0.1';
  const port = int(env, 'PORT', 8080, 0, 65535);
  const dataDir = path.resolve(env.DATA_DIR || './data');
  const publicUrl = (env.PUBLIC_URL || `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/+$/, '');
  const config: KernelConfig = {
    host,
    port,
    dataDir,
    databaseFile: env.DATABASE_FILE || path.join(dataDir, 'atrium.sqlite'),
    publicUrl,
    docsUrl: (env.DOCS_URL || `${publicUrl}/docs`).replace(/\/+$/, ''),
    logLevel: oneOf(env, 'LOG_LEVEL', logLevels, 'info'),
    trustProxy: trustProxySetting(env.TRUST_PROXY),
    corsOrigins: corsOrigins(env),
    bodyLimitBytes: int(env, 'BODY_LIMIT_BYTES', 1024 * 1024, 1024),
    jwtSecret: env.JWT_SECRET || undefined,
    encryptionKeys: env.ENCRYPTION_KEYS?.trim() || undefined,
    rateLimit: {
      windowSeconds: int(env, 'RATE_LIMIT_WINDOW_SECONDS', 60, 1),
      authenticated: int(env, 'RATE_LIMIT_AUTHENTICATED', 600, 1),
      moduleKey: int(env, 'RATE_LIMIT_MODULE_KEY', 30, 1),
      anonymous: int(env, 'RATE_LIMIT_ANONYMOUS', 120, 1),
      auth: int(env, 'RATE_LIMIT_AUTH', 20, 1),
      feedback: int(env, 'RATE_LIMIT_FEEDBACK', 10, 1),
    },
    graphql: {
      maxTokens: int(env, 'GRAPHQL_MAX_TOKENS', 5000, 100),
      maxDepth: int(env, 'GRAPHQL_MAX_DEPTH', 15, 2),
      maxAliases: int(env, 'GRAPHQL_MAX_ALIASES', 30),
      maxRootFields: int(env, 'GRAPHQL_MAX_ROOT_FIELDS', 20, 1),
      maxCost: int(env, 'GRAPHQL_MAX_COST', 5000, 10),
      introspection: oneOf(env, 'GRAPHQL_INTROSPECTION', introspectionAccess, 'authenticated'),
    },
    socketReauthenticateSeconds: int(env, 'SOCKET_REAUTHENTICATE_SECONDS', 30, 1, TIMER_MAX_SECONDS),
    // At most ten minutes: a process manager's stop timeout would kill the server long before a longer one ran out.
    shutdownGraceSeconds: int(env, 'SHUTDOWN_GRACE_SECONDS', 5, 0, 600),
    migrate: true,
    smtpUrl: smtpUrl(env),
    mailFrom: mailFrom(env),
    mailRetrySeconds: int(env, 'MAIL_RETRY_SECONDS', 300),
    jobs: {
      pollMs: int(env, 'JOB_POLL_MS', 1000, 10, TIMER_MAX_MS),
      concurrency: int(env, 'JOB_CONCURRENCY', 8, 1),
      leaseSeconds: int(env, 'JOB_LEASE_SECONDS', 60, 1, TIMER_MAX_SECONDS),
      maxAttempts: int(env, 'JOB_MAX_ATTEMPTS', 5, 1),
      retryBaseSeconds: int(env, 'JOB_RETRY_BASE_SECONDS', 10, 1),
      retryMaxSeconds: int(env, 'JOB_RETRY_MAX_SECONDS', 3600, 1),
      keepDoneSeconds: int(env, 'JOB_KEEP_DONE_SECONDS', 86400),
    },
    ssrfAllowLoopback: ssrfAllowLoopback(env),
  };
  if (config.jwtSecret !== undefined && Buffer.byteLength(config.jwtSecret) < 32) {
    throw new ConfigError('JWT_SECRET must be at least 32 bytes');
  }
  if (config.encryptionKeys !== undefined) {
    try {
      parseKeyring(config.encryptionKeys, 'ENCRYPTION_KEYS');
    } catch (error) {
      // The keyring's own reasons name ENCRYPTION_KEYS; here they are the setting's.
      throw new ConfigError((error as Error).message);
    }
  }
  return config;
}

/** false, a number of proxy hops, or the proxies' addresses and CIDRs: what fastify's `trustProxy` takes. */
export type TrustProxy = false | number | string[];

/**
 * TRUST_PROXY: unset or false, none; true, one proxy of yours in front (the
 * entry it appended, the right-most, is the client); a number of proxies in
 * a chain; or their addresses and CIDRs, comma-separated.
 */
export function trustProxySetting(raw: string | undefined): TrustProxy {
  const value = raw?.trim().toLowerCase() ?? '';
  if (value === '' || value === 'false' || value === '0') return false;
  if (value === 'true') return 1;
  if (/^\d{1,2}$/.test(value)) return Number(value);
  const entries = value.split(',').map((entry) => entry.trim()).filter(Boolean);
  const bad = entries.find((entry) => parseCidr(entry) === null);
  if (bad !== undefined || !entries.length) {
    throw new ConfigError(`TRUST_PROXY must be true, false, a number of proxies or their addresses/CIDRs, comma-separated; got "${raw}"`);
  }
  return entries;
}
