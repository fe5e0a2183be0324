import type { Orm } from '../../db/orm';
import type { IdentitySettings } from './config';
import type { EventBus } from '../../events/event-bus';
import { AppError } from '../../errors/catalog';
import { dummyPasswordHash, verifyPassword } from '../../auth/password';
import { AccessTokens, COMPANY_KEY_PREFIX, MODULE_KEY_PREFIX, newRefreshToken, sha256Hex } from '../../auth/tokens';
import { requireAuthenticated } from '../../auth/policy';
import { moduleScopes, type ApiKeyPrincipal, type ModuleKeyPrincipal, type ModuleScope, type Principal, type RequestMeta, type UserPrincipal } from '../../auth/principal';
import type { AuditService } from '../audit';
import type { MfaService } from './mfa.service';
import type { LoginThrottleService } from './login-throttle.service';
import { ApiKey } from './api-key.entity';
import { RefreshToken } from './refresh-token.entity';
import { Session } from './session.entity';
import { User } from './user.entity';
import { normalizeEmail } from './identity.service';
import { currentEm, transaction, whenCommitted } from '../../db/unit-of-work';
import { idlePastPolicy, idleTimeoutMs, keyAgeRefusal, type CompiledPolicy, type SecurityPolicyEnforcer } from './security-policy.enforcer';

export interface TokenPair {
  accessToken: string;
  refreshToken: string;
}

export interface LoginResult extends TokenPair {
  user: User;
}

interface Cached<T> {
  value: T;
  until: number;
  sessionExpiresAt?: number;
  /** The session's last_seen_at, or the key's created_at, as read from the database. */
  stamp?: number;
}

/** How long a resolved session or key is trusted without a database read. */
const CACHE_MS = 30_000;
/** Session and key "last seen" is written at most this often. */
/** `last_seen_at` and `last_used_at` are written at most this often per session or key. */
export const TOUCH_MS = 60_000;

/**
 * Sign-in, token rotation, sign-out and credential resolution. Revocations and
 * user changes are pushed through the event bus, so a revoked session or key
 * stops working at once even though resolved credentials are cached.
 */
export class AuthService {
  private readonly sessions = new Map<string, Cached<UserPrincipal>>();
  private readonly keys = new Map<string, Cached<ApiKeyPrincipal | ModuleKeyPrincipal>>();
  private readonly lastTouched = new Map<string, number>();
  /** When each session was last used on this node (every request; the database is written at most once a minute). */
  private readonly lastActive = new Map<string, number>();
  private dummyHash: Promise<string> | undefined;

  constructor(
    private readonly orm: Orm,
    private readonly config: IdentitySettings,
    private readonly bus: EventBus,
    private readonly audit: AuditService,
    readonly tokens: AccessTokens,
    private readonly mfa: MfaService,
    private readonly loginThrottle: LoginThrottleService,
    /** Company security policies: session idle timeout and API key maximum age. */
    private readonly policies: SecurityPolicyEnforcer,
  ) {
    bus.subscribe('session.revoked', ({ sessionId }) => this.sessions.delete(sessionId));
    bus.subscribe('user.changed', ({ userId }) => {
      for (const [id, cached] of this.sessions) if (cached.value.userId === userId) this.sessions.delete(id);
      // A suspended or demoted user's AI-modules keys are judged again on their next use.
      for (const [hash, cached] of this.keys) if (cached.value.kind === 'module_key' && cached.value.userId === userId) this.keys.delete(hash);
    });
    bus.subscribe('api_key.revoked', ({ keyHash }) => this.keys.delete(keyHash));
  }

