import { createHmac } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/better-sqlite';
import type { Orm } from '../../db/orm';
import { AppError } from '../../errors/catalog';
import { requireCompanyAdmin } from '../../auth/policy';
import type { Principal, RequestMeta } from '../../auth/principal';
import { currentEm, runInUnitOfWork, transaction } from '../../db/unit-of-work';
import type { AuditService } from '../audit';
import type { LoginThrottleConfig } from './account-security.config';
import { LoginThrottle } from './login-throttle.entity';
import { User } from './user.entity';
import { normalizeEmail } from './identity.service';

/** How often stale rows (no failure within the memory window, not blocked) are deleted. */
const SWEEP_INTERVAL_MS = 10 * 60_000;
/** Claims lost to concurrent attempts on one address before the attempt is refused. */
const MAX_CLAIM_ROUNDS = 8;

/** One claimed password attempt: report its outcome exactly once. */
export interface LoginAttempt {
  /** The count this attempt holds if it fails (1 for the first failure in a row). */
  readonly failures: number;
  /** The password was right: the address starts again from zero. */
  succeeded(): Promise<void>;
  /**
   * The password (or the address) was wrong. When this failure reaches the
   * lock threshold it audits `auth.account_locked` and throws
   * `account_locked`; otherwise it returns and the caller answers as usual.
   */
  failed(): Promise<void>;
}

/** What an admin learns from unlocking. */
export interface UnlockResult {
  userId: string;
  /** Whether sign-in was locked (or delayed) at the time. */
  wasLocked: boolean;
  /** Consecutive failures that were cleared. */
  failures: number;
}

/**
 * Per-account brute-force protection of password sign-in, keyed by the
 * normalized email whether or not an account has it, so that every answer
 * (status, code, body, headers, timing) is the same for a real address and an
 * unknown one. Independent of the client IP (the per-IP budget on /auth/* is
 * the rate limiter's job).
 *
 * With the defaults (LOGIN_* settings): the first 4 failures in a row are
 * answered normally; from the 5th failure on, the next attempt must wait
 * 1, 2, 4, 8, 16 s (2^(n−5), at most LOGIN_DELAY_MAX_SECONDS) and an earlier
 * one is refused with `429 rate_limited` and Retry-After; the 10th failure
 * locks the address for 15 minutes (`429 account_locked`, Retry-After), and
 * once a lock ends, each further failure locks it again at once. A correct
 * password, a password reset or an admin unlock starts again from zero;
 * failures more than 24 hours apart do not add up.
 *
 * The check comes before the password is verified: a delayed or locked
 * address does not even try the password (a correct one is refused too). An
 * attempt is counted the moment it is claimed, by a compare-and-set on the
 * row, and the claim that reaches the lock threshold sets the lock before its
 * password is checked: concurrent attempts cannot slip past a lock together
 * (at most the attempts left before the lock run at once; once locked, one
 * at a time). Delays run from a failure, so concurrent correct logins of one
 * account are never delayed.
 */
export class LoginThrottleService {
  private nextSweep = 0;

  constructor(
    private readonly orm: Orm,
    private readonly config: LoginThrottleConfig,
    private readonly audit: AuditService,
    /** HMAC key for the email digests (derived from a generated server secret). */
    private readonly key: Buffer,
  ) {}

  /** The row key of an address: HMAC-SHA-256 of the normalized email. */
  keyOf(email: string): string {
    return createHmac('sha256', this.key).update(normalizeEmail(email)).digest('hex');
  }

