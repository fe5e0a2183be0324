import { randomUUID } from 'node:crypto';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type Stripe from 'stripe';
import type { Orm } from '../../db/orm';
import { currentEm, transaction } from '../../db/unit-of-work';
import { ConfigError } from '../../env';
import { AppError } from '../../errors/catalog';
import { sha256Hex } from '../../auth/tokens';
import { isSuperadmin, requireAuthenticated, requireCompanyAdmin, requireUser } from '../../auth/policy';
import type { Principal, RequestMeta } from '../../auth/principal';
import { checkPage, type Page } from '../../pagination';
import type { AuditService } from '../audit';
import { calendarPeriod, formatMicros, microsFromMinor, minorFromMicros, parseMoney, type CreditBalance, type LedgerService, type PlanService } from '../billing';
import type { CompanyAdminService, IdentityService } from '../identity';
import type { PaymentsConfig } from './config';
import { Invoice } from './invoice.entity';
import { PlanChangeRecord } from './plan-change.entity';
import { ProcessorEvent } from './processor-event.entity';
import { Subscription } from './subscription.entity';
import { TopupSession } from './topup-session.entity';
import { DEFAULT_PLAN, MAX_AMOUNT_MICROS } from './webhook.service';

export const INVOICES_PER_PAGE = 20;
export const CUSTOMERS_PER_PAGE = 25;
/** A subscription in these states is the processor's to allocate for; any other company follows the calendar month. */
const LIVE = ['active', 'trialing', 'past_due'] as const;

export interface BillingSummary {
  companyId: string;
  planId: string;
  /** The subscription's status; null without a paid subscription (on-premise, or the free plan). */
  status: string | null;
  periodStart: Date | null;
  periodEnd: Date | null;
  cancelAtPeriodEnd: boolean;
  seats: number;
  trialEnd: Date | null;
  credits: CreditBalance;
  processor: 'stripe' | 'none';
}

export interface PlanChange {
  planId: string;
  previousPlanId: string;
  /** now: applied at once; next_period: a downgrade, from the next period; checkout: pay at `checkoutUrl` first. */
  effective: 'now' | 'next_period' | 'checkout';
  creditsAdded: number;
  checkoutUrl: string | null;
}

export interface TopupCheckout {
  sessionId: string;
  url: string;
  credits: number;
  /** Decimal amount in the currency. */
  amount: string;
  currency: string;
  expiresAt: Date;
}

export interface PaymentMethod {
  id: string;
  brand: string;
  last4: string;
  expMonth: number;
  expYear: number;
  isDefault: boolean;
}

export interface BillingOverview {
  companies: number;
  byPlan: { key: string; count: number }[];
  byStatus: { key: string; count: number }[];
  /** Monthly recurring revenue: each live subscription's recurring price times its seats (else its last first-or-renewal invoice), decimal. */
  mrr: string;
  currency: string;
  creditsAllocated30d: number;
  creditsUsed30d: number;
  failedPayments30d: number;
}

export interface BillingCustomer {
  companyId: string;
  name: string;
  planId: string;
  status: string | null;
  seats: number;
  periodEnd: Date | null;
  cancelAtPeriodEnd: boolean;
  creditsAvailable: number;
  customerId: string | null;
}

/**
 * Plans and subscriptions as a company's owners and the platform's operators
 * see them: the summary, plan changes, top-up checkouts, payment methods,
 * invoices, and the platform overview. The processor is called outside any
 * database transaction; what it answers is written in one.
 */
export class SubscriptionService {
  constructor(
    private readonly orm: Orm,
    private readonly stripe: Stripe | null,
    private readonly config: PaymentsConfig,
    private readonly ledger: LedgerService,
    private readonly plans: PlanService,
    private readonly accounts: IdentityService,
    private readonly companies: CompanyAdminService,
    private readonly audit: AuditService,
    private readonly urls: { publicUrl: string; corsOrigins: readonly string[] },
  ) {}

  get mode(): 'stripe' | 'none' {
    return this.stripe ? 'stripe' : 'none';
  }

  async summary(principal: Principal, companyId?: string | null): Promise<BillingSummary> {
    const company = this.ledger.readableCompany(principal, companyId, true);
    return this.summaryOf(company);
  }

