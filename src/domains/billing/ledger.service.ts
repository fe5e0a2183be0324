import type { Orm } from '../../db/orm';
import type { SqliteWriter, SyncSql } from '../../db/sqlite-writer';
import { currentEm, transaction } from '../../db/unit-of-work';
import type { EventBus } from '../../events/event-bus';
import type { ReadStore } from '../../db/read-store';
import { AppError } from '../../errors/catalog';
import { textLength } from '../../errors/text-length';
import { isSuperadmin, requireAuthenticated, requireCompanyAdmin } from '../../auth/policy';
import type { Principal, RequestMeta } from '../../auth/principal';
import { checkPage, type Page } from '../../pagination';
import { uuidv7 } from '../../ids';
import type { AuditService } from '../audit';
import { CreditEntry, type CreditEntryKind } from './credit-entry.entity';
import type { HoldStatus } from './credit-hold.entity';
import { formatMicros, parseMoney } from './money';

export const TRANSACTIONS_PER_PAGE = 50;
/** The most credits one ledger write may move: far above any plan, far below 2^53. */
export const MAX_CREDITS_PER_WRITE = 1_000_000_000;
export const GRANT_REASON_MAX = 500;
/**
 * The most credits a company may hold in all (monthly + granted + purchased +
 * held): GraphQL answers each bucket and their sum as Int, a 32-bit signed
 * integer. A write that would pass it is refused (422) before anything is written,
 * so a balance is always readable.
 */
export const MAX_BALANCE = 2_147_483_647;

export type CreditBucket = 'monthly' | 'granted' | 'purchased';

/** A company's balance: what it may spend (monthly, then granted, then purchased credits) and what running operations hold. */
export interface CreditBalance {
  companyId: string;
  monthly: number;
  granted: number;
  purchased: number;
  held: number;
  /** monthly + granted + purchased: what a reserve may take. */
  available: number;
  periodKey: string | null;
  periodStart: Date | null;
  periodEnd: Date | null;
  /** The spending budget per period in currency micro-units; null: none. */
  budgetMicros: number | null;
  /** Currency cost committed in the current period, in micro-units. */
  spendMicros: number;
}

export interface Hold {
  id: string;
  companyId: string;
  credits: number;
  status: HoldStatus;
  expiresAt: Date;
}

export interface HoldRequest {
  companyId: string;
  credits: number;
  /** The operation's request id: reserving again with it answers the same hold. */
  key: string;
  userId?: string | null;
  apiKeyId?: string | null;
  /** What the credits are for (chat, research, bulk, ...); the usage record's feature. */
  feature: string;
  model?: string | null;
  /**
   * How long the hold may stay unsettled before the expiry job releases it
   * (default CREDIT_HOLD_TIMEOUT_SECONDS): a research job holds for its
   * whole run.
   */
  timeoutSeconds?: number;
}

/**
 * A caller's own write that belongs with a settlement (a bulk row's result
 * beside its commit): run synchronously in the same transaction, so both
 * happen or neither does.
 */
export type AlongsideWrite = (sql: SyncSql, now: number) => void;

export interface SpentUsage {
  /** Credits actually spent: at most the hold; the rest is returned. */
  credits: number;
  tokens?: number;
  /** The model used, when it differs from the one named at reserve. */
  model?: string;
}

export interface Settlement {
  hold: Hold;
  /** Credits spent. */
  credits: number;
  costMicros: number;
}

export interface PeriodAllocation {
  companyId: string;
  periodKey: string;
  periodStart: Date;
  periodEnd: Date;
  credits: number;
}

export interface CreditGrant {
  credits: number;
  reason: string;
}

interface AccountRow {
  company_id: string;
  monthly: number;
  granted: number;
  purchased: number;
  held: number;
  period_key: string | null;
  period_start: number | null;
  period_end: number | null;
  budget_micros: number | null;
  spend_micros: number;
}

