import { Arg, Ctx, FieldResolver, ID, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import { Access } from '../policy/access';
import { canSeeCompany, type GraphQLContext } from '../context';
import { AppError } from '../../src/errors/catalog';
import { formatMicros, microsFromMinor, type BillingApi, type LedgerService, type PlanService } from '../../src/domains/billing';
import {
  CUSTOMERS_PER_PAGE,
  INVOICES_PER_PAGE,
  type BillingSummary,
  type Invoice,
  type PaymentsApi,
  type PlanChange,
  type Subscription,
  type SubscriptionService,
} from '../../src/domains/payments';
import { BillingCompany } from './billing.resolver';
import {
  BillingCustomerPageType,
  BillingOverviewType,
  BillingSubscriptionType,
  BillingSummaryType,
  CreditTopupInput,
  InvoicePageType,
  PaymentMethodType,
  PlanChangeInput,
  PlanChangeType,
  TopupCheckoutType,
  TopupInput,
} from './payments.types';
import { RestArgs, UUID } from '../rest';
import { PAGE_BOUNDS } from '../page';

const SUPERADMIN_COMPANY = "Superadmins only: another company's id (default: the caller's own)";

/** Subscriptions, plan changes, top-ups, invoices and the platform overview: thin over the payments domain. */
@Resolver()
export class PaymentsResolver {
  static from = ({ billing, payments }: { billing: BillingApi; payments: PaymentsApi }) =>
    new PaymentsResolver(payments.subscriptions, billing.plans, billing.ledger);

  constructor(
    private readonly subscriptions: SubscriptionService,
    private readonly plans: PlanService,
    private readonly ledger: LedgerService,
  ) {}

  @Access({ auth: 'authenticated' })
  @RestArgs({ companyId: UUID })
  @Query(() => BillingSummaryType, { description: "The company's plan, subscription, period, credits, budget and spend (owners, admins and keys)" })
  async billingSummary(@Ctx() ctx: GraphQLContext, @Arg('companyId', () => ID, { nullable: true, description: SUPERADMIN_COMPANY }) companyId?: string | null) {
    return this.summaryView(await this.subscriptions.summary(ctx.principal, companyId));
  }

  @Access({ auth: 'authenticated' })
  @Mutation(() => PlanChangeType, {
    description:
      'Moves the company to another plan (owners). Upgrades apply at once and bring the monthly credits allocated in the period up to those of the new plan (not prorated; a period never allocates more than its largest plan gives); downgrades from the next period. With Stripe, a live subscription changes price with proration, and a company without one gets a checkout URL; a plan without a price in STRIPE_PRICES is refused (validation_error), but for a move down to the default plan without a live subscription, which applies at once. The same Idempotency-Key header and plan answer the first change again and change nothing; another plan under it is 409. Audited billing.plan_changed.',
  })
  async changePlan(@Arg('input', () => PlanChangeInput) input: PlanChangeInput, @Ctx() ctx: GraphQLContext) {
    return this.planChangeView(await this.subscriptions.changePlan(ctx.principal, input.planId, ctx.meta));
  }

  @Access({ auth: 'authenticated' })
  @Mutation(() => TopupCheckoutType, {
    description:
      "Buys credits for the caller's company (owners and admins): answers the processor-hosted checkout; the credits arrive once it is paid. The same Idempotency-Key header answers the same checkout. 503 on-premise.",
  })
  topUpCredits(@Arg('input', () => CreditTopupInput) input: CreditTopupInput, @Ctx() ctx: GraphQLContext) {
    return this.subscriptions.topupCheckout(ctx.principal, { credits: input.credits }, ctx.meta);
  }

  @Access({ auth: 'authenticated' })
  @Mutation(() => TopupCheckoutType, {
    description:
      'The administration console\'s top-up: like topUpCredits, with the return URLs of its choice (under PUBLIC_URL or a CORS origin).',
  })
  createTopupCheckout(@Arg('input', () => TopupInput) input: TopupInput, @Ctx() ctx: GraphQLContext) {
    return this.subscriptions.topupCheckout(ctx.principal, input, ctx.meta);
  }

  @Access({ auth: 'authenticated' })
  @Query(() => [PaymentMethodType], { description: "The cards of the company's processor customer (owners, admins and keys). 503 on-premise." })
  paymentMethods(@Ctx() ctx: GraphQLContext) {
    return this.subscriptions.paymentMethods(ctx.principal);
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ ...PAGE_BOUNDS, companyId: UUID })
  @Query(() => InvoicePageType, { description: "The company's invoices, newest first (owners, admins and keys)" })
  async invoices(
    @Ctx() ctx: GraphQLContext,
    @Arg('page', () => Int, { defaultValue: 1 }) page: number,
    @Arg('perPage', () => Int, { defaultValue: INVOICES_PER_PAGE }) perPage: number,
    @Arg('companyId', () => ID, { nullable: true, description: SUPERADMIN_COMPANY }) companyId?: string | null,
  ) {
    const result = await this.subscriptions.invoices(ctx.principal, page, perPage, companyId);
    return { ...result, items: result.items.map(invoiceView) };
  }

  @Access({ auth: 'authenticated' })
  @Query(() => BillingOverviewType, { description: 'Platform-wide billing figures (platform superadmins only)' })
  billingOverview(@Ctx() ctx: GraphQLContext) {
    return this.subscriptions.overview(ctx.principal);
  }

  @Access({ auth: 'authenticated' })
  @RestArgs(PAGE_BOUNDS)
  @Query(() => BillingCustomerPageType, { description: 'Companies with their plan and subscription, by name (platform superadmins only)' })
  billingCustomers(
    @Ctx() ctx: GraphQLContext,
    @Arg('page', () => Int, { defaultValue: 1 }) page: number,
    @Arg('perPage', () => Int, { defaultValue: CUSTOMERS_PER_PAGE }) perPage: number,
  ) {
    return this.subscriptions.customers(ctx.principal, page, perPage);
  }

  private plan(id: string) {
    const plan = this.plans.plan(id);
    if (!plan) throw new AppError('not_found', `Unknown plan ${id}`);
    return plan;
  }

  private summaryView(summary: BillingSummary): BillingSummaryType {
    const { credits } = summary;
    return {
      ...summary,
      plan: this.plan(summary.planId),
      budget: credits.budgetMicros === null ? null : formatMicros(credits.budgetMicros),
      spend: formatMicros(credits.spendMicros),
      currency: this.ledger.currency,
    };
  }

  private planChangeView(change: PlanChange): PlanChangeType {
    return { ...change, plan: this.plan(change.planId) };
  }
}

