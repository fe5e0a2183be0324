import { raw, type FilterQuery } from '@mikro-orm/core';
import type { Orm } from '../../db/orm';
import type { EventBus } from '../../events/event-bus';
import { AppError } from '../../errors/catalog';
import { requireUser } from '../../auth/policy';
import type { Principal, RequestMeta, UserPrincipal } from '../../auth/principal';
import { currentEm, transaction, whenCommitted } from '../../db/unit-of-work';
import type { AuditService } from '../audit';
import type { Page } from '../../pagination';
import { Session } from './session.entity';
import { User } from './user.entity';
import { describeUserAgent } from './user-agent';
import { liveSessionWhere, type SecurityPolicyEnforcer } from './security-policy.enforcer';

/** Default page size of a session list (as the spec's session listings). */
export const SESSIONS_PER_PAGE = 50;

/** One active session of the caller, as their session list shows it. */
export interface SessionView {
  id: string;
  /** Browser and OS family (or tool name) derived from the user agent; null when unknown. */
  device: string | null;
  userAgent: string | null;
  ip: string | null;
  createdAt: Date;
  /** Updated at most once a minute while the session is used (see AuthService). */
  lastSeenAt: Date;
  /** The session of the access token making this request. */
  current: boolean;
}

/**
 * A signed-in user's own sessions: list them, end one, end all. A session is
 * active while it is neither revoked nor past its refresh chain's expiry; the
 * lists and counts also leave out those idle past the company's policy
 * (liveSessionWhere), which no request accepts any more. Every
 * revocation publishes `session.revoked`, which drops the cached credential
 * (its access tokens fail on the next request) and closes its WebSockets.
 * Company API keys have no sessions and are refused (403 forbidden).
 */
export class SessionService {
  constructor(
    private readonly orm: Orm,
    private readonly bus: EventBus,
    private readonly audit: AuditService,
    private readonly policies: SecurityPolicyEnforcer,
  ) {}

  /** The caller's active sessions, newest first. */
  async list(principal: Principal, options: { page: number; perPage: number }): Promise<Page<SessionView>> {
    const caller = requireUser(principal);
    return this.activeSessionsOfUser(caller.userId, caller.companyId, caller.sessionId, options);
  }

  /**
   * One page of a user's active sessions, newest first, as every session list
   * shows them; `currentSessionId` is marked `current`. The caller checks who
   * may see them (the user, or an administrator of the user's company).
   */
  async activeSessionsOfUser(
    userId: string,
    companyId: string,
    currentSessionId: string | null,
    options: { page: number; perPage: number },
  ): Promise<Page<SessionView>> {
    const live = liveSessionWhere(await this.policies.policyOf(companyId), Date.now());
    return this.page({ ...live, user: userId }, currentSessionId, options);
  }

  /** Active sessions per user, as the lists count them, in two statements for any number of users (the admin user list's DataLoader). */
  async activeSessionCounts(userIds: readonly string[]): Promise<number[]> {
    const em = currentEm(this.orm);
    const now = Date.now();
    // Each company's idle timeout applies to its own users (a superadmin's list spans companies).
    const companies: { company_id: string }[] = await em
      .createQueryBuilder(User)
      .select(raw('distinct company_id'))
      .where({ id: { $in: [...userIds] } })
      .execute('all', false);
    if (!companies.length) return userIds.map(() => 0);
    const live = await Promise.all(companies.map(async (c) => liveSessionWhere(await this.policies.policyOf(c.company_id), now)));
    const rows: { user_id: string; n: number }[] = await em
      .createQueryBuilder(Session)
      .select([raw('user_id'), raw('count(*) as n')])
      .where({ user: { $in: [...userIds] }, $or: live })
      .groupBy('user')
      .execute('all', false);
    const byUser = new Map(rows.map((r) => [r.user_id, Number(r.n)]));
    return userIds.map((id) => byUser.get(id) ?? 0);
  }

