import type { FastifyReply, FastifyRequest } from 'fastify';
import { body, type RestRoute } from '../route';
import { pageArgs } from '../pagination';
import { actingCompany } from '../schemas';
import { CUSTOMERS_PER_PAGE, INVOICES_PER_PAGE } from '../../src/domains/payments';

const ADMINS = 'Owners, admins and API keys of the company; a member gets 403.';
const SUPERADMIN = 'Platform superadmins only; anyone else gets 403.';
const ON_PREMISE = 'Without a payment processor (on-premise mode) it answers 503 payment_processor_not_configured.';
const IDEMPOTENT =
  'Send an Idempotency-Key header (1 to 255 visible ASCII characters) to make a retry safe: the same key answers the same ' +
  'checkout and never a second charge; the same key with other credits is 409. Without one, each request opens its own checkout.';

async function webhook(request: FastifyRequest, reply: FastifyReply) {
  const result = await request.server.domains.payments.webhook.receive(request.rawBody, request.headers['stripe-signature']);
  return reply.code(200).send(result);
}

/** Plans and subscriptions, top-ups, invoices, payment methods, the platform overview and the processor's webhook. */
export const billingRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/billing/webhook',
    operationId: 'receiveBillingWebhook',
    summary: 'Payment processor events',
    description:
      "Stripe's events, public but signed: the Stripe-Signature header must match the raw body under STRIPE_WEBHOOK_SECRET " +
      'and be at most 300 seconds old, else 400 webhook_signature_invalid and no effect. A signed body without an event\'s ' +
      'id, type, creation time and data object answers 400 webhook_event_invalid, also with no effect. Each event id is applied once (a ' +
      'duplicate answers 200 and changes nothing), from its own payload, in one transaction with its ledger entries and ' +
      'mail; per subscription an event older than one already applied changes nothing. Handled: checkout.session.completed, ' +
      'invoice.payment_succeeded, invoice.payment_failed, customer.subscription.updated, customer.subscription.deleted, ' +
      'customer.subscription.trial_will_end, payment_intent.succeeded, checkout.session.async_payment_succeeded and ' +
      "checkout.session.async_payment_failed; any other type answers 200. A subscription checkout completed unpaid (a delayed " +
      'payment method) activates nothing until its payment succeeds. Events of another subscription than the company\'s live one ' +
      'change nothing, and a period never moves backwards. A top-up is credited only when its metadata.credits is a decimal ' +
      'integer within TOPUP_MIN_CREDITS to TOPUP_MAX_CREDITS, matches the checkout Atrium opened, and the amount and currency ' +
      'paid are its price at TOPUP_PRICE_PER_CREDIT, and when it keeps the balance within 2,147,483,647 credits; otherwise ' +
      'the event is recorded as failed, logged, and answered 200 (a retry could not change it). ' +
      ON_PREMISE,
    tag: 'Billing',
    auth: 'public',
    status: 200,
    problems: {
      400: 'webhook_signature_invalid: missing, stale or wrong signature; webhook_event_invalid: a signed body that is not a readable event',
      503: 'payment_processor_not_configured (on-premise mode)',
    },
    // No type here: the body is read only once the signature matched (a signed non-object is webhook_event_invalid).
    request: { body: { description: 'A Stripe event object (checked only after its signature)' } },
    response: {
      type: 'object',
      required: ['received', 'duplicate'],
      properties: { received: { type: 'boolean', const: true }, duplicate: { type: 'boolean', description: 'The event id was applied before' } },
    },
    raw: webhook,
  },
  {
    method: 'POST',
    path: '/billing/topup',
    operationId: 'topUpCredits',
    summary: 'Buy credits',
    description:
      "Body: credits (TOPUP_MIN_CREDITS to TOPUP_MAX_CREDITS, default 100 to 1,000,000). Creates the processor's hosted " +
      'checkout for the caller\'s company at TOPUP_PRICE_PER_CREDIT and answers its url; the purchased credits arrive ' +
      'once it is paid (through the webhook) and never expire. Returns to PUBLIC_URL/app/billing. Owners and admins (signed-in ' +
      `users); API keys and members get 403. ${IDEMPOTENT} ${ON_PREMISE}`,
    tag: 'Billing',
    status: 200,
    problems: { 403: 'forbidden: not an owner or admin, or an API key', 409: 'The Idempotency-Key was used with other credits', 502: 'The processor refused', 503: 'payment_processor_not_configured: on-premise mode' },
    field: 'topUpCredits',
    args: { input: body() },
  },
  {
    method: 'POST',
    path: '/admin/billing/topup/checkout',
    operationId: 'createTopupCheckout',
    summary: 'Top-up checkout (console)',
    description:
      'TopupRequest: credits, and optional success_url and cancel_url under PUBLIC_URL or a CORS_ORIGINS origin (422 ' +
      'elsewhere; `{CHECKOUT_SESSION_ID}` in success_url is filled in). The same checkout as POST /billing/topup, for an ' +
      `administration console that returns to its own pages. ${IDEMPOTENT} ${ON_PREMISE}`,
    tag: 'Billing',
    status: 200,
    problems: { 403: 'forbidden: not an owner or admin, or an API key', 409: 'The Idempotency-Key was used with other credits', 502: 'The processor refused', 503: 'payment_processor_not_configured: on-premise mode' },
    field: 'createTopupCheckout',
    args: { input: body() },
    bodyHints: { title: 'TopupRequest' },
  },
  {
    method: 'POST',
    path: '/admin/billing/plan/change',
    operationId: 'changePlan',
    summary: 'Change the plan',
    description:
      'PlanChangeRequest: plan_id. Owners only. An upgrade applies at once and brings the monthly credits allocated in the period ' +
      "up to the new plan's (not prorated by what is left of the period; a period never allocates more than its largest plan's), " +
      'credits_added saying how many; a downgrade applies ' +
      'from the next period and refunds nothing. With Stripe, a live subscription changes its price, an upgrade invoiced at once ' +
      "with Stripe's proration of the price difference; a company without one gets effective=checkout and a checkout_url to " +
      'subscribe; a plan without a price in STRIPE_PRICES is 422 (only a move down to the default plan without a live ' +
      'subscription, which costs nothing, applies at once). On-premise the change ' +
      'is immediate. The current plan again is 409; an unknown plan 422. Audited billing.plan_changed. Send an Idempotency-Key ' +
      'header (1 to 255 visible ASCII characters) to make a retry safe: the same key and plan_id answer the first change again, ' +
      'its checkout_url included, and change nothing, at the processor or here; the same key with another plan_id is 409; an ' +
      'unreadable key is 422. Without one, each request is a change of its own.',
    tag: 'Billing',
    status: 200,
    problems: { 403: 'forbidden: not an owner', 409: 'Already on this plan, or the Idempotency-Key was used for another plan', 502: 'The processor refused' },
    field: 'changePlan',
    args: { input: body() },
    bodyHints: { title: 'PlanChangeRequest' },
  },
  {
    method: 'GET',
    path: '/admin/billing/summary',
    operationId: 'getBillingSummary',
    summary: 'Billing summary',
    description:
      "The company's plan, subscription status (null without a paid subscription), period, cancel_at_period_end, seats, " +
      `trial end, credits, spending budget and this period's spend. ${ADMINS} A superadmin may name another company with company_id.`,
    tag: 'Billing',
    status: 200,
    problems: { 403: 'forbidden: not an owner or admin', 404: 'No such company (superadmin)' },
    field: 'billingSummary',
    args: { companyId: actingCompany() },
  },
  {
    method: 'GET',
    path: '/admin/billing/payment-methods',
    operationId: 'listPaymentMethods',
    summary: 'Payment methods',
    description: `The cards of the company's Stripe customer: brand, last4, expiry and which is the default. No card number is ever stored. ${ADMINS} ${ON_PREMISE}`,
    tag: 'Billing',
    status: 200,
    problems: { 403: 'forbidden: not an owner or admin', 502: 'The processor refused', 503: 'payment_processor_not_configured: on-premise mode' },
    field: 'paymentMethods',
  },
  {
    method: 'GET',
    path: '/admin/billing/invoices',
    operationId: 'listInvoices',
    summary: 'Invoices',
    description: `The company's invoices as the processor reported them (number, status, amounts, currency, period, hosted URL), newest first, paged (per_page defaults to ${INVOICES_PER_PAGE}). ${ADMINS}`,
    tag: 'Billing',
    status: 200,
    problems: { 403: 'forbidden: not an owner or admin', 404: 'No such company (superadmin)' },
    field: 'invoices',
    args: { companyId: actingCompany(), ...pageArgs() },
    paginated: true,
  },
  {
    method: 'GET',
    path: '/admin/billing/overview',
    operationId: 'getBillingOverview',
    summary: 'Platform billing overview',
    description: `Companies by plan and by subscription status, monthly recurring revenue, credits allocated and used over the last 30 days, failed payments. ${SUPERADMIN}`,
    tag: 'Billing',
    status: 200,
    problems: { 403: 'forbidden: not a platform superadmin' },
    field: 'billingOverview',
  },
  {
    method: 'GET',
    path: '/admin/billing/customers',
    operationId: 'listBillingCustomers',
    summary: 'Billing customers',
    description: `Companies by name with plan, subscription status, seats, period end and available credits, paged (per_page defaults to ${CUSTOMERS_PER_PAGE}). ${SUPERADMIN}`,
    tag: 'Billing',
    status: 200,
    problems: { 403: 'forbidden: not a platform superadmin' },
    field: 'billingCustomers',
    args: pageArgs(),
    paginated: true,
  },
];
