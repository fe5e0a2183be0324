import type { Orm } from '../../db/orm';
import type { IdentitySettings } from './config';
import type { EventBus } from '../../events/event-bus';
import { AppError, type ValidationIssue } from '../../errors/catalog';
import { hashPassword } from '../../auth/password';
import type { Principal, RequestMeta } from '../../auth/principal';
import { currentEm, runInUnitOfWork } from '../../db/unit-of-work';
import type { Mailer } from '../../mail/mailer';
import type { Logger } from '../../kernel/logger';
import { passwordReset } from './mail';
import type { AuditService } from '../audit';
import type { LoginThrottleService } from './login-throttle.service';
import type { SessionService } from './session.service';
import { OneTimeToken } from './one-time-token.entity';
import { consumeOneTimeToken, invalidateOneTimeTokens, issueOneTimeToken, peekOneTimeToken, sweepOneTimeTokens } from './one-time-tokens';
import { User } from './user.entity';
import { MIN_PASSWORD_LENGTH, normalizeEmail } from './identity.service';
import type { SecurityPolicyEnforcer } from './security-policy.enforcer';

export const PASSWORD_RESET_PURPOSE = 'password_reset';
/** Longest password accepted (as at login). */
export const MAX_PASSWORD_LENGTH = 1024;

/** What `sendResetFor` did. */
export interface ResetMailReceipt {
  userId: string;
  /** The outbox row of the mail (`atrium mail-outbox --show <id>`). */
  mailId: string;
  expiresAt: Date;
}

/**
 * Password reset by a single-use link sent by mail.
 *
 * - `request(email)` answers the same whatever the address: the lookup, the
 *   token and the mail happen after the caller has its answer (background
 *   work, `idle()` waits for it), so neither the body nor the response time
 *   tells whether an account exists. Only an active user gets a mail, at most
 *   PASSWORD_RESET_MAILS_PER_HOUR an hour.
 * - The token is 32 random bytes; only its SHA-256 is stored (table
 *   `one_time_tokens`, purpose `password_reset`), valid
 *   PASSWORD_RESET_TTL_MINUTES, and a newer one replaces any unused older one.
 * - `confirm(token, newPassword)` spends the token in one conditional UPDATE,
 *   sets the new scrypt hash and ends every session of the user in the same
 *   transaction, then clears the failed-login count of the address.
 * - `sendResetFor(userId)` is the same mail for the administrators' reset.
 */
export class PasswordResetService {
  private readonly inflight = new Set<Promise<unknown>>();

  constructor(
    private readonly orm: Orm,
    private readonly config: IdentitySettings,
    private readonly bus: EventBus,
    private readonly audit: AuditService,
    private readonly mailer: Mailer,
    private readonly sessions: SessionService,
    private readonly loginThrottle: LoginThrottleService,
    private readonly logger: Logger,
    /** The company's minimum password length (security policy). */
    private readonly policies: SecurityPolicyEnforcer,
  ) {}

  /**
   * Accepts a reset request for `email`. Returns before anything about the
   * address is looked up; the mail (if any) is sent in the background.
   */
  async request(email: string, meta: RequestMeta): Promise<void> {
    const normalized = normalizeEmail(email);
    if (normalized.length < 3 || normalized.length > 320) {
      throw AppError.validation([{ loc: ['body', 'email'], msg: 'must be 3 to 320 characters', type: 'string_too_short' }]);
    }
    // Its own unit of work: the request's may be gone by the time this runs.
    const work = runInUnitOfWork(this.orm, () => this.mailIfActive(normalized, meta)).catch((error: unknown) =>
      this.logger.error({ err: error instanceof Error ? error.message : String(error), requestId: meta.requestId }, 'password reset request failed'),
    );
    this.inflight.add(work);
    void work.finally(() => this.inflight.delete(work));
  }

  /**
   * Sends a reset link to the user (the administrators' reset-password flow;
   * authorize the caller first). Earlier unused links of the user stop
   * working. `principal` is recorded as the actor.
   */
  async sendResetFor(userId: string, meta: RequestMeta, options: { principal?: Principal } = {}): Promise<ResetMailReceipt> {
    const user = await currentEm(this.orm).findOne(User, { id: userId });
    if (!user) throw new AppError('not_found', 'No user with this id');
    return this.sendTo(user, meta, options.principal);
  }

