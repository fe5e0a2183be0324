import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { Orm } from '../../db/orm';
import type { IdentitySettings } from './config';
import type { EventBus } from '../../events/event-bus';
import { AppError } from '../../errors/catalog';
import { textLength } from '../../errors/text-length';
import { requireUser } from '../../auth/policy';
import { requireRecentAuthentication } from './recent-authentication';
import type { Principal, RequestMeta } from '../../auth/principal';
import { currentEm, transaction, whenCommitted } from '../../db/unit-of-work';
import type { Mailer } from '../../mail/mailer';
import { emailChangeRequested, emailVerification } from './mail';
import type { AuditService } from '../audit';
import { normalizeEmail } from './identity.service';
import { consumeOneTimeToken, invalidateOneTimeTokens, issueOneTimeToken, oneTimeTokenMailRef, peekOneTimeToken } from './one-time-tokens';
import { PASSWORD_RESET_PURPOSE } from './password-reset.service';
import { User } from './user.entity';
import { searchKey } from '../../search-key';

/** Where the confirmation link points: the web app, which posts the token to /me/email/confirm. */
export const CONFIRM_EMAIL_PATH = '/app/confirm-email';
/** The `one_time_tokens.purpose` of email-change links; `data.newEmail` holds the requested address. */
export const EMAIL_CHANGE_PURPOSE = 'email_change';
const MAX_EMAIL_LENGTH = 320;
/** One plain address: the same characters the mailer accepts, so every accepted address can be mailed. */
const EMAIL = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+\.[^\s@<>()[\]\\,;:"]+$/;

export interface PendingEmailChange {
  newEmail: string;
  /** Until when the link mailed to the new address works. */
  expiresAt: Date;
}

/**
 * Changing a signed-in user's email, in two steps:
 *
 * 1. `request` (needs an authentication within 5 minutes) stores a
 *    one-time token (one-time-tokens.ts: 32 random bytes, only the SHA-256
 *    kept) with the new address in its data, mails the link
 *    `PUBLIC_URL/app/confirm-email?token=…` to the new address and a notice
 *    to the current one. A newer request (or `cancel`) voids older links.
 * 2. `confirm(token)` needs no session: the token proves the new mailbox and
 *    the request behind it proved the account. It spends the token and sets
 *    the email in one transaction; the unique index on users.email decides a
 *    race for the same address (409 email_taken, and the link stays usable).
 *
 * Sessions stay signed in (the change was authorized by a recent password
 * check and the old address was told); `user.changed` drops cached
 * credentials, which carry the email. Password-reset links mailed to the old
 * address stop working.
 */
export class EmailChangeService {
  constructor(
    private readonly orm: Orm,
    private readonly config: IdentitySettings,
    private readonly bus: EventBus,
    private readonly audit: AuditService,
    private readonly mailer: Mailer,
  ) {}

  async request(principal: Principal, newEmailInput: string, meta: RequestMeta): Promise<PendingEmailChange> {
    const caller = await requireRecentAuthentication(this.orm, principal);
    const newEmail = normalizeEmail(newEmailInput ?? '');
    if (textLength(newEmail) > MAX_EMAIL_LENGTH || !EMAIL.test(newEmail)) {
      throw AppError.validation([{ loc: ['body', 'new_email'], msg: 'not a valid email address', type: 'value_error.email' }]);
    }
    const em = currentEm(this.orm);
    const user = await em.findOne(User, { id: caller.userId }, { refresh: true });
    if (!user) throw new AppError('token_invalid', 'The user of this token no longer exists');
    if (newEmail === user.email) {
      throw AppError.validation([{ loc: ['body', 'new_email'], msg: 'is already your email address', type: 'value_error.email' }]);
    }
    if (await em.count(User, { email: newEmail })) {
      await this.audit.record({
        action: 'user.email_change_refused',
        companyId: caller.companyId,
        principal: caller,
        meta,
        targetType: 'user',
        targetId: user.id,
        data: { reason: 'email_taken' },
      });
      throw emailTaken();
    }

    const ttlMinutes = this.config.emailChangeTokenTtlMinutes;
    // The link, its audit entry and both mails commit together; delivery runs as jobs.
    return transaction(this.orm, async (tx) => {
      // At most one pending change per user: issuing expires the older links (replace).
      const { token, expiresAt } = await issueOneTimeToken(tx, {
        userId: user.id,
        purpose: EMAIL_CHANGE_PURPOSE,
        ttlSeconds: ttlMinutes * 60,
        data: { newEmail },
      });
      await this.audit.record({
        action: 'user.email_change_requested',
        companyId: caller.companyId,
        principal: caller,
        meta,
        targetType: 'user',
        targetId: user.id,
        data: { oldEmail: user.email, newEmail, expiresAt: expiresAt.toISOString() },
      });
      const link = `${this.config.publicUrl}${CONFIRM_EMAIL_PATH}?token=${encodeURIComponent(token)}`;
      const mailMeta = { meta: { userId: user.id, companyId: caller.companyId, requestId: meta.requestId } };
      await this.mailer.enqueue(newEmail, emailVerification({ name: user.name, link, expiresInMinutes: ttlMinutes }), {
        ...mailMeta,
        secretRef: oneTimeTokenMailRef(EMAIL_CHANGE_PURPOSE, user.id),
      });
      await this.mailer.enqueue(user.email, emailChangeRequested({ name: user.name, newEmail, expiresInMinutes: ttlMinutes }), mailMeta);
      return { newEmail, expiresAt };
    });
  }

  /** Voids the caller's pending change, if any (no step-up: it only undoes). Returns whether there was one. */
  async cancel(principal: Principal, meta: RequestMeta): Promise<boolean> {
    const caller = requireUser(principal);
    return transaction(this.orm, async (tx) => {
      const removed = await invalidateOneTimeTokens(tx, caller.userId, EMAIL_CHANGE_PURPOSE);
      if (!removed) return false;
      await this.audit.record({
        action: 'user.email_change_cancelled',
        companyId: caller.companyId,
        principal: caller,
        meta,
        targetType: 'user',
        targetId: caller.userId,
      });
      return true;
    });
  }

  /**
   * Sets the email of the token's user to the address the token was mailed
   * to. Unknown, used, superseded and expired tokens all answer 400
   * email_change_token_invalid, without telling which.
   */
  async confirm(token: string, meta: RequestMeta): Promise<void> {
    const presented = typeof token === 'string' ? token.trim() : '';
    if (!presented || textLength(presented) > 512) throw invalidToken();
    const em = currentEm(this.orm);
    const found = await peekOneTimeToken(em, EMAIL_CHANGE_PURPOSE, presented);
    const newEmail = found?.data?.newEmail;
    if (!found || typeof newEmail !== 'string') throw invalidToken();
    const user = await em.findOne(User, { id: found.user.id }, { populate: ['company'], refresh: true });
    if (!user) throw invalidToken();
    if (user.status !== 'active') throw new AppError('forbidden', 'This account is suspended; contact your administrator');
    const oldEmail = user.email;
    const actor = { actorType: 'user' as const, actorId: user.id, actorLabel: oldEmail };

    try {
      await transaction(this.orm, async (tx) => {
        // Spent by one conditional UPDATE: of two concurrent confirmations exactly one wins.
        if (!(await consumeOneTimeToken(tx, EMAIL_CHANGE_PURPOSE, presented))) throw invalidToken();
        // The unique index on users.email is the final word on whether the address is free.
        // A native update runs no onUpdate: the search key is written here.
        const updated = await tx.nativeUpdate(User, { id: user.id, email: oldEmail }, { email: newEmail, emailKey: searchKey(newEmail), updatedAt: new Date() });
        if (updated !== 1) throw invalidToken();
        // Reset links mailed to the old address no longer reach the account's owner.
        await invalidateOneTimeTokens(tx, user.id, PASSWORD_RESET_PURPOSE);
        await this.audit.record({
          action: 'user.email_changed',
          companyId: user.company.id,
          actor,
          meta,
          targetType: 'user',
          targetId: user.id,
          data: { oldEmail, newEmail },
        });
        whenCommitted(this.orm, () => this.bus.publish('user.changed', { userId: user.id, access: true }));
      });
    } catch (error) {
      if (!(error instanceof UniqueConstraintViolationException)) throw error;
      // Rolled back: the link stays usable should the address become free again.
      await this.audit.record({
        action: 'user.email_change_refused',
        companyId: user.company.id,
        actor,
        meta,
        targetType: 'user',
        targetId: user.id,
        data: { reason: 'email_taken', stage: 'confirm' },
      });
      throw emailTaken();
    }
  }
}

function invalidToken(): AppError {
  return new AppError('email_change_token_invalid', 'This confirmation link is invalid, expired, already used or replaced by a newer one');
}

function emailTaken(): AppError {
  return new AppError('email_taken', 'Another account already uses this email address');
}
