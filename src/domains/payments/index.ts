import { defineDomain, type ApiOf } from '../../kernel/domain';
import { auditDomain } from '../audit';
import { billingDomain } from '../billing';
import { identityDomain } from '../identity';
import { loadPaymentsConfig } from './config';
import { paymentsErrors } from './errors';
import { Invoice } from './invoice.entity';
import { paymentsMigrations } from './migrations';
import { PlanChangeRecord } from './plan-change.entity';
import { ProcessorEvent } from './processor-event.entity';
import { createStripe } from './stripe-client';
import { Subscription } from './subscription.entity';
import { SubscriptionService } from './subscription.service';
import { TopupSession } from './topup-session.entity';
import { WebhookService } from './webhook.service';

export { Invoice } from './invoice.entity';
export { Subscription, subscriptionStatuses, type SubscriptionStatus } from './subscription.entity';
export {
  SubscriptionService,
  CUSTOMERS_PER_PAGE,
  INVOICES_PER_PAGE,
  type BillingCustomer,
  type BillingOverview,
  type BillingSummary,
  type PaymentMethod,
  type PlanChange,
  type TopupCheckout,
} from './subscription.service';
export { WebhookService, DEFAULT_PLAN, MAX_SEATS, SIGNATURE_TOLERANCE_SECONDS } from './webhook.service';
export { type PaymentsConfig, loadPaymentsConfig } from './config';

/** Gives every company without a live subscription its calendar month's credits. */
export const MONTHLY_ALLOCATION = 'payments.monthly_allocation';
/** Hourly: the 1st's allocation lands within an hour of midnight UTC, and a server started mid-month catches up. */
export const MONTHLY_ALLOCATION_SECONDS = 3600;

/**
 * The payment processor's side of billing: subscriptions and their periods,
 * the Stripe webhook, top-up checkouts, plan changes, invoices, billing mail
 * and the platform's billing overview. Without Stripe settings it runs
 * on-premise: calendar-month allocations, plan changes at once.
 */
export const paymentsDomain = defineDomain({
  name: 'payments',
  requires: { audit: auditDomain, billing: billingDomain, identity: identityDomain },
  entities: [Subscription, Invoice, ProcessorEvent, TopupSession, PlanChangeRecord],
  migrations: paymentsMigrations,
  errors: paymentsErrors,
  config: (env) => ({ payments: loadPaymentsConfig(env) }),
  create: ({ kernel, config, deps }) => {
    const stripe = config.payments.stripe ? createStripe(config.payments.stripe) : null;
    const { ledger, plans } = deps.billing;
    return {
      config: config.payments,
      subscriptions: new SubscriptionService(kernel.orm, stripe, config.payments, ledger, plans, deps.identity.accounts, deps.identity.companies, deps.audit.log, {
        publicUrl: config.publicUrl,
        corsOrigins: config.corsOrigins,
      }),
      webhook: new WebhookService(kernel.orm, stripe, config.payments.stripe, ledger, plans, deps.identity.accounts, kernel.mailer, kernel.log, config.payments),
    };
  },
  seed: async (payments) => {
    await payments.subscriptions.refuseUnknownPricedPlans();
    // Existing companies get the current month's credits on the first start after an upgrade, not an hour later (idempotent).
    await payments.subscriptions.allocateCalendarMonth();
  },
  jobs: (payments) => ({
    [MONTHLY_ALLOCATION]: async () => void (await payments.subscriptions.allocateCalendarMonth()),
  }),
  schedules: () => [{ kind: MONTHLY_ALLOCATION, everySeconds: MONTHLY_ALLOCATION_SECONDS }],
});

export type PaymentsApi = ApiOf<typeof paymentsDomain>;