interface HoldRow {
  id: string;
  company_id: string;
  idempotency_key: string;
  credits: number;
  monthly: number;
  granted: number;
  purchased: number;
  period_key: string | null;
  status: HoldStatus;
  user_id: string | null;
  api_key_id: string | null;
  feature: string;
  model: string | null;
  committed_credits: number | null;
  expires_at: number;
}

interface Deltas {
  monthly?: number;
  granted?: number;
  purchased?: number;
  held?: number;
  /** The period's spend, in micro-units of the currency (an account's only; entries do not carry it). */
  spendMicros?: number;
}

const ACCOUNT = 'select * from credit_accounts where company_id = ?';
const HOLD_BY_ID = 'select * from credit_holds where id = ?';

/**
 * The credit ledger: the only way credits come and go. Every write is an
 * entry with an idempotency key (unique per company) and moves the cached
 * balance by the same deltas in the same transaction; replaying a write finds
 * its entry and changes nothing. Writes run synchronously on the write
 * connection (`SqliteWriter`): inside the caller's transaction when there is
 * one (a webhook's event, a company's creation), else in one of their own.
 *
 * Spending order: monthly credits first (they expire), then granted, then
 * purchased (paid for, so kept longest). What a hold gives back returns to
 * the buckets it came from, except monthly credits of a period that has
 * ended: those expire.
 */
export class LedgerService {
  constructor(
    private readonly orm: Orm,
    private readonly writer: SqliteWriter,
    private readonly reads: ReadStore,
    private readonly events: EventBus,
    private readonly audit: AuditService,
    /** Currency micro-units per 1,000 tokens of a model (the catalog's price; 0 when unpriced). */
    private readonly priceOf: (model: string) => number,
    private readonly options: { holdTimeoutSeconds: number; currency: string },
  ) {}

  get currency(): string {
    return this.options.currency;
  }

  /** The balance as committed; zeros for a company without an account. Synchronous: one prepared read. */
  balance(companyId: string): CreditBalance {
    const row = this.reads.get<AccountRow>(ACCOUNT, companyId);
    return row ? toBalance(row) : emptyBalance(companyId);
  }

  /** The balance of the caller's company (any member, any key), or of another existing company for a superadmin. */
  balanceFor(principal: Principal, companyId?: string | null): CreditBalance {
    return this.balance(this.readableCompany(principal, companyId, false));
  }

  /** The balance with its budget and spend, for the company's owners, admins and keys, or a superadmin. */
  budgetFor(principal: Principal, companyId?: string | null): CreditBalance {
    return this.balance(this.readableCompany(principal, companyId, true));
  }

  /**
   * Opens a new company's account with its first period: the current
   * calendar month (UTC) and its plan's monthly credits. Joins the caller's
   * transaction (the company's creation).
   */
  async openAccount(companyId: string, monthlyCredits: number, now = new Date()): Promise<void> {
    const period = calendarPeriod(now);
    await this.allocate({ companyId, credits: monthlyCredits, ...period });
  }

  /**
   * A period's monthly credits, once per company and period. The unused
   * monthly credits of the period before expire (an `expiry` entry) and the
   * period's spend starts again. False when the period was allocated before,
   * or is older than the account's current one (a processor event that
   * arrived late must not roll the period back).
   */
  async allocate(a: PeriodAllocation): Promise<boolean> {
    checkCredits(a.credits, ['credits'], true);
    return this.write(a.companyId, (sql, now) => {
      const key = `allocation:${a.periodKey}`;
      if (this.entryExists(sql, a.companyId, key)) return false;
      const account = this.account(sql, a.companyId, now, true)!;
      if (account.period_start !== null && +a.periodStart < account.period_start) return false;
      // The new period's credits replace the monthly bucket; the rest stays.
      checkCeiling(account.granted + account.purchased + account.held, a.credits, ['credits']);
      if (account.monthly > 0) {
        this.entry(sql, now, a.companyId, 'expiry', `expiry:${account.period_key ?? 'initial'}`, account.monthly, { monthly: -account.monthly }, {
          periodKey: account.period_key,
        });
      }
      this.entry(sql, now, a.companyId, 'allocation', key, a.credits, { monthly: a.credits }, { periodKey: a.periodKey });
      sql.run(
        'update credit_accounts set monthly = ?, period_key = ?, period_start = ?, period_end = ?, spend_micros = 0, updated_at = ? where company_id = ?',
        a.credits,
        a.periodKey,
        +a.periodStart,
        +a.periodEnd,
        now,
        a.companyId,
      );
      return true;
    });
  }

