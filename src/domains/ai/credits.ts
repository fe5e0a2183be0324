import { randomUUID } from 'node:crypto';
import { AppError, isAppError } from '../../errors/catalog';
import type { ModuleCaller } from '../../auth/policy';
import { MAX_CREDITS_PER_WRITE, type AlongsideWrite, type BillingApi, type Hold } from '../billing';
import type { ModelView } from '../catalog';

/** Credits for `tokens` of a model: tokens ÷ 1,000 × its credit cost, rounded up. */
export function creditsFor(tokens: number, model: Pick<ModelView, 'creditCost'>): number {
  return Math.ceil((tokens * model.creditCost) / 1000);
}

/**
 * How the AI modules spend credits: only through billing's reserve, commit
 * and release. A hold is taken for the most a call can cost before the call,
 * and settled at what it used. Billing's 402s pass through as they are: the
 * AI modules API spells them its own way (modulesApiSpelling), the platform
 * API and GraphQL keep billing's codes.
 */
export class ModuleCredits {
  constructor(private readonly billing: BillingApi) {}

  /** `caller`: who spends (a module caller, or a job's owner, whose user is null for a company key). */
  async reserve(
    caller: { companyId: string; userId: string | null; keyId: string | null },
    input: { credits: number; key: string; feature: string; model?: string | null; timeoutSeconds?: number },
  ): Promise<Hold> {
    if (input.credits > MAX_CREDITS_PER_WRITE) {
      // A model priced past anything a ledger write may move: no balance covers the hold (the ledger would call the amount invalid).
      const balance = this.billing.ledger.balance(caller.companyId).available;
      throw new AppError('insufficient_credits', `needs ${input.credits} credits; balance ${balance}`, { extra: { required: input.credits, balance } });
    }
    return this.billing.ledger.reserve({
      companyId: caller.companyId,
      credits: Math.max(1, input.credits),
      key: input.key,
      userId: caller.userId,
      apiKeyId: caller.keyId,
      feature: input.feature,
      model: input.model ?? null,
      ...(input.timeoutSeconds ? { timeoutSeconds: input.timeoutSeconds } : {}),
    });
  }

  /** Spends what the call used (at most the hold) and returns the rest; `alongside` commits in the same transaction. */
  async commit(hold: Pick<Hold, 'id'>, usage: { credits: number; tokens: number; model?: string }, alongside?: AlongsideWrite): Promise<number> {
    const settlement = await this.billing.ledger.commit(hold.id, usage, alongside);
    return settlement.credits;
  }

  /** Returns the whole hold, with a write of the caller's in the same transaction; failures are the caller's to handle. */
  async releaseWith(hold: Pick<Hold, 'id'>, alongside?: AlongsideWrite): Promise<void> {
    await this.billing.ledger.release(hold.id, alongside);
  }

  /** Returns every hold of the company still held under keys starting with `prefix` (a cancelled job's). */
  async releaseHeldUnder(companyId: string, prefix: string): Promise<number> {
    return this.billing.ledger.releaseHeldUnder(companyId, prefix);
  }

  /** Returns the whole hold: the call failed and nothing is spent. Never masks the failure that led here. */
  async release(hold: Hold): Promise<void> {
    await this.billing.ledger.release(hold.id).catch(() => undefined);
  }

  /**
   * Runs `work` under a hold of `credits`: commits what it reports used, or
   * releases the whole hold when it throws (a partial use it reports on the
   * way out, a client that went away, is committed instead). A commit that
   * fails after the work succeeded releases the hold too and is the
   * server's failure (500, logged by the host), never the caller's 422.
   *
   * `hold.key` names the request (`chat:<request id>`); each call adds its
   * own nonce to it. A request id may come from the client (X-Request-Id),
   * and under a bare request-id key a second call with the same id would
   * replay the first, settled hold: its provider call would run and be
   * charged nothing. Each call is held and charged, however it is named.
   */
  async spend<T>(
    caller: ModuleCaller,
    hold: { credits: number; key: string; feature: string; model: ModelView },
    work: (held: Hold) => Promise<{ value: T; tokens: number; credits: number }>,
    /** A write of the caller's that belongs with a successful call (a chat's history): made in the commit's transaction, so one never stands without the other. */
    alongside?: (value: T) => AlongsideWrite,
  ): Promise<{ value: T; creditsUsed: number; tokens: number }> {
    const held = await this.reserve(caller, { credits: hold.credits, key: `${hold.key}:${randomUUID()}`, feature: hold.feature, model: hold.model.id });
    let outcome: { value: T; tokens: number; credits: number };
    try {
      outcome = await work(held);
    } catch (error) {
      const used = (error as { usedTokens?: number }).usedTokens;
      if (used) await this.commit(held, { credits: Math.min(creditsFor(used, hold.model), held.credits), tokens: used, model: hold.model.id }).catch(() => this.release(held));
      else await this.release(held);
      throw error;
    }
    let creditsUsed: number;
    try {
      // Never more than the hold (the ledger caps it too, but refuses a count past any write before it would).
      creditsUsed = await this.commit(held, { credits: Math.min(outcome.credits, held.credits), tokens: outcome.tokens, model: hold.model.id }, alongside?.(outcome.value));
    } catch (error) {
      // The hold goes back now rather than at its expiry (CREDIT_HOLD_TIMEOUT_SECONDS), and nothing is charged.
      await this.release(held);
      throw new AppError('internal_error', 'The call succeeded but its credits could not be settled, so nothing was charged; try again', { cause: error });
    }
    return { value: outcome.value, creditsUsed, tokens: outcome.tokens };
  }
}

/** Billing's 402s as the AI modules API (ai-modules-api.md) spells them, with the same detail and members; any other error as it is. */
export function modulesApiSpelling(error: unknown): unknown {
  if (!isAppError(error)) return error;
  if (error.code === 'insufficient_credits') return new AppError('CREDIT_EXHAUSTED', error.message, { extra: error.extra, cause: error });
  if (error.code === 'budget_exhausted') return new AppError('BUDGET_EXHAUSTED', error.message, { extra: error.extra, cause: error });
  return error;
}