  async login(input: { email: string; password: string; totpCode?: string | null }, meta: RequestMeta): Promise<LoginResult> {
    const email = normalizeEmail(input.email);
    const em = currentEm(this.orm);
    const user = await em.findOne(User, { email }, { populate: ['company'] });
    // Per-address brute-force guard before any password work: a delayed or locked email,
    // known or not, is refused alike (429) without the password being tried.
    const attempt = await this.loginThrottle.begin(email, user?.company.id ?? null, meta);
    // Same work whether or not the email exists: no user enumeration by timing.
    this.dummyHash ??= dummyPasswordHash(this.config.scryptCost);
    const ok = await verifyPassword(input.password, user?.passwordHash ?? (await this.dummyHash));
    if (!user || !ok) {
      await this.audit.record({
        action: 'auth.login_failed',
        companyId: user?.company.id ?? null,
        actor: { actorType: 'anonymous', actorId: null, actorLabel: email },
        meta,
        data: { reason: 'invalid_credentials', failures: attempt.failures },
      });
      await attempt.failed(); // throws account_locked when this failure locks the address
      throw new AppError('invalid_credentials', 'Email or password is incorrect');
    }
    await attempt.succeeded();
    // Only after the password (so it tells no guesser that an email exists), and before the second factor is spent.
    await this.policies.checkIp(user.company.id, meta.ip);
    // Only after the password (never tells a guesser that an email exists), and before the
    // second factor: a refused sign-in spends no recovery code and no TOTP step.
    if (user.status !== 'active') {
      throw new AppError('account_suspended', 'This account is suspended; contact your administrator');
    }
    // Only after the password: mfa_required never tells a guesser that an email exists.
    await this.mfa.checkSecondFactor(user, input.totpCode, meta, 'login');

    return this.startSession(user, meta, 'password');
  }

  /**
   * Opens a session for a user who has proved who they are (password, later
   * a second factor or single sign-on), audits the sign-in and returns the
   * first token pair. Every sign-in method ends here.
   */
  async startSession(user: User, meta: RequestMeta, method: 'password' | 'sso'): Promise<LoginResult> {
    // The company's allow-list holds for every way in (single sign-on's included), not only for requests that carry a token.
    await this.policies.checkIp(user.company.id, meta.ip);
    const em = currentEm(this.orm);
    const now = new Date();
    const session = em.create(Session, {
      user,
      company: user.company,
      ip: meta.ip,
      userAgent: meta.userAgent?.slice(0, 512) ?? null,
      authenticatedAt: now,
      expiresAt: now,
    });
    const refreshToken = this.issueRefreshToken(session, now);
    user.lastLoginAt = now;
    // The session and its audit entry commit in one flush.
    await this.audit.record({
      action: 'auth.login',
      companyId: user.company.id,
      actor: { actorType: 'user', actorId: user.id, actorLabel: user.email },
      meta,
      targetType: 'session',
      targetId: session.id,
      data: { method },
    });
    const accessToken = await this.tokens.sign({
      sub: user.id,
      cid: user.company.id,
      role: user.role,
      sid: session.id,
      authTime: Math.floor(now.getTime() / 1000),
    });
    return { accessToken, refreshToken, user };
  }

  /**
   * Rotates a refresh token. The presented token is spent by one conditional
   * UPDATE, so of concurrent refreshes with one token exactly one wins.
   */
  async refresh(presented: string, meta: RequestMeta): Promise<TokenPair> {
    const em = currentEm(this.orm);
    const tokenHash = sha256Hex(presented);
    const now = new Date();
    // Read before it is spent: a refresh the company's allow-list refuses must leave the token usable from an allowed network.
    const token = await em.findOne(RefreshToken, { tokenHash }, { populate: ['session.user', 'session.company'] });
    if (token && !token.usedAt) await this.policies.checkIp(token.session.company.id, meta.ip);
    const spent = token
      ? await em.nativeUpdate(RefreshToken, { tokenHash, usedAt: null, expiresAt: { $gt: now } }, { usedAt: now })
      : 0;
    if (spent !== 1 || !token) {
      // A client racing itself loses quietly; a token replayed after the grace window is
      // taken as stolen: the whole session ends, its newest refresh token and access tokens too.
      const graceMs = this.config.refreshReuseGraceSeconds * 1000;
      if (token?.usedAt && now.getTime() - token.usedAt.getTime() >= graceMs) {
        await transaction(this.orm, async () => {
          await this.revokeSession(token.session.id, token.session.user.id, 'refresh_token_reused');
          await this.audit.record({
            action: 'auth.refresh_token_reused',
            companyId: token.session.company.id,
            actor: { actorType: 'user', actorId: token.session.user.id, actorLabel: token.session.user.email },
            meta,
            targetType: 'session',
            targetId: token.session.id,
            data: { sessionRevoked: true },
          });
        });
      }
      throw new AppError('token_invalid', 'The refresh token is invalid, expired or already used');
    }
    const { session } = token;
    const user = session.user;
    if (session.revokedAt || session.expiresAt <= now || user.status !== 'active') {
      throw new AppError('token_invalid', 'The session of this refresh token has ended');
    }
    await this.checkIdle(session.id, user.id, session.company.id, session.lastSeenAt.getTime(), now.getTime());
    this.markActive(session.id, now.getTime());
    const refreshToken = this.issueRefreshToken(session, now);
    session.lastSeenAt = now;
    await em.flush();
    const accessToken = await this.tokens.sign({
      sub: user.id,
      cid: session.company.id,
      role: user.role,
      sid: session.id,
      authTime: Math.floor(session.authenticatedAt.getTime() / 1000),
    });
    return { accessToken, refreshToken };
  }