  private async page(
    where: FilterQuery<Session>,
    currentSessionId: string | null,
    options: { page: number; perPage: number },
  ): Promise<Page<SessionView>> {
    const [sessions, total] = await currentEm(this.orm).findAndCount(Session, where, {
      orderBy: { createdAt: 'desc', id: 'desc' },
      limit: options.perPage,
      offset: (options.page - 1) * options.perPage,
    });
    const items = sessions.map((s) => ({
      id: s.id,
      device: describeUserAgent(s.userAgent),
      userAgent: s.userAgent,
      ip: s.ip,
      createdAt: s.createdAt,
      lastSeenAt: s.lastSeenAt,
      current: s.id === currentSessionId,
    }));
    return { items, page: options.page, perPage: options.perPage, total };
  }

  /**
   * Ends one of the caller's active sessions (the current one included). Any
   * other id (another user's, another company's, revoked, expired, unknown)
   * answers 404 not_found, never a hint that it exists.
   */
  async revoke(principal: Principal, sessionId: string, meta: RequestMeta): Promise<void> {
    const caller = requireUser(principal);
    await transaction(this.orm, async () => {
      const [revoked] = await this.revokeWhere(caller, { id: sessionId }, 'revoked_by_user');
      if (!revoked) throw new AppError('not_found', 'No active session of yours has this id');
      await this.audit.record({
        action: 'session.revoked',
        companyId: caller.companyId,
        principal: caller,
        meta,
        targetType: 'session',
        targetId: revoked,
        data: { current: revoked === caller.sessionId },
      });
    });
  }

  /** Ends every active session of the caller, the current one included; returns how many. */
  async revokeAll(principal: Principal, meta: RequestMeta): Promise<number> {
    const caller = requireUser(principal);
    return transaction(this.orm, async () => {
      const revoked = await this.revokeWhere(caller, {}, 'revoked_all');
      await this.audit.record({
        action: 'session.revoked_all',
        companyId: caller.companyId,
        principal: caller,
        meta,
        targetType: 'user',
        targetId: caller.userId,
        data: { count: revoked.length },
      });
      return revoked.length;
    });
  }

  /**
   * Ends every active session of a user, whoever asks (password reset; the
   * administrators' force-logout): authorize before calling. Publishes
   * `session.revoked` for each once the revocation has committed (with the
   * caller's transaction, if any), so cached credentials, cookies and
   * sockets stop at once. Returns the ids of the sessions ended.
   */
  async revokeAllOfUser(userId: string, reason: string): Promise<string[]> {
    const rows: { id: string }[] = await currentEm(this.orm)
      .createQueryBuilder(Session)
      .update({ revokedAt: new Date(), revokedReason: reason })
      .where({ user: userId, revokedAt: null, expiresAt: { $gt: new Date() } })
      .returning('id')
      .execute('all');
    const ids = rows.map((row) => row.id);
    whenCommitted(this.orm, () => ids.forEach((sessionId) => this.bus.publish('session.revoked', { sessionId, userId })));
    return ids;
  }

  private activeOf(caller: UserPrincipal): FilterQuery<Session> {
    return { user: caller.userId, company: caller.companyId, revokedAt: null, expiresAt: { $gt: new Date() } };
  }

  /**
   * One conditional UPDATE … RETURNING, so of two concurrent revocations each
   * session is counted and announced once.
   */
  private async revokeWhere(caller: UserPrincipal, where: FilterQuery<Session>, reason: string): Promise<string[]> {
    const rows: { id: string }[] = await currentEm(this.orm)
      .createQueryBuilder(Session)
      .update({ revokedAt: new Date(), revokedReason: reason })
      .where({ $and: [this.activeOf(caller), where] })
      .returning('id')
      .execute('all');
    const ids = rows.map((row) => row.id);
    whenCommitted(this.orm, () => ids.forEach((sessionId) => this.bus.publish('session.revoked', { sessionId, userId: caller.userId })));
    return ids;
  }
}