  /**
   * Claims one password attempt for `email`, or throws `rate_limited` (a
   * delay is running) or `account_locked` (both 429 with Retry-After) without
   * anything else being checked. `companyId` (of the account, when there is
   * one) only files the audit entry of a refusal.
   */
  async begin(email: string, companyId: string | null, meta: RequestMeta): Promise<LoginAttempt> {
    const normalized = normalizeEmail(email);
    const keyHash = this.keyOf(normalized);
    this.sweep();
    for (let round = 0; round < MAX_CLAIM_ROUNDS; round++) {
      const em = this.orm.em.fork();
      const now = new Date();
      let row = await em.findOne(LoginThrottle, { keyHash });
      if (!row) {
        await em.createQueryBuilder(LoginThrottle).insert({ keyHash, failures: 0, createdAt: now }).onConflict('keyHash').ignore().execute('run');
        row = await em.findOne(LoginThrottle, { keyHash }, { refresh: true });
        if (!row) continue;
      }
      if (row.blockedUntil && row.blockedUntil > now) {
        const refusal = this.refusal(row.failures, row.blockedUntil, now);
        await this.audit.record({
          action: 'auth.login_failed',
          companyId,
          actor: { actorType: 'anonymous', actorId: null, actorLabel: normalized },
          meta,
          data: { reason: refusal.code, failures: row.failures, retryAfterSeconds: refusal.extra.retry_after_seconds },
        });
        throw refusal;
      }
      const failures = (this.forgotten(row, now) ? 0 : row.failures) + 1;
      // Counted now, as if it failed, so that concurrent attempts see it at once (a correct password
      // deletes the row). Only a lock is set ahead of the outcome: concurrent attempts cannot slip
      // past it, while concurrent correct logins are not delayed; a delay starts from a failure.
      const won = await em.nativeUpdate(
        LoginThrottle,
        { keyHash, failures: row.failures, lastFailureAt: row.lastFailureAt },
        { failures, lastFailureAt: now, blockedUntil: this.locks(failures) ? this.blockedUntil(failures, now) : null },
      );
      if (won === 1) return this.attempt(keyHash, normalized, failures, companyId, meta);
    }
    // Only under a flood of concurrent attempts on one address.
    throw this.refusal(0, new Date(Date.now() + 1000), new Date());
  }

  /**
   * Clears the count of an address (a password reset, an unsuspend); returns
   * the row it removed, if any. The throttle's rows are written outside the
   * caller's unit of work (`em` defaults to a fresh fork): a refused request
   * still counts. Never inside a transaction() of another EntityManager.
   */
  async reset(email: string, em: EntityManager = this.orm.em.fork()): Promise<LoginThrottle | null> {
    const keyHash = this.keyOf(email);
    const row = await em.findOne(LoginThrottle, { keyHash });
    if (row) await em.nativeDelete(LoginThrottle, { keyHash });
    return row;
  }

  /** Whether sign-in for this address is locked or delayed now, and until when (for admin views). */
  async status(email: string): Promise<{ failures: number; blockedUntil: Date | null; locked: boolean }> {
    const row = await this.orm.em.fork().findOne(LoginThrottle, { keyHash: this.keyOf(email) });
    const now = new Date();
    if (!row || this.forgotten(row, now)) return { failures: 0, blockedUntil: null, locked: false };
    const blockedUntil = row.blockedUntil && row.blockedUntil > now ? row.blockedUntil : null;
    return { failures: row.failures, blockedUntil, locked: blockedUntil !== null && this.locks(row.failures) };
  }

  /**
   * An admin clears a user's failed-login count, which ends a lock or delay.
   * Owners and admins of the user's company, its API keys and superadmins may;
   * a member gets 403 before anything is looked up, and a user of another
   * company (or none) is 404 as if absent. Audited `user.unlocked`.
   */
  async unlockUser(principal: Principal, userId: string, meta: RequestMeta): Promise<UnlockResult> {
    const caller = requireUnlocker(principal);
    const user = await currentEm(this.orm).findOne(User, { id: userId });
    const superadmin = caller.kind === 'user' && caller.isSuperadmin;
    if (!user || (user.company.id !== caller.companyId && !superadmin)) {
      throw new AppError('not_found', 'No user with this id in your company');
    }
    const now = new Date();
    return transaction(this.orm, async (tx) => {
      const removed = await this.reset(user.email, tx);
      const active = removed && !this.forgotten(removed, now) ? removed : null;
      const blocked = !!active?.blockedUntil && active.blockedUntil > now;
      const result: UnlockResult = { userId: user.id, wasLocked: blocked, failures: active?.failures ?? 0 };
      await this.audit.record({
        action: 'user.unlocked',
        companyId: user.company.id,
        principal,
        meta,
        targetType: 'user',
        targetId: user.id,
        data: { wasLocked: result.wasLocked, locked: blocked && this.locks(active!.failures), failures: result.failures },
      });
      return result;
    });
  }

