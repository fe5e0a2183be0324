import type { Orm } from '../../db/orm';
import type { IdentitySettings } from './config';
import type { EventBus } from '../../events/event-bus';
import { AppError, type ValidationIssue } from '../../errors/catalog';
import { textLength } from '../../errors/text-length';
import { hashPassword, MAX_PASSWORD_LENGTH } from '../../auth/password';
import type { RequestMeta } from '../../auth/principal';
import { currentEm, transaction, whenCommitted, withUnitOfWork } from '../../db/unit-of-work';
import type { JobQueue } from '../../jobs/job-queue';
import type { Mailer } from '../../mail/mailer';
import { passwordReset } from './mail';
import type { AuditService } from '../audit';
import type { LoginThrottleService } from './login-throttle.service';
import type { SessionService } from './session.service';
import { OneTimeToken } from './one-time-token.entity';
import { consumeOneTimeToken, invalidateOneTimeTokens, issueOneTimeToken, oneTimeTokenMailRef, peekOneTimeToken } from './one-time-tokens';
import { User } from './user.entity';
import { MIN_PASSWORD_LENGTH, normalizeEmail } from './identity.service';
import type { SecurityPolicyEnforcer } from './security-policy.enforcer';

export const PASSWORD_RESET_PURPOSE = 'password_reset';
/** The job that looks the address of a reset request up and mails the link (see `request`). */
export const PASSWORD_RESET_MAIL = 'identity.password_reset_mail';

/** What the `identity.password_reset_mail` job carries. */
export interface PasswordResetMailJob {
  email: string;
  ip: string;
  requestId: string;
}

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
 * - `request(email)` answers the same whatever the address: it only stores
 *   an `identity.password_reset_mail` job, and the lookup, the token and the
 *   mail happen in that job, after the caller has its answer, so neither the
 *   body nor the response time tells whether an account exists. Only an
 *   active user gets a mail, at most PASSWORD_RESET_MAILS_PER_HOUR an hour.
 * - The token is 32 random bytes; only its SHA-256 is stored (table
 *   `one_time_tokens`, purpose `password_reset`), valid
 *   PASSWORD_RESET_TTL_MINUTES, and a newer one replaces any unused older one.
 * - `confirm(token, newPassword)` spends the token in one conditional UPDATE,
 *   sets the new scrypt hash, ends every session of the user and records the
 *   audit entry in one transaction, then clears the failed-login count of
 *   the address.
 * - The token, its mail (outbox row and delivery job) and the audit entry
 *   commit in one transaction: a link is never mailed without its record.
 * - `sendResetFor(userId)` is the same mail for the administrators' reset,
 *   inside the caller's transaction, which records the admin's action
 *   (`user.password_reset_sent`): one audit entry for one action.
 */
export class PasswordResetService {
  constructor(
    private readonly orm: Orm,
    private readonly config: IdentitySettings,
    private readonly bus: EventBus,
    private readonly audit: AuditService,
    private readonly mailer: Mailer,
    private readonly jobs: JobQueue,
    private readonly sessions: SessionService,
    private readonly loginThrottle: LoginThrottleService,
    /** The company's minimum password length (security policy). */
    private readonly policies: SecurityPolicyEnforcer,
  ) {}

  /**
   * Accepts a reset request for `email`: stores the job that mails the link,
   * before anything about the address is looked up.
   */
  async request(email: string, meta: RequestMeta): Promise<void> {
    const normalized = normalizeEmail(email);
    if (textLength(normalized) < 3 || textLength(normalized) > 320) {
      throw AppError.validation([{ loc: ['body', 'email'], msg: 'must be 3 to 320 characters', type: 'string_too_short' }]);
    }
    const job: PasswordResetMailJob = { email: normalized, ip: meta.ip, requestId: meta.requestId };
    await withUnitOfWork(this.orm, async () => {
      this.jobs.enqueue(PASSWORD_RESET_MAIL, { ...job });
      await currentEm(this.orm).flush();
    });
  }

  /** The `identity.password_reset_mail` job: mails a link when the address is an active user's. */
  async mailRequested(job: PasswordResetMailJob): Promise<void> {
    await this.mailIfActive(job.email, { ip: job.ip, requestId: job.requestId, userAgent: null });
  }

