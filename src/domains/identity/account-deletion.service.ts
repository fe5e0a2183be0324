import type { UserDeletionHooks } from './user-deletion';
import type { EntityManager } from '@mikro-orm/better-sqlite';
import type { Orm } from '../../db/orm';
import type { IdentitySettings } from './config';
import type { EventBus } from '../../events/event-bus';
import { AppError } from '../../errors/catalog';
import { requireUser } from '../../auth/policy';
import { requireRecentAuthentication } from './recent-authentication';
import type { Principal, RequestMeta } from '../../auth/principal';
import { currentEm, transaction, whenCommitted, withUnitOfWork } from '../../db/unit-of-work';
import type { Mailer } from '../../mail/mailer';
import type { Logger } from '../../kernel/logger';
import { accountDeleted, accountDeletionCancelled, accountDeletionScheduled } from './mail';
import type { AuditService } from '../audit';
import { User } from './user.entity';

/** The web-app page the "cancel the deletion" link of the mail opens (it calls DELETE /me/deletion once signed in). */
export const CANCEL_DELETION_PATH = '/app/cancel-deletion';
const DAY_MS = 24 * 3600 * 1000;
/** The recurring job that runs `executeDue()` (every ACCOUNT_DELETION_INTERVAL_SECONDS). */
export const ACCOUNT_DELETION_SWEEP = 'identity.account_deletion';
/** Users deleted per sweep at most; the next sweep takes the rest. */
const BATCH = 100;
const SYSTEM_ACTOR = { actorType: 'system' as const, actorId: null, actorLabel: 'account-deletion' };

export interface DeletionSchedule {
  scheduledFor: Date;
}

export interface DeletionRun {
  /** Ids of the users deleted by this run. */
  deleted: string[];
  /** Ids of due users kept because deleting them would leave their company's members without an owner. */
  blocked: string[];
}

/**
 * Self-service account deletion with a grace period:
 *
 * - `request` (needs an authentication within 5 minutes) sets
 *   `users.deletion_scheduled_for` to now + ACCOUNT_DELETION_GRACE_DAYS and
 *   mails the user. Asking again while scheduled answers the same date.
 * - `cancel` (any signed-in session, no step-up) clears it.
 * - `executeDue(now)` deletes the users whose time has come: the mail first
 *   (kept in the outbox), then one conditional DELETE (a cancel that got in
 *   first wins), which cascades to sessions, refresh tokens, recovery codes,
 *   linked SSO accounts and pending email changes; keys and invitations they
 *   created keep existing without their creator. The audit log keeps
 *   `user.deleted` with the email. The `identity.account_deletion` job runs
 *   it in the server process.
 *
 * Each change commits in one transaction with its audit entry and its mail
 * (stored in the outbox with its delivery job): none is ever without the
 * others.
 *
 * Owner rule: an owner may not leave a company whose other users would be
 * left without an owner. An owner needs another active owner who is not
 * scheduled for deletion, unless nobody else in the company remains (then
 * the user alone is deleted; the company and its data stay). The rule is
 * checked at request time (409 conflict, `reason: sole_owner`) and again at
 * execution time, where a violating deletion is held back (still scheduled,
 * cancellable) until the situation allows it (another owner appointed, the
 * other users gone).
 */
export class AccountDeletionService {
  constructor(
    private readonly orm: Orm,
    private readonly config: IdentitySettings,
    private readonly bus: EventBus,
    private readonly audit: AuditService,
    private readonly mailer: Mailer,
    private readonly logger: Logger,
    private readonly deletionHooks: UserDeletionHooks,
  ) {}

  async request(principal: Principal, meta: RequestMeta): Promise<DeletionSchedule> {
    const caller = await requireRecentAuthentication(this.orm, principal);
    const scheduledFor = new Date(Date.now() + this.config.accountDeletionGraceDays * DAY_MS);
    // One transaction for the rule and the write: SQLite runs one at a time, so two
    // owners asking together cannot both count on the other.
    return transaction(this.orm, async (tx) => {
      const user = await tx.findOne(User, { id: caller.userId }, { refresh: true });
      if (!user) throw new AppError('token_invalid', 'The user of this token no longer exists');
      if (user.deletionScheduledFor) return { scheduledFor: user.deletionScheduledFor };
      if (await this.wouldOrphanCompany(tx, user)) {
        throw new AppError(
          'conflict',
          'You are the only owner of your company and other users remain in it: make another user an owner first ' +
            '(or remove the other users), then ask again',
          { extra: { reason: 'sole_owner' } },
        );
      }
      await tx.nativeUpdate(User, { id: user.id, deletionScheduledFor: null }, { deletionScheduledFor: scheduledFor, updatedAt: new Date() });
      await this.audit.record({
      action: 'user.deletion_requested',
      companyId: caller.companyId,
      principal: caller,
      meta,
      targetType: 'user',
      targetId: user.id,
        data: { scheduledFor: scheduledFor.toISOString(), graceDays: this.config.accountDeletionGraceDays },
      });
      await this.mailer.enqueue(
        user.email,
        accountDeletionScheduled({ name: user.name, scheduledFor, cancelLink: `${this.config.publicUrl}${CANCEL_DELETION_PATH}` }),
        { meta: { userId: user.id, companyId: caller.companyId, requestId: meta.requestId } },
      );
      return { scheduledFor };
    });
  }

