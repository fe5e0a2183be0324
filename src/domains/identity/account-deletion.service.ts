import type { EntityManager } from '@mikro-orm/better-sqlite';
import type { Orm } from '../../db/orm';
import type { IdentitySettings } from './config';
import type { EventBus } from '../../events/event-bus';
import { AppError } from '../../errors/catalog';
import { requireUser } from '../../auth/policy';
import { requireRecentAuthentication } from './recent-authentication';
import type { Principal, RequestMeta } from '../../auth/principal';
import { currentEm, runInUnitOfWork } from '../../db/unit-of-work';
import type { Mailer } from '../../mail/mailer';
import type { Logger } from '../../kernel/logger';
import { accountDeleted, accountDeletionCancelled, accountDeletionScheduled } from './mail';
import type { AuditService } from '../audit';
import { User } from './user.entity';

/** The web-app page the "cancel the deletion" link of the mail opens (it calls DELETE /me/deletion once signed in). */
export const CANCEL_DELETION_PATH = '/app/cancel-deletion';
const DAY_MS = 24 * 3600 * 1000;
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
 *   `user.deleted` with the email. A timer runs it in the server process.
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
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly orm: Orm,
    private readonly config: IdentitySettings,
    private readonly bus: EventBus,
    private readonly audit: AuditService,
    private readonly mailer: Mailer,
    private readonly logger: Logger,
  ) {}

  async request(principal: Principal, meta: RequestMeta): Promise<DeletionSchedule> {
    const caller = await requireRecentAuthentication(this.orm, principal);
    const em = currentEm(this.orm);
    const scheduledFor = new Date(Date.now() + this.config.accountDeletionGraceDays * DAY_MS);
    // One transaction for the rule and the write: SQLite runs one at a time, so two
    // owners asking together cannot both count on the other.
    const outcome = await em.transactional(async (tx) => {
      const user = await tx.findOne(User, { id: caller.userId }, { refresh: true });
      if (!user) throw new AppError('token_invalid', 'The user of this token no longer exists');
      if (user.deletionScheduledFor) return { user, scheduledFor: user.deletionScheduledFor, created: false };
      if (await this.wouldOrphanCompany(tx, user)) {
        throw new AppError(
          'conflict',
          'You are the only owner of your company and other users remain in it: make another user an owner first ' +
            '(or remove the other users), then ask again',
          { extra: { reason: 'sole_owner' } },
        );
      }
      await tx.nativeUpdate(User, { id: user.id, deletionScheduledFor: null }, { deletionScheduledFor: scheduledFor, updatedAt: new Date() });
      return { user, scheduledFor, created: true };
    });
    if (!outcome.created) return { scheduledFor: outcome.scheduledFor };

    const { user } = outcome;
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
  }

  /** Cancels the caller's scheduled deletion; 409 conflict when none is scheduled. */
  async cancel(principal: Principal, meta: RequestMeta): Promise<void> {
    const caller = requireUser(principal);
    const em = currentEm(this.orm);
    const user = await em.findOne(User, { id: caller.userId }, { refresh: true });
    if (!user) throw new AppError('token_invalid', 'The user of this token no longer exists');
    const scheduledFor = user.deletionScheduledFor;
    const cleared = await em.nativeUpdate(
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
  }

  /** Deletes every user whose scheduled deletion time is at or before `now` (up to a batch per call). */
  async executeDue(now: Date = new Date()): Promise<DeletionRun> {
    const em = this.orm.em.fork();
    const run: DeletionRun = { deleted: [], blocked: [] };
    const due = await em.find(
      User,
      { deletionScheduledFor: { $lte: now } },
      { orderBy: { deletionScheduledFor: 'asc', id: 'asc' }, limit: BATCH, populate: ['company'] },
    );
    for (const user of due) {
      if (await this.wouldOrphanCompany(em, user, now)) {
        run.blocked.push(user.id);
        this.logger.warn(
          { userId: user.id, companyId: user.company.id },
          'account deletion held back: the user is the only owner of a company with other users',
        );
        continue;
      }
      const snapshot = {
        email: user.email,
        name: user.name,
        role: user.role,
        scheduledFor: user.deletionScheduledFor?.toISOString() ?? null,
      };
      // The mail first, so it is in the outbox whatever happens next.
      try {
        await this.mailer.enqueue(user.email, accountDeleted({ name: user.name }), {
          meta: { userId: user.id, companyId: user.company.id },
        });
      } catch (error) {
        this.logger.error({ userId: user.id, err: error instanceof Error ? error.message : String(error) }, 'account deletion mail not stored');
      }
      // Conditional: a cancel that got in since the read keeps the account.
      const removed = await em.nativeDelete(User, { id: user.id, deletionScheduledFor: { $lte: now } });
      if (removed !== 1) continue;
      run.deleted.push(user.id);
      // Cached credentials and open sockets of the user end now.
      this.bus.publish('user.changed', { userId: user.id, access: true });
      await this.audit.record({
        action: 'user.deleted',
        companyId: user.company.id,
        actor: SYSTEM_ACTOR,
        targetType: 'user',
        targetId: user.id,
        data: { ...snapshot, reason: 'self_service' },
      });
    }
    if (run.deleted.length || run.blocked.length) {
      this.logger.info({ deleted: run.deleted.length, blocked: run.blocked.length }, 'account deletions executed');
    }
    return run;
  }

  /** Runs `executeDue()` every `intervalSeconds` (0: never) until `stop()`; the timer does not keep the process alive. */
  start(intervalSeconds: number): void {
    if (intervalSeconds <= 0 || this.timer) return;
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = runInUnitOfWork(this.orm, () => this.executeDue())
        .catch((error) => this.logger.error({ err: error instanceof Error ? error.message : String(error) }, 'account deletion sweep failed'))
        .finally(() => {
          this.running = undefined;
        });
    }, intervalSeconds * 1000);
    this.timer.unref();
  }

  /** Stops the timer and waits for a sweep in progress. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
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