  /**
   * A mid-period upgrade: brings the monthly credits allocated in the current
   * period up to `credits` (the new plan's), adding only what the period's
   * allocations lack, so a downgrade and an upgrade again never allocate a
   * plan's credits twice in one period. Takes nothing back. Once per key;
   * answers the credits added.
   */
  async raiseAllocation(a: { companyId: string; credits: number; key: string }): Promise<number> {
    checkCredits(a.credits, ['credits'], true);
    return this.addOnce(a.companyId, 'allocation', `allocation:${a.key}`, 'monthly', (sql, account) => {
      // Every allocation's key starts with `allocation:` (';' sorts right after ':'): a range of the (company, key) index.
      const allocated = sql.get<{ total: number | null }>(
        "select sum(credits) as total from credit_entries where company_id = ? and idempotency_key >= 'allocation:' and idempotency_key < 'allocation;' and kind = 'allocation' and period_key is ?",
        a.companyId,
        account.period_key,
      )!.total ?? 0;
      return a.credits - allocated;
    });
  }

  /** Purchased credits, exactly once per top-up (`key`), whichever processor event brings them first. */
  async topUp(a: { companyId: string; credits: number; key: string }): Promise<boolean> {
    checkCredits(a.credits, ['credits']);
    return (await this.addOnce(a.companyId, 'topup', `topup:${a.key}`, 'purchased', () => a.credits)) > 0;
  }

  /**
   * Holds credits for one operation, or refuses: 402 `budget_exhausted` once
   * the period's spend reached the budget, 402 `insufficient_credits` when
   * the balance is short. The check and the hold are one transaction on the
   * write lock, so no concurrency takes the balance below zero. Reserving
   * again with the same key answers the first hold.
   */
  async reserve(r: HoldRequest): Promise<Hold> {
    checkCredits(r.credits, ['credits']);
    return this.write(r.companyId, (sql, now) => {
      const existing = sql.get<HoldRow>('select * from credit_holds where company_id = ? and idempotency_key = ?', r.companyId, r.key);
      if (existing) return toHold(existing);
      const account = this.account(sql, r.companyId, now, false);
      if (account?.budget_micros != null && account.spend_micros >= account.budget_micros) {
        throw new AppError(
          'budget_exhausted',
          `The spending budget of ${formatMicros(account.budget_micros)} ${this.currency.toUpperCase()} for this period is spent`,
          { extra: { budget: formatMicros(account.budget_micros), spend: formatMicros(account.spend_micros), currency: this.currency } },
        );
      }
      const available = account ? account.monthly + account.granted + account.purchased : 0;
      if (r.credits > available) {
        throw new AppError('insufficient_credits', `needs ${r.credits} credits; balance ${available}`, {
          extra: { required: r.credits, balance: available },
        });
      }
      const monthly = Math.min(account!.monthly, r.credits);
      const granted = Math.min(account!.granted, r.credits - monthly);
      const purchased = r.credits - monthly - granted;
      // Time-ordered, as entry ids are: each new hold (and its commit entry's key) lands at the end of its indexes
      // instead of on a random page, which a commit would write out.
      const id = uuidv7(now);
      const expiresAt = now + (r.timeoutSeconds ?? this.options.holdTimeoutSeconds) * 1000;
      sql.run(
        `insert into credit_holds (id, company_id, idempotency_key, credits, monthly, granted, purchased, period_key, status,
           user_id, api_key_id, feature, model, created_at, expires_at) values (?, ?, ?, ?, ?, ?, ?, ?, 'held', ?, ?, ?, ?, ?, ?)`,
        id,
        r.companyId,
        r.key,
        r.credits,
        monthly,
        granted,
        purchased,
        account!.period_key,
        r.userId ?? null,
        r.apiKeyId ?? null,
        r.feature,
        r.model ?? null,
        now,
        expiresAt,
      );
      this.move(sql, now, r.companyId, 'hold', `hold:${r.key}`, r.credits, { monthly: -monthly, granted: -granted, purchased: -purchased, held: r.credits }, {
        holdId: id,
        actorId: r.userId ?? null,
      });
      return { id, companyId: r.companyId, credits: r.credits, status: 'held', expiresAt: new Date(expiresAt) };
    });
  }

