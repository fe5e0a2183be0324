import { Arg, Ctx, FieldResolver, ID, Int, Mutation, Query, Resolver, Root, Subscription } from 'type-graphql';
import { Access } from '../policy/access';
import { formatMicros, TRANSACTIONS_PER_PAGE, type BillingApi, type CreditBalance, type LedgerService } from '../../src/domains/billing';
import type { GraphQLContext } from '../context';
import { BillingCompany, BillingCompanyResolver } from './billing.resolver';
import { PlanType } from './plan.types';
import { CreditBalanceType, CreditGrantInput, CreditTransactionPageType, SpendingBudgetInput, SpendingBudgetType } from './credits.types';
import { RestArgs, UUID } from '../rest';
import { PAGE_BOUNDS } from '../page';
import { SharedResults } from '../shared-results';

const SUPERADMIN_COMPANY = "Superadmins only: another company's id (default: the caller's own)";

function budgetView(balance: CreditBalance, currency: string): SpendingBudgetType {
  return {
    budget: balance.budgetMicros === null ? null : formatMicros(balance.budgetMicros),
    spend: formatMicros(balance.spendMicros),
    currency,
    periodEnd: balance.periodEnd,
  };
}

/** Credits, the ledger and spending budgets: thin over the billing domain's LedgerService. */
@Resolver(() => CreditBalanceType)
export class CreditsResolver {
  static from = ({ billing }: { billing: BillingApi }) => new CreditsResolver(billing.ledger);

  constructor(private readonly ledger: LedgerService) {}

  @Access({ auth: 'authenticated' })
  @RestArgs({ companyId: UUID })
  @Query(() => CreditBalanceType, { description: "The caller's company credit balance (any member or key); superadmins may name another company" })
  credits(@Ctx() ctx: GraphQLContext, @Arg('companyId', () => ID, { nullable: true, description: SUPERADMIN_COMPANY }) companyId?: string | null) {
    return this.ledger.balanceFor(ctx.principal, companyId);
  }

  // The context serves only the read (its loaders): creditsChanged shares one result among its subscribers.
  @FieldResolver(() => PlanType)
  plan(@Root() balance: CreditBalance, @Ctx() ctx: GraphQLContext) {
    return ctx.container.get(BillingCompanyResolver).plan({ id: balance.companyId }, ctx);
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ ...PAGE_BOUNDS, companyId: UUID })
  @Query(() => CreditTransactionPageType, { description: "The company's credit ledger, newest first (owners, admins and keys; superadmins may name another company)" })
  creditTransactions(
    @Ctx() ctx: GraphQLContext,
    @Arg('page', () => Int, { defaultValue: 1 }) page: number,
    @Arg('perPage', () => Int, { defaultValue: TRANSACTIONS_PER_PAGE }) perPage: number,
    @Arg('companyId', () => ID, { nullable: true, description: SUPERADMIN_COMPANY }) companyId?: string | null,
  ) {
    return this.ledger.transactions(ctx.principal, companyId, page, perPage);
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ companyId: UUID })
  @Mutation(() => CreditBalanceType, {
    description:
      'Grants credits to a company (platform superadmins only); they never expire. Idempotent per request id: a retry with the same X-Request-Id grants once. Audited credits.granted.',
  })
  grantCredits(@Arg('companyId', () => ID) companyId: string, @Arg('input', () => CreditGrantInput) input: CreditGrantInput, @Ctx() ctx: GraphQLContext) {
    return this.ledger.grant(ctx.principal, companyId, input, ctx.meta.requestId, ctx.meta);
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ companyId: UUID })
  @Mutation(() => CreditBalanceType, {
    description:
      'Takes credits back from a company (platform superadmins only): granted first, then monthly, then purchased; never below zero (422). Idempotent per request id. Audited credits.revoked.',
  })
  revokeCredits(@Arg('companyId', () => ID) companyId: string, @Arg('input', () => CreditGrantInput) input: CreditGrantInput, @Ctx() ctx: GraphQLContext) {
    return this.ledger.revoke(ctx.principal, companyId, input, ctx.meta.requestId, ctx.meta);
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ companyId: UUID })
  @Query(() => SpendingBudgetType, { description: "The company's spending budget and this period's spend (owners, admins and keys; superadmins may name another company)" })
  spendingBudget(@Ctx() ctx: GraphQLContext, @Arg('companyId', () => ID, { nullable: true, description: SUPERADMIN_COMPANY }) companyId?: string | null) {
    return budgetView(this.ledger.budgetFor(ctx.principal, companyId), this.ledger.currency);
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ companyId: UUID })
  @Mutation(() => SpendingBudgetType, {
    description: "Sets or (with null) removes a company's spending budget per period (platform superadmins only). Audited billing.budget_changed.",
  })
  async setSpendingBudget(
    @Arg('companyId', () => ID) companyId: string,
    @Arg('input', () => SpendingBudgetInput) input: SpendingBudgetInput,
    @Ctx() ctx: GraphQLContext,
  ) {
    return budgetView(await this.ledger.setBudget(ctx.principal, companyId, input.budget, ctx.meta), this.ledger.currency);
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ companyId: UUID })
  @SharedResults()
  @Subscription(() => CreditBalanceType, {
    description: "The company's balance each time it changes, live (owners, admins and keys; superadmins may name another company)",
    subscribe: ({ args, context }) => {
      const ctx = context as GraphQLContext;
      return ctx.container.get(CreditsResolver).ledger.changes(ctx.principal, (args as { companyId?: string | null }).companyId);
    },
  })
  creditsChanged(
    @Root() event: { balance: CreditBalance },
    @Arg('companyId', () => ID, { nullable: true, description: SUPERADMIN_COMPANY }) _companyId?: string | null,
  ) {
    return event.balance;
  }
}

/** Billing's fields of Company: its credits and its spending budget. */
@Resolver(() => BillingCompany)
export class CompanyCreditsResolver {
  static from = ({ billing }: { billing: BillingApi }) => new CompanyCreditsResolver(billing.ledger);

  constructor(private readonly ledger: LedgerService) {}

  @FieldResolver(() => CreditBalanceType, { description: "The company's credit balance" })
  credits(@Root() company: { id: string }, @Ctx() ctx: GraphQLContext) {
    return this.ledger.balanceFor(ctx.principal, company.id);
  }

  @FieldResolver(() => SpendingBudgetType, { description: "The company's spending budget and this period's spend (owners, admins, keys and superadmins)" })
  budget(@Root() company: { id: string }, @Ctx() ctx: GraphQLContext) {
    return budgetView(this.ledger.budgetFor(ctx.principal, company.id), this.ledger.currency);
  }
}