  async summaryOf(companyId: string): Promise<BillingSummary> {
    const sub = await currentEm(this.orm).findOne(Subscription, { companyId });
    const credits = this.ledger.balance(companyId);
    return {
      companyId,
      planId: this.accounts.planIdOf(companyId) ?? DEFAULT_PLAN,
      status: sub?.status ?? null,
      ...periodOf(sub, credits),
      cancelAtPeriodEnd: sub?.cancelAtPeriodEnd ?? false,
      seats: sub?.seats ?? 1,
      trialEnd: sub?.trialEnd ?? null,
      credits,
      processor: this.mode,
    };
  }

  /** The company's subscription for its owners, admins and keys, or a superadmin (as the summary): a member gets 403. */
  async subscriptionFor(principal: Principal, companyId: string): Promise<Subscription | null> {
    return this.subscriptionOf(this.ledger.readableCompany(principal, companyId, true));
  }

  /** The company's subscription, if it ever had one. */
  async subscriptionOf(companyId: string): Promise<Subscription | null> {
    return currentEm(this.orm).findOne(Subscription, { companyId });
  }

  /**
   * PlanChangeRequest (owners). Without the processor, or with it for a
   * company without a live subscription on the same plan price, the rules
   * are: an upgrade applies at once and brings the period's monthly credits
   * up to the new plan's (what the period's allocations lack); a downgrade
   * applies from the next period. With a live subscription the processor
   * changes its price, with proration. A paid plan without a subscription
   * answers a checkout URL.
   *
   * Under an Idempotency-Key the change is recorded with its answer: the
   * same key and plan answer it again and change nothing, here or at the
   * processor; the same key with another plan is 409 conflict.
   */
  async changePlan(principal: Principal, planId: string, meta?: Partial<RequestMeta>): Promise<PlanChange> {
    const caller = requireUser(principal);
    if (caller.role !== 'owner') throw new AppError('forbidden', 'Only an owner changes the plan');
    const target = this.plans.plan(planId);
    if (!target) throw AppError.validation([{ loc: ['body', 'plan_id'], msg: 'no such plan', type: 'value_error' }]);
    const key = clientIdempotencyKey(meta);
    const companyId = caller.companyId;
    // Before the current-plan check: a retry finds the company on the plan its first request moved it to.
    const earlier = key ? await this.recordedChange(companyId, key, planId) : null;
    if (earlier) return earlier;
    const previousPlanId = this.accounts.planIdOf(companyId) ?? DEFAULT_PLAN;
    if (previousPlanId === planId) throw new AppError('conflict', `The company is on the ${planId} plan already`);
    const sub = await this.subscriptionOf(companyId);
    const live = sub?.subscriptionId && (LIVE as readonly string[]).includes(sub.status) ? sub : null;

    if (this.stripe) {
      const price = this.config.stripe!.priceByPlan.get(planId);
      // A plan without a price is never given for free. Only a move down to the default plan of a company that pays
      // for none applies at once, as it costs nothing.
      const free = !live && planId === DEFAULT_PLAN && !isUpgrade(this.plans.plan(previousPlanId), target);
      if (!price && !free) throw AppError.validation([{ loc: ['body', 'plan_id'], msg: 'this plan has no price (STRIPE_PRICES)', type: 'value_error' }]);
      if (!live && price) return this.subscriptionCheckout(caller, planId, previousPlanId, price, key);
      if (live && price) {
        const upgrade = isUpgrade(this.plans.plan(previousPlanId), target);
        await this.call(async (stripe) => {
          const current = await stripe.subscriptions.retrieve(live.subscriptionId!);
          const item = current.items.data[0];
          if (!item) throw new AppError('payment_processor_error', 'The subscription has no item to change');
          await stripe.subscriptions.update(
            live.subscriptionId!,
            {
              items: [{ id: item.id, price }],
              // An upgrade's credits arrive at once, so its prorated price is invoiced at once; a downgrade
              // takes effect from the next period and refunds nothing (else an upgrade and a downgrade in one
              // period would leave the credits for a net-zero invoice).
              proration_behavior: upgrade ? 'always_invoice' : 'none',
              metadata: { company_id: companyId, plan_id: planId },
            },
            // A client's X-Request-Id is no promise of the same change: reused, Stripe would replay an
            // earlier update while Atrium applied this one. Without an Idempotency-Key the SDK makes one.
            // One key is one change, whatever its plan: Stripe refuses a key reused with other parameters,
            // so a request racing the first with another plan cannot move the subscription as well.
            idempotencyOption(`plan:${companyId}:${live.subscriptionId}`, key),
          );
        });
      }
    }
    const previous = this.plans.plan(previousPlanId);
    const upgrade = isUpgrade(previous, target);
    return this.recorded(caller.userId, companyId, key, { planId, previousPlanId, effective: upgrade ? 'now' : 'next_period' }, async () => {
      await this.accounts.setPlan(companyId, planId);
      if (live) live.planId = planId;
      let creditsAdded = 0;
      if (upgrade) {
        const { periodKey } = this.ledger.balance(companyId);
        creditsAdded = await this.ledger.raiseAllocation({ companyId, credits: target.monthlyCredits, key: `upgrade:${periodKey ?? 'none'}:${planId}` });
      }
      await this.audit.record({
        action: 'billing.plan_changed',
        companyId,
        principal: caller,
        meta,
        targetType: 'company',
        targetId: companyId,
        data: { from: previousPlanId, to: planId, effective: upgrade ? 'now' : 'next_period', creditsAdded, processor: this.mode },
      });
      return { creditsAdded, checkoutUrl: null };
    });
  }

