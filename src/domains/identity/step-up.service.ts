import type { Orm } from '../../db/orm';
import { AppError } from '../../errors/catalog';
import { verifyPassword } from '../../auth/password';
import { requireAuthenticated } from '../../auth/policy';
import { requireRecentAuthentication, STEP_UP_MAX_AGE_SECONDS } from './recent-authentication';
import type { AccessTokens } from '../../auth/tokens';
import type { Principal, RequestMeta, UserPrincipal } from '../../auth/principal';
import { currentEm, transaction } from '../../db/unit-of-work';
import type { AuditService } from '../audit';
import type { MfaService } from './mfa.service';
import type { LoginThrottleService } from './login-throttle.service';
import { Session } from './session.entity';
import { User } from './user.entity';

export interface StepUpResult {
  /** A new access token for the same session, with `auth_time` = the step-up. */
  accessToken: string;
  /** When the session was last authenticated: now. */
  authenticatedAt: Date;
  /** Until when sensitive operations are allowed without another step-up. */
  stepUpExpiresAt: Date;
}

/**
 * Step-up: a signed-in user proves again who they are (password, and a second
 * factor when MFA is on). The session's `authenticated_at` is the source of
 * truth that `requireRecentAuthentication` reads.
 */
export class StepUpService {
  constructor(
    private readonly orm: Orm,
    private readonly audit: AuditService,
    private readonly tokens: AccessTokens,
    private readonly mfa: MfaService,
    /** Step-up checks the same password as sign-in, so its failures count (and lock) alike: a stolen token is no way around the guard. */
    private readonly throttle: LoginThrottleService,
  ) {}

  async stepUp(principal: Principal, input: { password: string; totpCode?: string | null }, meta: RequestMeta): Promise<StepUpResult> {
    const caller = requireAuthenticated(principal);
    if (caller.kind !== 'user') {
      throw new AppError('bad_request', 'An API key has no session and no password to step up with; step-up is for signed-in users');
    }
    const em = currentEm(this.orm);
    const user = await em.findOne(User, { id: caller.userId }, { populate: ['company'], refresh: true });
    if (!user || user.status !== 'active') throw new AppError('token_invalid', 'The user of this token no longer exists or is suspended');
    const attempt = await this.throttle.begin(user.email, caller.companyId, meta);
    if (!(await verifyPassword(input.password, user.passwordHash))) {
      await this.audit.record({
        action: 'auth.step_up_failed',
        companyId: caller.companyId,
        principal,
        meta,
        targetType: 'session',
        targetId: caller.sessionId,
        data: { reason: 'invalid_credentials', failures: attempt.failures },
      });
      await attempt.failed(); // throws account_locked when this failure locks the address
      throw new AppError('invalid_credentials', 'The password is incorrect');
    }
    await attempt.succeeded();
    await this.mfa.checkSecondFactor(user, input.totpCode, meta, 'step_up');
    return this.recordAuthentication({ sessionId: caller.sessionId, companyId: caller.companyId }, user, meta);
  }

  /**
   * Records that `user` has just proved who they are on `session` (the
   * password above, or the identity provider through SsoService): the
   * session's `authenticated_at` becomes now, audited `auth.step_up`.
   */
  async recordAuthentication(
    session: { sessionId: string; companyId: string },
    user: User,
    meta: RequestMeta,
    auditData: Record<string, unknown> = {},
  ): Promise<StepUpResult> {
    const now = new Date();
    await transaction(this.orm, async (tx) => {
      const updated = await tx.nativeUpdate(Session, { id: session.sessionId, revokedAt: null }, { authenticatedAt: now });
      if (updated !== 1) throw new AppError('token_invalid', 'The session of this access token has ended');
      await this.audit.record({
        action: 'auth.step_up',
        companyId: session.companyId,
        actor: { actorType: 'user', actorId: user.id, actorLabel: user.email },
        meta,
        targetType: 'session',
        targetId: session.sessionId,
        data: { mfa: user.mfaEnabled, ...auditData },
      });
    });
    const accessToken = await this.tokens.sign({
      sub: user.id,
      cid: session.companyId,
      role: user.role,
      sid: session.sessionId,
      authTime: Math.floor(now.getTime() / 1000),
    });
    return { accessToken, authenticatedAt: now, stepUpExpiresAt: new Date(now.getTime() + STEP_UP_MAX_AGE_SECONDS * 1000) };
  }

  /** See `requireRecentAuthentication` in src/auth/step-up.ts: 403 `step_up_required` unless authenticated within 5 minutes. */
  requireRecentAuthentication(principal: Principal): Promise<UserPrincipal> {
    return requireRecentAuthentication(this.orm, principal);
  }
}