  /**
   * Sets a new password with a token from a reset mail. Every session of the
   * user ends (access tokens, refresh tokens, cookies and sockets at once),
   * the failed-login count of the address is cleared.
   */
  async confirm(input: { token: string; newPassword: string }, meta: RequestMeta): Promise<void> {
    checkNewPassword(input.newPassword);
    const em = currentEm(this.orm);
    // Cheap refusal first: an unknown token costs no password hashing.
    const found = await peekOneTimeToken(em, PASSWORD_RESET_PURPOSE, input.token);
    if (!found) throw invalidToken();
    const companyId = (await em.findOne(User, { id: found.user.id }))?.company.id;
    if (companyId) await this.policies.checkPasswordLength(companyId, input.newPassword, ['body', 'new_password']);
    const passwordHash = await hashPassword(input.newPassword, this.config.scryptCost);
    const now = new Date();
    const user = await em.transactional(async (tx) => {
      const token = await consumeOneTimeToken(tx, PASSWORD_RESET_PURPOSE, input.token);
      if (!token) throw invalidToken();
      const owner = await tx.findOne(User, { id: token.user.id }, { refresh: true });
      if (!owner) throw invalidToken();
      await tx.nativeUpdate(User, { id: owner.id }, { passwordHash, updatedAt: now });
      await invalidateOneTimeTokens(tx, owner.id, PASSWORD_RESET_PURPOSE, now);
      return owner;
    });
    const revoked = await this.sessions.revokeAllOfUser(user.id, 'password_reset');
    this.bus.publish('user.changed', { userId: user.id, access: true });
    await this.loginThrottle.reset(user.email);
    await this.audit.record({
      action: 'auth.password_reset',
      companyId: user.company.id,
      actor: { actorType: 'user', actorId: user.id, actorLabel: user.email },
      meta,
      targetType: 'user',
      targetId: user.id,
      data: { sessionsRevoked: revoked.length },
    });
  }

  /** Resolves once background requests accepted so far have finished (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.inflight.size) await Promise.allSettled([...this.inflight]);
  }

  private async mailIfActive(email: string, meta: RequestMeta): Promise<void> {
    const em = currentEm(this.orm);
    const user = await em.findOne(User, { email });
    if (!user || user.status !== 'active') return;
    const hourAgo = new Date(Date.now() - 3600_000);
    const recent = await em.count(OneTimeToken, { user: user.id, purpose: PASSWORD_RESET_PURPOSE, createdAt: { $gt: hourAgo } });
    if (recent >= this.config.passwordReset.mailsPerHour) {
      await this.audit.record({
        action: 'auth.password_reset_requested',
        companyId: user.company.id,
        actor: { actorType: 'anonymous', actorId: null, actorLabel: email },
        meta,
        targetType: 'user',
        targetId: user.id,
        data: { mailed: false, reason: 'too_many_requests', perHour: this.config.passwordReset.mailsPerHour },
      });
      return;
    }
    await this.sendTo(user, meta);
  }

  /** Issues a token (replacing older ones) and enqueues the mail; `principal` is the admin who asked, if any. */
  private async sendTo(user: User, meta: RequestMeta, principal?: Principal): Promise<ResetMailReceipt> {
    const em = currentEm(this.orm);
    const ttlMinutes = this.config.passwordReset.ttlMinutes;
    const { token, expiresAt } = await issueOneTimeToken(em, {
      userId: user.id,
      purpose: PASSWORD_RESET_PURPOSE,
      ttlSeconds: ttlMinutes * 60,
    });
    await sweepOneTimeTokens(em);
    const link = `${this.config.publicUrl}/app/reset-password?token=${encodeURIComponent(token)}`;
    const receipt = await this.mailer.enqueue(user.email, passwordReset({ name: user.name, link, expiresInMinutes: ttlMinutes }), {
      meta: { userId: user.id, companyId: user.company.id, requestId: meta.requestId, purpose: PASSWORD_RESET_PURPOSE },
    });
    await this.audit.record({
      action: 'auth.password_reset_requested',
      companyId: user.company.id,
      ...(principal ? { principal } : { actor: { actorType: 'anonymous' as const, actorId: null, actorLabel: user.email } }),
      meta,
      targetType: 'user',
      targetId: user.id,
      data: { mailed: true, mailId: receipt.id, expiresAt: expiresAt.toISOString(), byAdmin: !!principal },
    });
    return { userId: user.id, mailId: receipt.id, expiresAt };
  }
}

function invalidToken(): AppError {
  return new AppError('password_reset_token_invalid', 'The password reset link is invalid, expired or already used; ask for a new one');
}

function checkNewPassword(password: string): void {
  const issues: ValidationIssue[] = [];
  // Counted in characters (code points), not UTF-16 units.
  const length = [...password].length;
  if (length < MIN_PASSWORD_LENGTH) {
    issues.push({ loc: ['body', 'new_password'], msg: `must be at least ${MIN_PASSWORD_LENGTH} characters`, type: 'string_too_short' });
  }
  if (password.length > MAX_PASSWORD_LENGTH) {
    issues.push({ loc: ['body', 'new_password'], msg: `must be at most ${MAX_PASSWORD_LENGTH} characters`, type: 'string_too_long' });
  }
  if (issues.length) throw AppError.validation(issues, 'The new password was not accepted');
}