function invoiceView(invoice: Invoice) {
  return {
    ...invoice,
    amountDue: formatMicros(microsFromMinor(invoice.amountDue, invoice.currency)),
    amountPaid: formatMicros(microsFromMinor(invoice.amountPaid, invoice.currency)),
  };
}

/** Billing's subscription field of Company. */
@Resolver(() => BillingCompany)
export class CompanySubscriptionResolver {
  static from = ({ billing, payments }: { billing: BillingApi; payments: PaymentsApi }) =>
    new CompanySubscriptionResolver(payments.subscriptions, billing.plans);

  constructor(
    private readonly subscriptions: SubscriptionService,
    private readonly plans: PlanService,
  ) {}

  @FieldResolver(() => BillingSubscriptionType, {
    nullable: true,
    description: "The company's paid subscription; null without one. Owners, admins, keys and superadmins, as the billing summary; a member gets null with forbidden",
  })
  async subscription(@Root() company: { id: string }, @Ctx() ctx: GraphQLContext) {
    if (!canSeeCompany(ctx, company.id)) return null;
    const sub: Subscription | null = await this.subscriptions.subscriptionFor(ctx.principal, company.id);
    if (!sub) return null;
    return { ...sub, plan: this.plans.plan(sub.planId) ?? { id: sub.planId, name: sub.planId, monthlyCredits: 0 } };
  }
}
