import type { Orm } from '../../db/orm';
import type { EventBus } from '../../events/event-bus';
import type { Logger } from '../../kernel/logger';
import { currentEm, transaction, whenCommitted, withUnitOfWork } from '../../db/unit-of-work';
import { TOUCH_MS } from './auth.service';
import { Invitation } from './invitation.entity';
import { sweepOneTimeTokens } from './one-time-tokens';
import { SecurityPolicy } from './security-policy.entity';
import { Session } from './session.entity';
import { SsoMfaChallenge } from './sso-mfa-challenge.entity';
import { SsoState } from './sso-state.entity';

/** The recurring job that ends sessions idle past their company's policy. */
export const SESSION_IDLE_EXPIRY = 'identity.session_idle_expiry';
export const SESSION_IDLE_EXPIRY_SECONDS = 60;
/** The recurring job that removes expired one-time links, SSO states and MFA challenges. */
export const EXPIRED_LINK_CLEANUP = 'identity.expired_link_cleanup';
export const EXPIRED_LINK_CLEANUP_SECONDS = 3600;
/** Spent and expired SSO states and challenges are kept this long after they expire (for diagnostics). */
const STATE_RETENTION_MS = 60 * 60 * 1000;

export interface CleanupRun {
  oneTimeTokens: number;
  ssoStates: number;
  ssoMfaChallenges: number;
  invitationsExpired: number;
}

/**
 * The identity domain's recurring jobs.
 *
 * Idle expiry: a request with an idle session is refused and the session
 * revoked on the spot (AuthService.checkIdle); this job ends the idle
 * sessions nobody uses any more, so they leave the session lists and their
 * sockets close. A session's `last_seen_at` is written at most once a
 * minute, so a session counts as idle here one such interval later than at
 * a request: the job never ends a session a request would still accept.
 */
export class IdentityHousekeeping {
  constructor(
    private readonly orm: Orm,
    private readonly bus: EventBus,
    private readonly logger: Logger,
  ) {}

  /** Revokes (`idle_timeout`) the live sessions idle past their company's policy; answers their ids. */
  async expireIdleSessions(now = new Date()): Promise<string[]> {
    return withUnitOfWork(this.orm, async () => {
      const policies = await currentEm(this.orm).find(
        SecurityPolicy,
        { sessionIdleTimeoutMinutes: { $ne: null } },
        { fields: ['company', 'sessionIdleTimeoutMinutes'] },
      );
      const ended: string[] = [];
      for (const policy of policies) {
        const idleSince = new Date(now.getTime() - policy.sessionIdleTimeoutMinutes! * 60_000 - TOUCH_MS);
        await transaction(this.orm, async (tx) => {
          const rows: { id: string; user_id: string }[] = await tx
            .createQueryBuilder(Session)
            .update({ revokedAt: now, revokedReason: 'idle_timeout' })
            .where({ company: policy.company.id, revokedAt: null, expiresAt: { $gt: now }, lastSeenAt: { $lt: idleSince } })
            .returning(['id', 'user_id'])
            .execute('all');
          whenCommitted(this.orm, () => rows.forEach((row) => this.bus.publish('session.revoked', { sessionId: row.id, userId: row.user_id })));
          ended.push(...rows.map((row) => row.id));
        });
      }
      if (ended.length) this.logger.info({ sessions: ended.length }, 'idle sessions ended');
      return ended;
    });
  }

  /**
   * Removes the one-time links (reset, email change) expired for a week,
   * spent or expired SSO states and MFA challenges after an hour, and marks
   * lapsed pending invitations expired.
   */
  async removeExpiredLinks(now = new Date()): Promise<CleanupRun> {
    return withUnitOfWork(this.orm, () =>
      transaction(this.orm, async (tx) => {
        const retained = new Date(now.getTime() - STATE_RETENTION_MS);
        const run: CleanupRun = {
          oneTimeTokens: await sweepOneTimeTokens(tx),
          ssoStates: await tx.nativeDelete(SsoState, { expiresAt: { $lt: retained } }),
          ssoMfaChallenges: await tx.nativeDelete(SsoMfaChallenge, { expiresAt: { $lt: retained } }),
          invitationsExpired: await tx.nativeUpdate(Invitation, { status: 'pending', expiresAt: { $lte: now } }, { status: 'expired' }),
        };
        if (Object.values(run).some(Boolean)) this.logger.info({ ...run }, 'expired links removed');
        return run;
      }),
    );
  }
}
