import { randomBytes } from 'node:crypto';
import type { Orm } from '../../db/orm';
import type { EventBus } from '../../events/event-bus';
import { AppError } from '../../errors/catalog';
import { sha256Hex } from '../../auth/tokens';
import type { UserPrincipal } from '../../auth/principal';
import { currentEm } from '../../db/unit-of-work';
import { Session } from './session.entity';
import type { AuthService } from './auth.service';

/** How long a resolved cookie is trusted without a database read (revocations evict at once). */
const CACHE_MS = 30_000;

interface Cached {
  value: UserPrincipal;
  until: number;
  sessionExpiresAt: number;
  /** The session's last_seen_at as read from the database. */
  stamp: number;
}

/**
 * The `service_token` cookie of browser sessions: 32 random bytes (base64url)
 * whose SHA-256 is stored on the session row. It is valid exactly as long as
 * its session (revocation, expiry, suspension end it), like the access tokens
 * of that session; it is never a JWT and carries no claims.
 */
export class SessionCookieService {
  private readonly cache = new Map<string, Cached>();

  constructor(
    private readonly orm: Orm,
    bus: EventBus,
    /** Judges and records each use of the session: the idle timeout is the same rule as for its access tokens. */
    private readonly auth: AuthService,
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
    if (cached && cached.until > now && cached.sessionExpiresAt > now) {
      await this.auth.useSession(cached.value, cached.stamp, now);
      return cached.value;
    }

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
    const stamp = session.lastSeenAt.getTime();
    await this.auth.useSession(principal, stamp, now);
    if (this.cache.size >= 50_000) this.cache.clear();
    this.cache.set(hash, { value: principal, until: now + CACHE_MS, sessionExpiresAt: session.expiresAt.getTime(), stamp });
    return principal;
  }
}