  /**
   * Runs `apply`, the local side of a plan change, in one transaction with
   * the record of the change under `key` (none without a key). The record is
   * written first: when a request with the same key committed before, found
   * there or by the unique index, its change is answered and `apply` never
   * runs.
   */
  private async recorded(
    requestedBy: string,
    companyId: string,
    key: string | null,
    change: Pick<PlanChange, 'planId' | 'previousPlanId' | 'effective'>,
    apply: () => Promise<Pick<PlanChange, 'creditsAdded' | 'checkoutUrl'>>,
  ): Promise<PlanChange> {
    try {
      return await transaction(this.orm, async (em) => {
        let row: PlanChangeRecord | null = null;
        if (key) {
          // Transactions take turns on the one connection: a request with this key that ran alongside has committed.
          const earlier = await this.recordedChange(companyId, key, change.planId);
          if (earlier) return earlier;
          row = em.create(PlanChangeRecord, { companyId, idempotencyKey: key, ...change, creditsAdded: 0, requestedBy });
          await em.flush();
        }
        const result: PlanChange = { ...change, ...(await apply()) };
        if (row) Object.assign(row, { creditsAdded: result.creditsAdded, checkoutUrl: result.checkoutUrl });
        return result;
      });
    } catch (error) {
      if (!key || !(error instanceof UniqueConstraintViolationException)) throw error;
      // Another writer stored a change under this key between the check and the insert: answer that one.
      const stored = await this.recordedChange(companyId, key, change.planId);
      if (!stored) throw error;
      return stored;
    }
  }

  /** The change recorded under the company's `key`: answered again for the same plan; for another plan, 409 conflict. */
  private async recordedChange(companyId: string, key: string, planId: string): Promise<PlanChange | null> {
    const row = await currentEm(this.orm).findOne(PlanChangeRecord, { companyId, idempotencyKey: key });
    if (!row) return null;
    if (row.planId !== planId) throw new AppError('conflict', 'This Idempotency-Key was used for a different plan change');
    return { planId: row.planId, previousPlanId: row.previousPlanId, effective: row.effective, creditsAdded: row.creditsAdded, checkoutUrl: row.checkoutUrl };
  }