  private attempt(keyHash: string, email: string, failures: number, companyId: string | null, meta: RequestMeta): LoginAttempt {
    let settled = false;
    const settle = () => {
      if (settled) throw new Error('a login attempt is reported once');
      settled = true;
    };
    return {
      failures,
      succeeded: async () => {
        settle();
        await this.orm.em.fork().nativeDelete(LoginThrottle, { keyHash });
      },
      failed: async () => {
        settle();
        // The wait runs from the failure, not from the claim (the password check took a while).
        const now = new Date();
        const blockedUntil = this.blockedUntil(failures, now);
        // Its own unit of work and transaction: the failure counts whatever becomes of the request, and a lock commits with its audit entry.
        const locked = await runInUnitOfWork(this.orm, () =>
          transaction(this.orm, async (tx) => {
            const updated = await tx.nativeUpdate(LoginThrottle, { keyHash, failures }, { lastFailureAt: now, blockedUntil });
            // updated 0: a concurrent attempt moved the count on (or a correct one cleared it); its answer stands.
            if (updated !== 1 || !blockedUntil || !this.locks(failures)) return false;
            await this.audit.record({
              action: 'auth.account_locked',
              companyId,
              actor: { actorType: 'anonymous', actorId: null, actorLabel: email },
              meta,
              data: { failures, lockSeconds: this.config.lockSeconds, lockedUntil: blockedUntil.toISOString() },
            });
            return true;
          }),
        );
        if (locked) throw this.refusal(failures, blockedUntil!, now);
      },
    };
  }

  /** Whether `failures` in a row lock the address (rather than delay it). */
  private locks(failures: number): boolean {
    return this.config.lockAfterFailures > 0 && failures >= this.config.lockAfterFailures;
  }

  /** When the next attempt is allowed after `failures` failures in a row, or null for at once. */
  private blockedUntil(failures: number, now: Date): Date | null {
    const { delayAfterFailures, maxDelaySeconds, lockSeconds } = this.config;
    let seconds = 0;
    if (this.locks(failures)) seconds = lockSeconds;
    else if (delayAfterFailures > 0 && failures >= delayAfterFailures) {
      seconds = Math.min(2 ** Math.min(failures - delayAfterFailures, 30), maxDelaySeconds);
    }
    return seconds > 0 ? new Date(now.getTime() + seconds * 1000) : null;
  }

  /** A count whose last failure is older than the memory window no longer counts (unless still blocked). */
  private forgotten(row: LoginThrottle, now: Date): boolean {
    if (row.blockedUntil && row.blockedUntil > now) return false;
    return !row.lastFailureAt || now.getTime() - row.lastFailureAt.getTime() > this.config.failureMemorySeconds * 1000;
  }

  /** The one answer to a refused attempt: nothing in it depends on whether the address has an account. */
  private refusal(failures: number, until: Date, now: Date): AppError {
    const retryAfter = Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000));
    const options = { headers: { 'retry-after': String(retryAfter) }, extra: { retry_after_seconds: retryAfter } };
    if (this.locks(failures)) {
      return new AppError(
        'account_locked',
        `Sign-in for this email address is locked after too many failed attempts; try again in ${retryAfter} seconds, ` +
          'reset the password, or ask an administrator to unlock it',
        options,
      );
    }
    return new AppError('rate_limited', `Too many failed sign-in attempts for this email address; try again in ${retryAfter} seconds`, options);
  }

  /** Deletes rows that neither block nor count any more, at most every ten minutes, off the request. */
  private sweep(): void {
    const now = Date.now();
    if (now < this.nextSweep) return;
    this.nextSweep = now + SWEEP_INTERVAL_MS;
    const em: EntityManager = this.orm.em.fork();
    const cutoff = new Date(now - this.config.failureMemorySeconds * 1000);
    em.nativeDelete(LoginThrottle, {
      $and: [
        { $or: [{ lastFailureAt: null }, { lastFailureAt: { $lt: cutoff } }] },
        { $or: [{ blockedUntil: null }, { blockedUntil: { $lt: new Date(now) } }] },
      ],
      createdAt: { $lt: cutoff },
    }).catch(() => {
      this.nextSweep = 0;
    });
  }
}

/** Owners, admins and API keys of a company (requireCompanyAdmin), and platform superadmins. */
function requireUnlocker(principal: Principal) {
  return principal.kind === 'user' && principal.isSuperadmin ? principal : requireCompanyAdmin(principal);
}

/** The HMAC key of the email digests, derived from a generated server secret (kept in DATA_DIR/secrets.json). */
export function loginThrottleKey(secret: string): Buffer {
  return createHmac('sha256', secret).update('atrium:login-throttle:v1').digest();
}