  /**
   * Spends up to the hold (`usage.credits` above it is capped at the hold)
   * and returns the rest; writes the usage record the reports read, with its
   * currency cost at the model's price. Committing again answers the first
   * settlement; a released hold cannot be committed (409). `alongside`
   * runs in the same transaction, on the first settlement only.
   */
  async commit(holdId: string, usage: SpentUsage, alongside?: AlongsideWrite): Promise<Settlement> {
    checkCredits(usage.credits, ['credits'], true);
    if (usage.tokens !== undefined && (!Number.isInteger(usage.tokens) || usage.tokens < 0)) {
      throw AppError.validation([{ loc: ['tokens'], msg: 'must be an integer >= 0', type: 'int_type' }]);
    }
    return this.write((settlement) => settlement.hold.companyId, (sql, now) => {
      const row = heldRow(sql, holdId);
      if (row.status === 'committed') {
        const spent = row.committed_credits ?? 0;
        const record = sql.get<{ cost_micros?: number }>('select * from usage_records where hold_id = ?', holdId);
        return { hold: toHold(row), credits: spent, costMicros: record?.cost_micros ?? 0 };
      }
      if (row.status !== 'held') throw new AppError('hold_settled', 'This hold was released; its credits cannot be spent');
      const spent = Math.min(usage.credits, row.credits);
      const model = usage.model ?? row.model ?? '';
      const tokens = usage.tokens ?? 0;
      const costMicros = model ? Math.round((tokens * this.priceOf(model)) / 1000) : 0;
      this.settle(sql, now, row, 'commit', spent, costMicros);
      sql.run("update credit_holds set status = 'committed', committed_credits = ?, settled_at = ? where id = ?", spent, now, holdId);
      sql.run(
        `insert into usage_records (id, company_id, user_id, api_key_id, model, feature, credits, tokens, cost_micros, hold_id, created_at)
         values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        uuidv7(now),
        row.company_id,
        row.user_id,
        row.api_key_id,
        model,
        row.feature,
        spent,
        tokens,
        costMicros,
        holdId,
        now,
      );
      alongside?.(sql, now);
      return { hold: { ...toHold(row), status: 'committed' }, credits: spent, costMicros };
    });
  }

  /**
   * Gives a hold's credits back; releasing again is a no-op, a committed
   * hold answers 409. `alongside` runs in the same transaction, on the
   * first release only.
   */
  async release(holdId: string, alongside?: AlongsideWrite): Promise<Hold> {
    return this.write((hold) => hold.companyId, (sql, now) => {
      const row = heldRow(sql, holdId);
      if (row.status === 'released') return toHold(row);
      if (row.status !== 'held') throw new AppError('hold_settled', 'This hold was committed; its credits are spent');
      this.settle(sql, now, row, 'release', 0);
      sql.run("update credit_holds set status = 'released', settled_at = ? where id = ?", now, holdId);
      alongside?.(sql, now);
      return { ...toHold(row), status: 'released' };
    });
  }

  /**
   * Releases every hold of the company still held under a key starting with
   * `prefix` (a cancelled job's rows: `bulk:<job>:`), whichever process took
   * them; a hold committed meanwhile is left as it is. Answers how many.
   */
  async releaseHeldUnder(companyId: string, prefix: string): Promise<number> {
    // A key range rather than LIKE: the (company, key) index answers it.
    const upper = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
    const held = this.reads.all<{ id: string }>(
      "select id from credit_holds where company_id = ? and idempotency_key >= ? and idempotency_key < ? and status = 'held'",
      companyId,
      prefix,
      upper,
    );
    return this.releaseEach(held);
  }

  /** Releases holds past their timeout (their operation crashed or hung); the `billing.hold_expiry` job. */
  async releaseExpiredHolds(now = new Date()): Promise<number> {
    const due = this.reads.all<{ id: string }>("select id from credit_holds where status = 'held' and expires_at <= ? order by expires_at limit 500", +now);
    return this.releaseEach(due);
  }

  /** Releases each hold still held; one committed meanwhile has nothing to release. Answers how many were released. */
  private async releaseEach(holds: readonly { id: string }[]): Promise<number> {
    let released = 0;
    for (const { id } of holds) {
      const hold = await this.release(id).catch((error: unknown) => {
        if (error instanceof AppError && error.code === 'hold_settled') return null;
        throw error;
      });
      if (hold) released++;
    }
    return released;
  }

  /** Credits given by a superadmin (they never expire); audited. `key`: the request's idempotency key or id. */
  async grant(principal: Principal, companyId: string, input: CreditGrant, key: string, meta?: Partial<RequestMeta>): Promise<CreditBalance> {
    return this.adjust(principal, companyId, input, key, 'grant', meta);
  }

  /** Credits taken back by a superadmin: granted first, then monthly, then purchased; never below zero. Audited. */
  async revoke(principal: Principal, companyId: string, input: CreditGrant, key: string, meta?: Partial<RequestMeta>): Promise<CreditBalance> {
    return this.adjust(principal, companyId, input, key, 'revoke', meta);
  }

  /** Sets (or with null removes) a company's spending budget per period; superadmins only. Audited. */
  async setBudget(principal: Principal, companyId: string, budget: string | null | undefined, meta?: Partial<RequestMeta>): Promise<CreditBalance> {
    const caller = requireAuthenticated(principal);
    if (!isSuperadmin(caller)) throw new AppError('forbidden', 'Only a platform superadmin may set a spending budget');
    // Removing a spending limit is said with null, never inferred from a member left out.
    if (budget === undefined) throw AppError.validation([{ loc: ['body', 'budget'], msg: 'required: an amount, or null to remove the budget', type: 'missing' }]);
    const micros = budget === null ? null : parseMoney(budget, ['body', 'budget']);
    return transaction(this.orm, async () => {
      const before = await this.write(companyId, (sql, now) => {
        const account = this.account(sql, companyId, now, false);
        if (!account) throw new AppError('not_found', 'No such company');
        sql.run('update credit_accounts set budget_micros = ?, updated_at = ? where company_id = ?', micros, now, companyId);
        return account.budget_micros;
      });
      await this.audit.record({
        action: 'billing.budget_changed',
        companyId,
        principal: caller,
        meta,
        targetType: 'company',
        targetId: companyId,
        data: { from: before === null ? null : formatMicros(before), to: micros === null ? null : formatMicros(micros), currency: this.currency },
      });
      return this.balanceInTransaction(companyId);
    });
  }

  /** The company's ledger, newest first: its owners and admins (and keys), or a superadmin's view of any company. */
  async transactions(principal: Principal, companyId: string | null | undefined, page = 1, perPage = TRANSACTIONS_PER_PAGE): Promise<Page<CreditEntry>> {
    const company = this.readableCompany(principal, companyId, true);
    checkPage(page, perPage);
    const em = currentEm(this.orm);
    const [items, total] = await em.findAndCount(
      CreditEntry,
      { companyId: company },
      { orderBy: { id: 'desc' }, limit: perPage, offset: (page - 1) * perPage },
    );
    return { items, page, perPage, total };
  }

  /** Live balance changes of a company, for its admins (the `creditsChanged` subscription). */
  changes(principal: Principal, companyId?: string | null): AsyncIterableIterator<{ companyId: string; balance: CreditBalance }> {
    const company = this.readableCompany(principal, companyId, true);
    return this.events.iterate('credits.changed', (event) => event.companyId === company);
  }

  /**
   * Which company a caller may read: its own (members too unless `adminOnly`),
   * or with `companyId` any company that has an account, for a superadmin.
   * Another company's id answers 404 to anyone else.
   */
  readableCompany(principal: Principal, companyId: string | null | undefined, adminOnly: boolean): string {
    const caller = adminOnly ? requireCompanyAdmin(principal) : requireAuthenticated(principal);
    if (!companyId || companyId === caller.companyId) return caller.companyId;
    if (!isSuperadmin(caller) || !this.reads.get(ACCOUNT, companyId)) throw new AppError('not_found', 'No such company');
    return companyId;
  }

  private async adjust(
    principal: Principal,
    companyId: string,
    input: CreditGrant,
    key: string,
    kind: 'grant' | 'revoke',
    meta?: Partial<RequestMeta>,
  ): Promise<CreditBalance> {
    const caller = requireAuthenticated(principal);
    if (!isSuperadmin(caller)) throw new AppError('forbidden', `Only a platform superadmin may ${kind} credits`);
    checkCredits(input.credits, ['body', 'credits']);
    const reason = input.reason.trim();
    if (!reason || textLength(reason) > GRANT_REASON_MAX) {
      throw AppError.validation([{ loc: ['body', 'reason'], msg: `must be 1 to ${GRANT_REASON_MAX} characters`, type: 'string_length' }]);
    }
    const actorId = caller.kind === 'user' ? caller.userId : null;
    return transaction(this.orm, async () => {
      const applied = await this.write(companyId, (sql, now) => {
        const account = this.account(sql, companyId, now, false);
        if (!account) throw new AppError('not_found', 'No such company');
        const entryKey = `${kind}:${key}`;
        const earlier = sql.get<{ credits: number; reason: string | null }>(
          'select credits, reason from credit_entries where company_id = ? and idempotency_key = ?',
          companyId,
          entryKey,
        );
        if (earlier) {
          // A retry changes nothing; the same request id with another body is another request, refused rather than lost.
          if (earlier.credits !== input.credits || earlier.reason !== reason) {
            throw new AppError('conflict', `This request id was used for another ${kind} (${earlier.credits} credits); send the ${kind} with a new X-Request-Id`);
          }
          return null;
        }
        if (kind === 'grant') {
          checkCeiling(account.monthly + account.granted + account.purchased + account.held, input.credits, ['body', 'credits']);
          this.move(sql, now, companyId, 'grant', entryKey, input.credits, { granted: input.credits }, { reason, actorId });
          return { granted: input.credits };
        }
        const available = account.monthly + account.granted + account.purchased;
        if (input.credits > available) {
          throw AppError.validation(
            [{ loc: ['body', 'credits'], msg: `must be at most the balance of ${available}`, type: 'less_than_equal' }],
            `A revoke cannot take the balance below zero: needs ${creditsText(input.credits)}; balance ${available}`,
          );
        }
        const granted = Math.min(account.granted, input.credits);
        const monthly = Math.min(account.monthly, input.credits - granted);
        const purchased = input.credits - granted - monthly;
        this.move(sql, now, companyId, 'revoke', entryKey, input.credits, { granted: -granted, monthly: -monthly, purchased: -purchased }, { reason, actorId });
        return { granted: -granted, monthly: -monthly, purchased: -purchased };
      });
      if (applied) {
        await this.audit.record({
          action: kind === 'grant' ? 'credits.granted' : 'credits.revoked',
          companyId,
          principal: caller,
          meta,
          targetType: 'company',
          targetId: companyId,
          data: { credits: input.credits, reason, buckets: applied },
        });
      }
      return this.balanceInTransaction(companyId);
    });
  }

  /**
   * Credits added to one bucket once per key: as many as `amount` answers
   * from the account (none when it answers 0 or less, or the key was applied
   * before). Answers the credits added.
   */
  private addOnce(
    companyId: string,
    kind: CreditEntryKind,
    key: string,
    bucket: 'monthly' | 'purchased',
    amount: (sql: SyncSql, account: AccountRow) => number,
  ): Promise<number> {
    return this.write(companyId, (sql, now) => {
      if (this.entryExists(sql, companyId, key)) return 0;
      const account = this.account(sql, companyId, now, true)!;
      const credits = amount(sql, account);
      if (credits <= 0) return 0;
      checkCeiling(account.monthly + account.granted + account.purchased + account.held, credits, ['credits']);
      this.move(sql, now, companyId, kind, key, credits, { [bucket]: credits }, { periodKey: bucket === 'monthly' ? account.period_key : null });
      return credits;
    });
  }

  /** The balance as the open transaction sees it (the read connection sees committed data only). */
  private balanceInTransaction(companyId: string): Promise<CreditBalance> {
    return this.writer.write((sql) => {
      const row = sql.get<AccountRow>(ACCOUNT, companyId);
      return row ? toBalance(row) : emptyBalance(companyId);
    });
  }

  /** Returns a hold's credits that `spent` leaves: to the buckets they came from, purchased first; an ended period's monthly part expires. A commit's currency cost goes to the period's spend in the same update. */
  private settle(sql: SyncSql, now: number, hold: HoldRow, kind: 'commit' | 'release', spent: number, spendMicros = 0): void {
    let back = hold.credits - spent;
    const purchased = Math.min(hold.purchased, back);
    back -= purchased;
    const granted = Math.min(hold.granted, back);
    back -= granted;
    const monthly = back;
    this.move(sql, now, hold.company_id, kind, `${kind}:${hold.id}`, kind === 'commit' ? spent : hold.credits, {
      held: -hold.credits,
      purchased,
      granted,
      monthly,
      spendMicros,
    }, { holdId: hold.id, actorId: hold.user_id });
    if (monthly > 0) {
      const account = this.account(sql, hold.company_id, now, false)!;
      if (account.period_key !== hold.period_key) {
        this.move(sql, now, hold.company_id, 'expiry', `expiry:${hold.id}`, monthly, { monthly: -monthly }, { holdId: hold.id, periodKey: hold.period_key });
      }
    }
  }

  /** One entry and the same deltas on the cached balance. */
  private move(
    sql: SyncSql,
    now: number,
    companyId: string,
    kind: CreditEntryKind,
    key: string,
    credits: number,
    d: Deltas,
    extra: { holdId?: string | null; periodKey?: string | null; reason?: string | null; actorId?: string | null } = {},
  ): void {
    this.entry(sql, now, companyId, kind, key, credits, d, extra);
    sql.run(
      `update credit_accounts set monthly = monthly + ?, granted = granted + ?, purchased = purchased + ?, held = held + ?,
         spend_micros = spend_micros + ?, updated_at = ? where company_id = ?`,
      d.monthly ?? 0,
      d.granted ?? 0,
      d.purchased ?? 0,
      d.held ?? 0,
      d.spendMicros ?? 0,
      now,
      companyId,
    );
  }

  private entry(
    sql: SyncSql,
    now: number,
    companyId: string,
    kind: CreditEntryKind,
    key: string,
    credits: number,
    d: Deltas,
    extra: { holdId?: string | null; periodKey?: string | null; reason?: string | null; actorId?: string | null },
  ): void {
    sql.run(
      `insert into credit_entries (id, company_id, kind, idempotency_key, credits, monthly, granted, purchased, held, hold_id, period_key, reason, actor_id, created_at)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      uuidv7(now),
      companyId,
      kind,
      key,
      credits,
      d.monthly ?? 0,
      d.granted ?? 0,
      d.purchased ?? 0,
      d.held ?? 0,
      extra.holdId ?? null,
      extra.periodKey ?? null,
      extra.reason ?? null,
      extra.actorId ?? null,
      now,
    );
  }

  private entryExists(sql: SyncSql, companyId: string, key: string): boolean {
    return sql.get('select 1 from credit_entries where company_id = ? and idempotency_key = ?', companyId, key) !== undefined;
  }

  private account(sql: SyncSql, companyId: string, now: number, create: boolean): AccountRow | undefined {
    if (create) sql.run('insert into credit_accounts (company_id, updated_at) values (?, ?) on conflict (company_id) do nothing', companyId, now);
    return sql.get<AccountRow>(ACCOUNT, companyId);
  }

  /** Runs one ledger write and announces the company's new balance once it commits. */
  private write<T>(company: string | ((result: T) => string), fn: (sql: SyncSql, now: number) => T): Promise<T> {
    return this.writer.write((sql) => {
      const result = fn(sql, Date.now());
      if (sql.changes > 0) {
        const companyId = typeof company === 'string' ? company : company(result);
        const row = sql.get<AccountRow>(ACCOUNT, companyId);
        if (row) {
          const balance = toBalance(row);
          sql.afterCommit(() => this.events.publish('credits.changed', { companyId, balance }));
        }
      }
      return result;
    });
  }
}

/** The calendar month (UTC) around `now`: the period of on-premise mode and of companies without a paid subscription. */
export function calendarPeriod(now: Date): { periodKey: string; periodStart: Date; periodEnd: Date } {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { periodKey: start.toISOString().slice(0, 7), periodStart: start, periodEnd: end };
}

function checkCredits(credits: number, loc: (string | number)[], zeroAllowed = false): void {
  if (!Number.isInteger(credits) || credits < (zeroAllowed ? 0 : 1) || credits > MAX_CREDITS_PER_WRITE) {
    throw AppError.validation([{ loc, msg: `must be an integer from ${zeroAllowed ? 0 : 1} to ${MAX_CREDITS_PER_WRITE}`, type: 'range' }]);
  }
}

/** 422 when adding `credits` to a company's `total` would pass MAX_BALANCE (checked inside the write, so nothing is written). */
function checkCeiling(total: number, credits: number, loc: (string | number)[]): void {
  if (total + credits <= MAX_BALANCE) return;
  throw AppError.validation(
    [{ loc, msg: `must be at most ${Math.max(0, MAX_BALANCE - total)}: a balance may not exceed ${MAX_BALANCE} credits`, type: 'less_than_equal' }],
    `This would take the company's balance to ${total + credits} credits, above the maximum of ${MAX_BALANCE}; nothing was written`,
  );
}

/** "1 credit", "2 credits". */
export function creditsText(n: number): string {
  return `${n} ${n === 1 ? 'credit' : 'credits'}`;
}

function toBalance(row: AccountRow): CreditBalance {
  return {
    companyId: row.company_id,
    monthly: row.monthly,
    granted: row.granted,
    purchased: row.purchased,
    held: row.held,
    available: row.monthly + row.granted + row.purchased,
    periodKey: row.period_key,
    periodStart: row.period_start === null ? null : new Date(row.period_start),
    periodEnd: row.period_end === null ? null : new Date(row.period_end),
    budgetMicros: row.budget_micros,
    spendMicros: row.spend_micros,
  };
}

function emptyBalance(companyId: string): CreditBalance {
  return {
    companyId,
    monthly: 0,
    granted: 0,
    purchased: 0,
    held: 0,
    available: 0,
    periodKey: null,
    periodStart: null,
    periodEnd: null,
    budgetMicros: null,
    spendMicros: 0,
  };
}

function heldRow(sql: SyncSql, holdId: string): HoldRow {
  const row = sql.get<HoldRow>(HOLD_BY_ID, holdId);
  if (!row) throw new AppError('hold_not_found', 'No credit hold with this id');
  return row;
}

function toHold(row: HoldRow): Hold {
  return { id: row.id, companyId: row.company_id, credits: row.credits, status: row.status, expiresAt: new Date(row.expires_at) };
}