  /** Ends the caller's session: its refresh token and access tokens die with it. */
  async logout(principal: Principal, meta: RequestMeta): Promise<void> {
    requireAuthenticated(principal);
    if (principal.kind !== 'user') throw new AppError('bad_request', 'An API key has no session to log out of; delete the key instead');
    await transaction(this.orm, async () => {
      await this.revokeSession(principal.sessionId, principal.userId, 'logout');
      await this.audit.record({
        action: 'auth.logout',
        companyId: principal.companyId,
        principal,
        meta,
        targetType: 'session',
        targetId: principal.sessionId,
      });
    });
  }

  /** Ends a session; `session.revoked` is published once that has committed (with the caller's transaction, if any). */
  async revokeSession(sessionId: string, userId: string, reason: string): Promise<void> {
    await currentEm(this.orm).nativeUpdate(Session, { id: sessionId, revokedAt: null }, { revokedAt: new Date(), revokedReason: reason });
    whenCommitted(this.orm, () => this.bus.publish('session.revoked', { sessionId, userId }));
  }

  /**
   * The principal of a Bearer credential when memory alone can tell: a token
   * verified before, of a cached live session or key, judged by a cached
   * company policy. Undefined whenever authenticate() has work to do (a read,
   * a refusal, an idle session to revoke): the hot path's synchronous answer.
   */
  cachedPrincipal(credential: string): UserPrincipal | ApiKeyPrincipal | ModuleKeyPrincipal | undefined {
    const now = Date.now();
    if (credential.startsWith(COMPANY_KEY_PREFIX) || credential.startsWith(MODULE_KEY_PREFIX)) {
      const cached = this.keys.get(sha256Hex(credential));
      if (!cached || cached.until <= now) return undefined;
      const policy = this.cachedPolicy(cached.value.companyId);
      if (policy === undefined || keyAgeRefusal(policy, cached.stamp!, now)) return undefined;
      return cached.value;
    }
    const claims = this.tokens.cachedClaims(credential, now);
    const cached = claims && this.sessions.get(claims.sid);
    if (!cached || cached.until <= now || cached.sessionExpiresAt! <= now) return undefined;
    const policy = this.cachedPolicy(cached.value.companyId);
    if (policy === undefined || this.idleFor(policy, cached.value.sessionId, cached.stamp!, now)) return undefined;
    this.markActive(cached.value.sessionId, now);
    this.touch(Session, cached.value.sessionId, 'lastSeenAt', now);
    return cached.value;
  }

  /** When a verified access token expires (ms since the epoch); null for a key, or a token not verified lately. */
  accessTokenExpiry(credential: string): number | null {
    const claims = this.tokens.cachedClaims(credential, Date.now());
    return claims ? claims.exp * 1000 : null;
  }

  /** The cached policy; undefined when not cached yet. */
  private cachedPolicy(companyId: string): CompiledPolicy | undefined {
    return this.policies.cachedPolicy(companyId);
  }