  /**
   * Sends a reset link to the user (the administrators' reset-password flow;
   * authorize the caller first, and audit the action in the same
   * transaction). Earlier unused links of the user stop working.
   */
  async sendResetFor(userId: string, meta: RequestMeta): Promise<ResetMailReceipt> {
    const user = await currentEm(this.orm).findOne(User, { id: userId });
    if (!user) throw new AppError('not_found', 'No user with this id');
    return this.sendTo(user, meta, { byAdmin: true });
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
    const user = await transaction(this.orm, async (tx) => {
      const token = await consumeOneTimeToken(tx, PASSWORD_RESET_PURPOSE, input.token);
      if (!token) throw invalidToken();
      const owner = await tx.findOne(User, { id: token.user.id }, { refresh: true });
      if (!owner) throw invalidToken();
      await tx.nativeUpdate(User, { id: owner.id }, { passwordHash, updatedAt: now });
      await invalidateOneTimeTokens(tx, owner.id, PASSWORD_RESET_PURPOSE, now);
      const revoked = await this.sessions.revokeAllOfUser(owner.id, 'password_reset');
      whenCommitted(this.orm, () => this.bus.publish('user.changed', { userId: owner.id, access: true }));
      await this.audit.record({
        action: 'auth.password_reset',
        companyId: owner.company.id,
        actor: { actorType: 'user', actorId: owner.id, actorLabel: owner.email },
        meta,
        targetType: 'user',
        targetId: owner.id,
        data: { sessionsRevoked: revoked.length },
      });
      return owner;
    });
    // The throttle keeps its own rows, outside the transaction (see LoginThrottleService).
    await this.loginThrottle.reset(user.email);
  }

  private async mailIfActive(email: string, meta: RequestMeta): Promise<void> {
    const em = currentEm(this.orm);
    const user = await em.findOne(User, { email });
    if (!user || user.status !== 'active') return;
    // The count and the new token commit together: requests handled side by side
    // (aliases, concurrent jobs) cannot each see room under the cap.
    await transaction(this.orm, async (tx) => {
      const hourAgo = new Date(Date.now() - 3600_000);
      const recent = await tx.count(OneTimeToken, { user: user.id, purpose: PASSWORD_RESET_PURPOSE, createdAt: { $gt: hourAgo } });
      if (recent < this.config.passwordReset.mailsPerHour) return void (await this.sendTo(user, meta));
      await this.audit.record({
        action: 'auth.password_reset_requested',
        companyId: user.company.id,
        actor: { actorType: 'anonymous', actorId: null, actorLabel: email },
        meta,
        targetType: 'user',
        targetId: user.id,
        data: { mailed: false, reason: 'too_many_requests', perHour: this.config.passwordReset.mailsPerHour },
      });
    });
  }

  /** Issues a token (replacing older ones) and enqueues the mail; audits the request unless an admin asked (the admin's action is audited by its caller). */
  private async sendTo(user: User, meta: RequestMeta, options: { byAdmin?: boolean } = {}): Promise<ResetMailReceipt> {
    const ttlMinutes = this.config.passwordReset.ttlMinutes;
    return transaction(this.orm, async (tx) => {
      const { token, expiresAt } = await issueOneTimeToken(tx, {
        userId: user.id,
        purpose: PASSWORD_RESET_PURPOSE,
        ttlSeconds: ttlMinutes * 60,
      });
      const link = `${this.config.publicUrl}/app/reset-password?token=${encodeURIComponent(token)}`;
      const receipt = await this.mailer.enqueue(user.email, passwordReset({ name: user.name, link, expiresInMinutes: ttlMinutes }), {
        meta: { userId: user.id, companyId: user.company.id, requestId: meta.requestId, purpose: PASSWORD_RESET_PURPOSE },
        secretRef: oneTimeTokenMailRef(PASSWORD_RESET_PURPOSE, user.id),
      });
      if (!options.byAdmin) {
        await this.audit.record({
          action: 'auth.password_reset_requested',
          companyId: user.company.id,
          actor: { actorType: 'anonymous', actorId: null, actorLabel: user.email },
          meta,
          targetType: 'user',
          targetId: user.id,
          data: { mailed: true, mailId: receipt.id, expiresAt: expiresAt.toISOString() },
        });
      }
      return { userId: user.id, mailId: receipt.id, expiresAt };
    });
  }
}

function invalidToken(): AppError {
  return new AppError('password_reset_token_invalid', 'The password reset link is invalid, expired or already used; ask for a new one');
}

function checkNewPassword(password: string): void {
  const issues: ValidationIssue[] = [];
  const length = textLength(password);
  if (length < MIN_PASSWORD_LENGTH) {
    issues.push({ loc: ['body', 'new_password'], msg: `must be at least ${MIN_PASSWORD_LENGTH} characters`, type: 'string_too_short' });
  }
  if (length > MAX_PASSWORD_LENGTH) {
    issues.push({ loc: ['body', 'new_password'], msg: `must be at most ${MAX_PASSWORD_LENGTH} characters`, type: 'string_too_long' });
  }
  if (issues.length) throw AppError.validation(issues, 'The new password was not accepted');
}