  /**
   * A Checkout Session in payment mode that sells `credits` at the
   * configured price per credit. The same Idempotency-Key answers the same
   * session; the credits arrive only through the webhook once it is paid.
   */
  async topupCheckout(
    principal: Principal,
    input: { credits: number; successUrl?: string | null; cancelUrl?: string | null },
    meta: Partial<RequestMeta>,
  ): Promise<TopupCheckout> {
    const caller = requireUser(principal);
    if (caller.role !== 'owner' && caller.role !== 'admin') throw new AppError('forbidden', 'Owners and admins buy credits');
    const { topupMinCredits: min, topupMaxCredits: max } = this.config;
    if (!Number.isInteger(input.credits) || input.credits < min || input.credits > max) {
      throw AppError.validation([{ loc: ['body', 'credits'], msg: `must be an integer from ${min} to ${max}`, type: 'range' }]);
    }
    const successUrl = this.returnUrl(input.successUrl, 'success_url', '/app/billing?topup=success&session_id={CHECKOUT_SESSION_ID}');
    const cancelUrl = this.returnUrl(input.cancelUrl, 'cancel_url', '/app/billing?topup=cancelled');
    const stripe = this.requireStripe();
    const key = clientIdempotencyKey(meta);
    const em = currentEm(this.orm);
    // One key is one request: other credits or other return URLs under it are 409, whether the first finished or runs alongside.
    const requestHash = sha256Hex(JSON.stringify([input.credits, successUrl, cancelUrl]));
    const sameRequest = (row: TopupSession) => {
      if (row.credits !== input.credits || (row.requestHash !== null && row.requestHash !== requestHash)) {
        throw new AppError('conflict', 'This Idempotency-Key was used for a different top-up');
      }
      return this.topupView(row);
    };
    if (key) {
      const earlier = await em.findOne(TopupSession, { companyId: caller.companyId, idempotencyKey: key });
      if (earlier) return sameRequest(earlier);
    }
    const currency = this.ledger.currency;
    const amount = minorFromMicros(input.credits * parseMoney(this.config.topupPricePerCredit, ['TOPUP_PRICE_PER_CREDIT']), currency);
    // The top-up's own id, in both the session's and its payment intent's metadata: the one ledger key of its credits,
    // whichever event comes first and whatever it carries (a session may complete without a payment_intent).
    // Derived from the Idempotency-Key when there is one, so a retry sends Stripe the same parameters.
    const topupId = key ? uuidFromHash(sha256Hex(`topup:${caller.companyId}:${key}`)) : randomUUID();
    const metadata = { kind: 'topup', company_id: caller.companyId, credits: String(input.credits), topup_id: topupId };
    const session = await this.call(() =>
      stripe.checkout.sessions.create(
        {
          mode: 'payment',
          client_reference_id: caller.companyId,
          customer_email: caller.email,
          line_items: [{ quantity: 1, price_data: { currency, unit_amount: amount, product_data: { name: `${input.credits} Atrium credits` } } }],
          metadata,
          payment_intent_data: { metadata },
          success_url: successUrl,
          cancel_url: cancelUrl,
        },
        // Stripe answers a repeated key with the first session, never a second charge. Without a
        // client key the SDK makes one per call (its own retries reuse it): a client's X-Request-Id
        // is no promise of the same top-up.
        idempotencyOption(`topup:${caller.companyId}`, key),
      ),
    );
    if (!session.url) throw new AppError('payment_processor_error', 'The processor answered a session without a URL');
    const row = em.create(
      TopupSession,
      {
        id: session.id,
        companyId: caller.companyId,
        idempotencyKey: key,
        requestHash,
        credits: input.credits,
        amount,
        currency,
        url: session.url,
        expiresAt: new Date((session.expires_at ?? Math.floor(Date.now() / 1000) + 86400) * 1000),
        requestedBy: caller.userId,
      },
      { persist: false },
    );
    try {
      await em.insert(row);
    } catch (error) {
      if (!(error instanceof UniqueConstraintViolationException)) throw error;
      // A request with the same key ran alongside and stored the session Stripe answered both with.
      const stored =
        (await em.findOne(TopupSession, { id: session.id })) ?? (key ? await em.findOne(TopupSession, { companyId: caller.companyId, idempotencyKey: key }) : null);
      if (!stored) throw error;
      return sameRequest(stored);
    }
    return this.topupView(row);
  }