  /**
   * Which of these open sockets' credentials no longer hold, read afresh from
   * the database (another process may have ended them): a session revoked or
   * expired, its user no longer active or of another role or email, a key
   * revoked. Answers each ended one with its 401 problem. Unlike
   * authenticate() it has no effects: it neither marks a session active nor
   * ends an idle one. A few reads for any number of sockets.
   */
  async endedCredentials<P extends UserPrincipal | ApiKeyPrincipal>(principals: readonly P[]): Promise<Map<P, AppError>> {
    const ended = new Map<P, AppError>();
    const em = this.orm.em.fork();
    const now = Date.now();
    const users = principals.filter((p): p is P & UserPrincipal => p.kind === 'user');
    const keys = principals.filter((p): p is P & ApiKeyPrincipal => p.kind === 'api_key');
    const sessions = new Map<string, Session>();
    for (const ids of chunks([...new Set(users.map((p) => p.sessionId))], 500)) {
      for (const session of await em.find(Session, { id: { $in: ids } }, { populate: ['user'] })) sessions.set(session.id, session);
    }
    for (const p of users) {
      const session = sessions.get(p.sessionId);
      const user = session?.user;
      if (!session || session.revokedAt !== null || session.expiresAt.getTime() <= now) {
        ended.set(p, new AppError('token_invalid', 'The session has ended'));
      } else if (!user || user.status !== 'active' || user.role !== p.role || user.email !== p.email || user.isSuperadmin !== p.isSuperadmin) {
        ended.set(p, new AppError('token_invalid', "The account's access changed; sign in again"));
      }
    }
    const live = new Set<string>();
    for (const ids of chunks([...new Set(keys.map((p) => p.keyId))], 500)) {
      for (const key of await em.find(ApiKey, { id: { $in: ids }, revokedAt: null })) live.add(key.id);
    }
    for (const p of keys) if (!live.has(p.keyId)) ended.set(p, new AppError('token_invalid', 'The API key is invalid or has been revoked'));
    return ended;
  }

  /** Resolves a Bearer credential (access token or company key) to a principal, or throws. */
  async authenticate(credential: string): Promise<UserPrincipal | ApiKeyPrincipal | ModuleKeyPrincipal> {
    const fast = this.cachedPrincipal(credential);
    if (fast) return fast;
    if (credential.startsWith(COMPANY_KEY_PREFIX) || credential.startsWith(MODULE_KEY_PREFIX)) return this.authenticateKey(credential);
    const claims = await this.tokens.verify(credential);
    const now = Date.now();
    const cached = this.sessions.get(claims.sid);
    if (cached && cached.until > now && cached.sessionExpiresAt! > now) {
      await this.useSession(cached.value, cached.stamp!, now);
      return cached.value;
    }

    const session = await currentEm(this.orm).findOne(Session, { id: claims.sid }, { populate: ['user'] });
    if (!session || session.revokedAt || session.expiresAt.getTime() <= now || session.user.id !== claims.sub) {
      throw new AppError('token_invalid', 'The session of this access token has ended');
    }
    const user = session.user;
    if (user.status !== 'active') throw new AppError('token_invalid', 'This account is suspended');
    const principal: UserPrincipal = {
      kind: 'user',
      userId: user.id,
      companyId: claims.cid,
      // The role is read from the user, not the token, so a demotion bites at once.
      role: user.role,
      email: user.email,
      sessionId: session.id,
      isSuperadmin: user.isSuperadmin,
    };
    await this.useSession(principal, session.lastSeenAt.getTime(), now);
    this.sessions.set(session.id, {
      value: principal,
      until: now + CACHE_MS,
      sessionExpiresAt: session.expiresAt.getTime(),
      stamp: session.lastSeenAt.getTime(),
    });
    return principal;
  }

  /**
   * One request's use of a live session, whatever carries it (an access token
   * or the browser's session cookie): ends it when idle past its company's
   * policy (throws 401 token_invalid), else records the activity. Both
   * credentials share this node's activity, so a session used by cookie is
   * not idle to its access tokens and the other way round.
   * `stamp` is the session's last_seen_at as read from the database.
   */
  async useSession(principal: UserPrincipal, stamp: number, now: number): Promise<void> {
    await this.checkIdle(principal.sessionId, principal.userId, principal.companyId, stamp, now);
    this.markActive(principal.sessionId, now);
    this.touch(Session, principal.sessionId, 'lastSeenAt', now);
  }

