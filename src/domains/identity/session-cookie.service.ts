import { randomBytes } from 'node:crypto';
import type { Orm } from '../../db/orm';
import type { EventBus } from '../../events/event-bus';
import { AppError } from '../../errors/catalog';
import { sha256Hex } from '../../auth/tokens';
import type { UserPrincipal } from '../../auth/principal';
import { currentEm } from '../../db/unit-of-work';
import { Session } from './session.entity';

/** How long a resolved cookie is trusted without a database read (revocations evict at once). */
const CACHE_MS = 30_000;
/** A session's "last seen" is written at most this often. */
const TOUCH_MS = 60_000;

interface Cached {
  value: UserPrincipal;
  until: number;
  sessionExpiresAt: number;
}

/**
 * The `service_token` cookie of browser sessions: 32 random bytes (base64url)
 * whose SHA-256 is stored on the session row. It is valid exactly as long as
 * its session (revocation, expiry, suspension end it), like the access tokens
 * of that session; it is never a JWT and carries no claims.
 */
export class SessionCookieService {
  private readonly cache = new Map<string, Cached>();
  private readonly lastTouched = new Map<string, number>();

  constructor(
    private readonly orm: Orm,
    bus: EventBus,
  ) {
    bus.subscribe('session.revoked', ({ sessionId }) => {
      for (const [hash, cached] of this.cache) if (cached.value.sessionId === sessionId) this.cache.delete(hash);
    });
    bus.subscribe('user.changed', ({ userId }) => {
      for (const [hash, cached] of this.cache) if (cached.value.userId === userId) this.cache.delete(hash);
    });
  }

  /** Attaches a new cookie token to an active session; the plaintext is returned once, for the Set-Cookie. */
  async issue(sessionId: string): Promise<{ token: string; expiresAt: Date }> {
    const token = randomBytes(32).toString('base64url');
    const em = currentEm(this.orm);
    const updated = await em.nativeUpdate(Session, { id: sessionId, revokedAt: null }, { cookieTokenHash: sha256Hex(token) });
    const session = updated === 1 ? await em.findOne(Session, { id: sessionId }, { refresh: true }) : null;
    if (!session) throw new AppError('token_invalid', 'The session has ended');
    return { token, expiresAt: session.expiresAt };
  }

  /** Resolves a cookie to its session's user, or throws `token_invalid`. */
  async authenticate(token: string): Promise<UserPrincipal> {
    const hash = sha256Hex(token);
    const now = Date.now();
    const cached = this.cache.get(hash);
    if (cached && cached.until > now && cached.sessionExpiresAt > now) return cached.value;

    const session = await currentEm(this.orm).findOne(Session, { cookieTokenHash: hash }, { populate: ['user'] });
    if (!session || session.revokedAt || session.expiresAt.getTime() <= now) {
      this.cache.delete(hash);
      throw new AppError('token_invalid', 'The session of this cookie has ended; sign in again');
    }
    const user = session.user;
    if (user.status !== 'active') throw new AppError('token_invalid', 'This account is suspended');
    const principal: UserPrincipal = {
      kind: 'user',
      userId: user.id,
      companyId: session.company.id,
      role: user.role,
      email: user.email,
      sessionId: session.id,
      isSuperadmin: user.isSuperadmin,
    };
    if (this.cache.size >= 50_000) this.cache.clear();
    this.cache.set(hash, { value: principal, until: now + CACHE_MS, sessionExpiresAt: session.expiresAt.getTime() });
    this.touch(session.id, now);
    return principal;
  }

  /** Throttled "last seen", off the request's unit of work. */
  private touch(sessionId: string, now: number): void {
    if (now - (this.lastTouched.get(sessionId) ?? 0) < TOUCH_MS) return;
    this.lastTouched.set(sessionId, now);
    if (this.lastTouched.size > 50_000) this.lastTouched.clear();
    this.orm.em
      .fork()
      .nativeUpdate(Session, { id: sessionId }, { lastSeenAt: new Date(now) })
      .catch(() => this.lastTouched.delete(sessionId));
  }
}