  async paymentMethods(principal: Principal): Promise<PaymentMethod[]> {
    const caller = requireCompanyAdmin(principal);
    const stripe = this.requireStripe();
    const sub = await this.subscriptionOf(caller.companyId);
    if (!sub) return [];
    return this.call(async () => {
      const customer = await stripe.customers.retrieve(sub.customerId);
      const fallback = 'deleted' in customer && customer.deleted ? null : customer.invoice_settings?.default_payment_method;
      const preferred = typeof fallback === 'string' ? fallback : (fallback?.id ?? null);
      const cards = await stripe.paymentMethods.list({ customer: sub.customerId, type: 'card', limit: 100 });
      return cards.data
        .filter((m) => m.card)
        .map((m) => ({ id: m.id, brand: m.card!.brand, last4: m.card!.last4, expMonth: m.card!.exp_month, expYear: m.card!.exp_year, isDefault: m.id === preferred }));
    });
  }

  async invoices(principal: Principal, page = 1, perPage = INVOICES_PER_PAGE, companyId?: string | null): Promise<Page<Invoice>> {
    const company = this.ledger.readableCompany(principal, companyId, true);
    checkPage(page, perPage);
    const [items, total] = await currentEm(this.orm).findAndCount(
      Invoice,
      { companyId: company },
      { orderBy: { createdAt: 'desc', id: 'desc' }, limit: perPage, offset: (page - 1) * perPage },
    );
    return { items, page, perPage, total };
  }

  async overview(principal: Principal): Promise<BillingOverview> {
    this.requireSuperadmin(principal);
    const em = currentEm(this.orm);
    const companies = await this.accounts.companyPlans();
    const subs = new Map((await em.find(Subscription, {})).map((s) => [s.companyId, s]));
    const byPlan = countBy(companies.map((c) => c.planId));
    const byStatus = countBy(companies.map((c) => subs.get(c.id)?.status ?? 'none'));
    const since = new Date(Date.now() - 30 * 86400_000);
    let mrrMicros = 0;
    for (const sub of subs.values()) {
      if (!(LIVE as readonly string[]).includes(sub.status)) continue;
      // The subscription's recurring price times its seats. Without one reported, its last recurring invoice (first or
      // renewal); never a proration or a manual invoice, which say nothing of what recurs.
      if (sub.unitAmount !== null && sub.priceCurrency) {
        mrrMicros += microsFromMinor(sub.unitAmount * sub.seats, sub.priceCurrency);
        continue;
      }
      const last = await em.findOne(
        Invoice,
        { companyId: sub.companyId, status: 'paid', billingReason: { $in: ['subscription_create', 'subscription_cycle'] } },
        { orderBy: { createdAt: 'desc' } },
      );
      if (last) mrrMicros += microsFromMinor(last.amountPaid, last.currency);
    }
    const [sums] = await em.getConnection().execute<{ allocated: number | null; used: number | null }[]>(
      "select sum(case when kind = 'allocation' then credits end) as allocated, sum(case when kind = 'commit' then credits end) as used from credit_entries where created_at >= ?",
      [+since],
    );
    // Failed payments of companies: an unmatched, stale or ignored event is no failure of a company's payment.
    const failed = await em.count(ProcessorEvent, { type: 'invoice.payment_failed', outcome: 'applied', createdAt: { $gte: since } });
    return {
      companies: companies.length,
      byPlan,
      byStatus,
      // Each subscription's share is within the largest amount; their sum is shown as at most that, never past the pattern.
      mrr: formatMicros(Math.min(mrrMicros, MAX_AMOUNT_MICROS)),
      currency: this.ledger.currency,
      creditsAllocated30d: Number(sums?.allocated ?? 0),
      creditsUsed30d: Number(sums?.used ?? 0),
      failedPayments30d: failed,
    };
  }

  async customers(principal: Principal, page = 1, perPage = CUSTOMERS_PER_PAGE): Promise<Page<BillingCustomer>> {
    const caller = this.requireSuperadmin(principal);
    checkPage(page, perPage);
    const companies = await this.companies.list(caller, { page, perPage });
    const subs = new Map(
      (await currentEm(this.orm).find(Subscription, { companyId: { $in: companies.items.map((c) => c.id) } })).map((s) => [s.companyId, s]),
    );
    const items = companies.items.map((c) => {
      const sub = subs.get(c.id);
      const credits = this.ledger.balance(c.id);
      return {
        companyId: c.id,
        name: c.name,
        planId: c.planId,
        status: sub?.status ?? null,
        seats: sub?.seats ?? 1,
        periodEnd: periodOf(sub, credits).periodEnd,
        cancelAtPeriodEnd: sub?.cancelAtPeriodEnd ?? false,
        creditsAvailable: credits.available,
        customerId: sub?.customerId ?? null,
      };
    });
    return { items, page, perPage, total: companies.total };
  }

