import { Budgets } from '../../rate-limit/budgets';
import { requireModuleCaller, requireModuleKey } from '../../auth/policy';
import type { ModuleScope, Principal } from '../../auth/principal';
import type { BillingApi } from '../billing';
import type { IdentityApi } from '../identity';
import type { PaymentsApi } from '../payments';

const DAY_MS = 86_400_000;

export interface KeyVerification {
  valid: boolean;
  username: string;
  plan: string;
  scopes: ModuleScope[];
  authMethod: string;
}

export interface ModuleUsage {
  username: string;
  plan: string;
  creditsRemaining: number;
  creditsMonthly: number;
  /** Whole days left of a trial subscription; null without a trial. */
  trialDaysLeft: number | null;
}

/** What a key or a user may ask about their own account on the AI modules API: the key, the plan, the credits, the daily limit. */
export class ModuleAccountService {
  constructor(
    private readonly identity: IdentityApi,
    private readonly billing: BillingApi,
    private readonly payments: PaymentsApi,
    private readonly budgets: Budgets,
  ) {}

  /**
   * Counts a request of an AI-modules key (`units`: the root fields of a
   * GraphQL operation, each a request's worth) against its plan's daily
   * limit per account, reset at midnight UTC; 429 with Retry-After once spent.
   */
  admitDaily(principal: Principal, units = 1): void {
    if (principal.kind !== 'module_key') return;
    const limit = this.plan(principal.companyId).dailyRequests;
    if (limit <= 0) return;
    const hit = this.budgets.daily(`daily:${principal.userId}`, limit, units);
    if (!hit.allowed) throw Budgets.refusal(hit);
  }

  verify(principal: Principal): KeyVerification {
    const key = requireModuleKey(principal);
    return { valid: true, username: key.email, plan: this.plan(key.companyId).id, scopes: [...key.scopes], authMethod: 'api_key' };
  }

  async usage(principal: Principal): Promise<ModuleUsage> {
    // Any key may read its own account's usage, whatever its scopes.
    const caller = principal.kind === 'module_key' ? principal : requireModuleCaller(principal, 'chat');
    const plan = this.plan(caller.companyId);
    const balance = this.billing.ledger.balance(caller.companyId);
    const summary = await this.payments.subscriptions.summaryOf(caller.companyId);
    const trialDaysLeft =
      summary.status === 'trialing' && summary.trialEnd ? Math.max(0, Math.ceil((summary.trialEnd.getTime() - Date.now()) / DAY_MS)) : null;
    return {
      username: caller.email,
      plan: plan.id,
      creditsRemaining: balance.available,
      creditsMonthly: plan.monthlyCredits,
      trialDaysLeft,
    };
  }

  private plan(companyId: string): { id: string; monthlyCredits: number; dailyRequests: number } {
    const planId = this.identity.accounts.planIdOf(companyId) ?? 'starter';
    return this.billing.plans.plan(planId) ?? { id: planId, monthlyCredits: 0, dailyRequests: 0 };
  }
}