  /** Cancels the caller's scheduled deletion; 409 conflict when none is scheduled. */
  async cancel(principal: Principal, meta: RequestMeta): Promise<void> {
    const caller = requireUser(principal);
    await transaction(this.orm, async (tx) => {
      const user = await tx.findOne(User, { id: caller.userId }, { refresh: true });
      if (!user) throw new AppError('token_invalid', 'The user of this token no longer exists');
      const scheduledFor = user.deletionScheduledFor;
      const cleared = await tx.nativeUpdate(
        User,
        { id: user.id, deletionScheduledFor: { $ne: null } },
        { deletionScheduledFor: null, updatedAt: new Date() },
      );
      if (cleared !== 1) throw new AppError('conflict', 'No deletion of your account is scheduled');
      await this.audit.record({
        action: 'user.deletion_cancelled',
        companyId: caller.companyId,
        principal: caller,
        meta,
        targetType: 'user',
        targetId: user.id,
        data: { scheduledFor: scheduledFor?.toISOString() ?? null },
      });
      await this.mailer.enqueue(user.email, accountDeletionCancelled({ name: user.name }), {
        meta: { userId: user.id, companyId: caller.companyId, requestId: meta.requestId },
      });
    });
  }

  /**
   * Deletes every user whose scheduled deletion time is at or before `now`
   * (up to a batch per call), each in its own transaction with its audit
   * entry and its farewell mail.
   */
  async executeDue(now: Date = new Date()): Promise<DeletionRun> {
    return withUnitOfWork(this.orm, async () => {
      const run: DeletionRun = { deleted: [], blocked: [] };
      const due = await currentEm(this.orm).find(
        User,
        { deletionScheduledFor: { $lte: now } },
        { orderBy: { deletionScheduledFor: 'asc', id: 'asc' }, limit: BATCH, populate: ['company'] },
      );
      for (const user of due) {
        const outcome = await transaction(this.orm, async (tx) => {
          // Read again in the transaction: a cancel or a role change may have got in since.
          if (await this.wouldOrphanCompany(tx, user, now)) return 'blocked';
          // Read before the cascade removes them (the user's jobs), announced only if the user really goes.
          const announce = await this.deletionHooks.run({ userId: user.id, companyId: user.company.id });
          const removed = await tx.nativeDelete(User, { id: user.id, deletionScheduledFor: { $lte: now } });
          if (removed !== 1) return 'kept';
          whenCommitted(this.orm, announce);
          await this.audit.record({
            action: 'user.deleted',
            companyId: user.company.id,
            actor: SYSTEM_ACTOR,
            targetType: 'user',
            targetId: user.id,
            data: {
              email: user.email,
              name: user.name,
              role: user.role,
              scheduledFor: user.deletionScheduledFor?.toISOString() ?? null,
              reason: 'self_service',
            },
          });
          await this.mailer.enqueue(user.email, accountDeleted({ name: user.name }), {
            meta: { userId: user.id, companyId: user.company.id },
          });
          // Cached credentials and open sockets of the user end once the deletion has committed.
          whenCommitted(this.orm, () => this.bus.publish('user.changed', { userId: user.id, access: true }));
          return 'deleted';
        });
        if (outcome === 'deleted') run.deleted.push(user.id);
        if (outcome === 'blocked') {
          run.blocked.push(user.id);
          this.logger.warn(
            { userId: user.id, companyId: user.company.id },
            'account deletion held back: the user is the only owner of a company with other users',
          );
        }
      }
      if (run.deleted.length || run.blocked.length) {
        this.logger.info({ deleted: run.deleted.length, blocked: run.blocked.length }, 'account deletions executed');
      }
      return run;
    });
  }

  /**
   * Whether deleting `user` would leave other users of its company without an
   * owner: `user` is an owner, no other active owner remains, and other users
   * do. At request time users scheduled for deletion do not remain; at
   * execution time (`dueAt`) only those already due do not, so a member whose
   * deletion is still pending (and might be cancelled) holds an owner back,
   * and of two owners the one due first goes while the other still remains.
   */
  private async wouldOrphanCompany(em: EntityManager, user: User, dueAt?: Date): Promise<boolean> {
    if (user.role !== 'owner') return false;
    const remaining = dueAt
      ? { $or: [{ deletionScheduledFor: null }, { deletionScheduledFor: { $gt: dueAt } }] }
      : { deletionScheduledFor: null };
    const others = { company: user.company.id, id: { $ne: user.id }, ...remaining };
    if (await em.count(User, { ...others, role: 'owner', status: 'active' })) return false;
    return (await em.count(User, others)) > 0;
  }
}