  /**
   * A plan STRIPE_PRICES names that the catalog (data/plans.json, seeded
   * before this runs) lacks is a typo that could never apply: no change
   * could move to it and no subscription event would match it. Refused at
   * start, naming it.
   */
  async refuseUnknownPricedPlans(): Promise<void> {
    const priced = [...(this.config.stripe?.priceByPlan.keys() ?? [])];
    if (!priced.length) return;
    const known = (await this.plans.list()).map((plan) => plan.id);
    const unknown = priced.filter((id) => !known.includes(id));
    if (unknown.length) {
      throw new ConfigError(`STRIPE_PRICES names ${unknown.map((id) => `"${id}"`).join(', ')}, not a plan of the catalog (${known.join(', ')})`);
    }
  }

  /**
   * The monthly allocation (on-premise, and every company without a live
   * subscription): the plan's credits for the current calendar month, once
   * per company and month. Companies with a live subscription get theirs
   * from the processor's events.
   */
  async allocateCalendarMonth(now = new Date()): Promise<number> {
    const period = calendarPeriod(now);
    const live = new Set(
      (await currentEm(this.orm).find(Subscription, { status: { $in: [...LIVE] }, subscriptionId: { $ne: null } })).map((s) => s.companyId),
    );
    let allocated = 0;
    for (const company of await this.accounts.companyPlans()) {
      if (live.has(company.id)) continue;
      const credits = this.plans.plan(company.planId)?.monthlyCredits ?? 0;
      if (await this.ledger.allocate({ companyId: company.id, credits, ...period })) allocated++;
    }
    return allocated;
  }

  private async subscriptionCheckout(
    caller: { companyId: string; email: string; userId: string },
    planId: string,
    previousPlanId: string,
    price: string,
    key: string | null,
  ): Promise<PlanChange> {
    const { companyId, email } = caller;
    const stripe = this.requireStripe();
    const sub = await this.subscriptionOf(companyId);
    const metadata = { company_id: companyId, plan_id: planId };
    const session = await this.call(() =>
      stripe.checkout.sessions.create(
        {
          mode: 'subscription',
          client_reference_id: companyId,
          ...(sub ? { customer: sub.customerId } : { customer_email: email }),
          line_items: [{ price, quantity: 1 }],
          metadata,
          subscription_data: { metadata },
          success_url: `${this.urls.publicUrl}/app/billing?subscription=success&session_id={CHECKOUT_SESSION_ID}`,
          cancel_url: `${this.urls.publicUrl}/app/billing?subscription=cancelled`,
        },
        // One key is one change, whatever its plan (see changePlan).
        idempotencyOption(`subscribe:${companyId}`, key),
      ),
    );
    const change: PlanChange = { planId, previousPlanId, effective: 'checkout', creditsAdded: 0, checkoutUrl: session.url ?? null };
    // Nothing changes here before payment; under a key the checkout is recorded, so a retry answers this URL.
    return key ? this.recorded(caller.userId, companyId, key, change, async () => change) : change;
  }

  private topupView(row: TopupSession): TopupCheckout {
    return {
      sessionId: row.id,
      url: row.url,
      credits: row.credits,
      amount: formatMicros(microsFromMinor(row.amount, row.currency)),
      currency: row.currency,
      expiresAt: row.expiresAt,
    };
  }