  private async authenticateKey(key: string): Promise<ApiKeyPrincipal | ModuleKeyPrincipal> {
    const keyHash = sha256Hex(key);
    const now = Date.now();
    const cached = this.keys.get(keyHash);
    if (cached && cached.until > now) {
      await this.policies.checkKeyAge(cached.value.companyId, cached.stamp!, now);
      return cached.value;
    }
    const moduleKey = key.startsWith(MODULE_KEY_PREFIX);
    // A company key is never a user's key and the other way round, whatever the hash.
    const apiKey = await currentEm(this.orm).findOne(
      ApiKey,
      { keyHash, revokedAt: null, user: moduleKey ? { $ne: null } : null },
      { populate: moduleKey ? ['user'] : [] },
    );
    if (!apiKey) throw new AppError('token_invalid', 'The API key is invalid or has been revoked');
    let principal: ApiKeyPrincipal | ModuleKeyPrincipal;
    if (apiKey.user) {
      const user = apiKey.user;
      if (user.status !== 'active') throw new AppError('token_invalid', 'The account of this API key is suspended');
      principal = {
        kind: 'module_key',
        keyId: apiKey.id,
        userId: user.id,
        companyId: apiKey.company.id,
        role: user.role,
        email: user.email,
        name: apiKey.name,
        scopes: parseScopes(apiKey.scopes),
      };
    } else {
      principal = { kind: 'api_key', keyId: apiKey.id, companyId: apiKey.company.id, role: 'admin', name: apiKey.name, createdAt: apiKey.createdAt.getTime() };
    }
    await this.policies.checkKeyAge(principal.companyId, apiKey.createdAt.getTime(), now);
    this.keys.set(keyHash, { value: principal, until: now + CACHE_MS, stamp: apiKey.createdAt.getTime() });
    this.touch(ApiKey, apiKey.id, 'lastUsedAt', now);
    return principal;
  }

  private issueRefreshToken(session: Session, now: Date): string {
    const token = newRefreshToken();
    // Sliding: each rotation keeps the session alive for another refresh lifetime.
    session.expiresAt = new Date(now.getTime() + this.config.refreshTokenTtlSeconds * 1000);
    currentEm(this.orm).create(RefreshToken, { session, tokenHash: sha256Hex(token), expiresAt: session.expiresAt });
    return token;
  }

  /**
   * Ends a session idle for longer than its company's policy allows (401
   * token_invalid). Last activity is the later of the database's last_seen_at
   * (`stamp`, written at most once a minute) and this node's in-memory last use,
   * so a cached session is judged as exactly as an uncached one.
   */
  private async checkIdle(sessionId: string, userId: string, companyId: string, stamp: number, now: number): Promise<void> {
    const policy = await this.policies.policyOf(companyId);
    if (!this.idleFor(policy, sessionId, stamp, now)) return;
    const timeout = idleTimeoutMs(policy)!;
    this.lastActive.delete(sessionId);
    await this.revokeSession(sessionId, userId, 'idle_timeout');
    throw new AppError(
      'token_invalid',
      `The session ended after ${Math.round(timeout / 60_000)} minutes without activity (your company's security policy); sign in again`,
    );
  }

  /** Whether the session has been idle for longer than the policy allows. */
  private idleFor(policy: CompiledPolicy, sessionId: string, stamp: number, now: number): boolean {
    // Without an idle timeout (most companies) the session's activity is not looked up: this runs on every request.
    if (idleTimeoutMs(policy) === null) return false;
    const lastSeen = Math.max(stamp, this.lastActive.get(sessionId) ?? 0, this.lastTouched.get(sessionId) ?? 0);
    return idlePastPolicy(policy, lastSeen, now);
  }

  private markActive(sessionId: string, now: number): void {
    if (this.lastActive.size > 50_000) this.lastActive.clear();
    this.lastActive.set(sessionId, now);
  }

  /** Throttled "last used" bookkeeping, off the request's unit of work. */
  private touch(entity: typeof Session | typeof ApiKey, id: string, field: 'lastSeenAt' | 'lastUsedAt', now: number): void {
    const last = this.lastTouched.get(id) ?? 0;
    if (now - last < TOUCH_MS) return;
    this.lastTouched.set(id, now);
    if (this.lastTouched.size > 50_000) this.lastTouched.clear();
    this.orm.em
      .fork()
      .nativeUpdate(entity as typeof Session, { id }, { [field]: new Date(now) })
      .catch(() => this.lastTouched.delete(id));
  }
}

/** A stored scope list; unknown names (from a later version) are ignored. */
export function parseScopes(stored: string | null): ModuleScope[] {
  const names = (stored ?? '').split(',');
  return moduleScopes.filter((scope) => names.includes(scope));
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