  /** A return URL of the checkout: under PUBLIC_URL or a CORS origin, never elsewhere (no open redirect). */
  private returnUrl(given: string | null | undefined, field: string, fallbackPath: string): string {
    if (!given) return `${this.urls.publicUrl}${fallbackPath}`;
    let url: URL | null = null;
    try {
      url = new URL(given);
    } catch {
      url = null;
    }
    const allowed = [this.urls.publicUrl, ...this.urls.corsOrigins].map((o) => new URL(o).origin);
    if (!url || !allowed.includes(url.origin)) {
      throw AppError.validation([{ loc: ['body', field], msg: 'must be a URL under PUBLIC_URL or one of CORS_ORIGINS', type: 'value_error.url' }]);
    }
    // The URL that was checked, as the WHATWG parser wrote it (another parser down the chain must not read
    // the raw text differently), with the processor's {CHECKOUT_SESSION_ID} placeholder put back.
    return url.href.replaceAll('%7BCHECKOUT_SESSION_ID%7D', '{CHECKOUT_SESSION_ID}');
  }

  private requireStripe(): Stripe {
    if (!this.stripe) throw new AppError('payment_processor_not_configured', 'This server has no payment processor (on-premise mode)');
    return this.stripe;
  }

  private requireSuperadmin(principal: Principal) {
    const caller = requireAuthenticated(principal);
    if (!isSuperadmin(caller)) throw new AppError('forbidden', 'Platform superadmins only');
    return caller;
  }

  /** A processor call; its failures become a 502 problem (an AppError passes as it is). */
  private async call<T>(fn: (stripe: Stripe) => Promise<T>): Promise<T> {
    try {
      return await fn(this.requireStripe());
    } catch (error) {
      if (error instanceof AppError) throw error;
      // Requests with one Idempotency-Key and other parameters, side by side: the first stored its
      // answer, and Stripe refuses the other rather than answering it with the first (not its failure).
      if ((error as { type?: string }).type === 'StripeIdempotencyError') {
        throw new AppError('conflict', 'This Idempotency-Key was used for a different request', { cause: error });
      }
      throw new AppError('payment_processor_error', `The payment processor refused the request: ${(error as Error).message}`, { cause: error });
    }
  }
}

/**
 * The company's current period, the one decision the summary and the customer
 * list share: a live subscription's own period; without one, the ledger's
 * (the calendar month once the monthly job has run), never an ended
 * subscription's last period.
 */
function periodOf(sub: Subscription | null | undefined, credits: CreditBalance): { periodStart: Date | null; periodEnd: Date | null } {
  const live = sub && (LIVE as readonly string[]).includes(sub.status);
  return {
    periodStart: live ? (sub.periodStart ?? credits.periodStart) : credits.periodStart,
    periodEnd: live ? (sub.periodEnd ?? credits.periodEnd) : credits.periodEnd,
  };
}

function countBy(keys: string[]): { key: string; count: number }[] {
  const counts = new Map<string, number>();
  for (const key of keys) counts.set(key, (counts.get(key) ?? 0) + 1);
  return [...counts].map(([key, count]) => ({ key, count })).sort((a, b) => a.key.localeCompare(b.key));
}

/** An upgrade gives more monthly credits (any plan from none is one): its credits arrive at once. */
function isUpgrade(previous: { monthlyCredits: number } | null | undefined, target: { monthlyCredits: number }): boolean {
  return !previous || target.monthlyCredits > previous.monthlyCredits;
}

/** A UUID made of a SHA-256 hex digest: the same digest gives the same id. */
function uuidFromHash(hex: string): string {
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** The client's Idempotency-Key, or null without the header; one the header gave unreadable ('') is 422. */
function clientIdempotencyKey(meta: Partial<RequestMeta> | undefined): string | null {
  if (meta?.idempotencyKey === '') {
    throw AppError.validation([{ loc: ['header', 'Idempotency-Key'], msg: 'must be 1 to 255 visible ASCII characters', type: 'value_error' }]);
  }
  return meta?.idempotencyKey ?? null;
}

/**
 * Stripe's idempotency key for a call made on behalf of a client's
 * Idempotency-Key (hashed: Stripe takes at most 255 characters); without
 * one, none, and the SDK makes its own per call (its retries reuse it).
 */
function idempotencyOption(scope: string, clientKey: string | null | undefined): { idempotencyKey?: string } {
  return clientKey ? { idempotencyKey: `${scope}:${sha256Hex(clientKey)}` } : {};
}
