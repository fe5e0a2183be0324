import type { TestContext } from 'node:test';
import Stripe from 'stripe';
import type { FastifyInstance } from 'fastify';
import { build } from './helper';
import { cast } from './admin-helper';
import { startFakeStripe } from './fake-stripe';
import { loadPaymentsConfig } from '../src/domains/payments';

/** What the billing tests share: an app in Stripe mode against the loopback fake, and webhook events signed as Stripe signs them. */

export const WEBHOOK_SECRET = 'whsec_test_atrium';
let events = 0;

/** An app with Stripe configured (the fake's URL, two priced plans unless `prices` says otherwise) and the admin cast. */
export async function stripeApp(t: TestContext, prices = 'starter:price_starter,professional:price_pro') {
  const fake = await startFakeStripe();
  t.after(() => fake.close());
  const payments = loadPaymentsConfig({ STRIPE_SECRET_KEY: 'sk_test_atrium', STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET, STRIPE_PRICES: prices, STRIPE_API_URL: fake.url });
  const app = await build(t, { payments });
  return { app, fake, c: await cast(app) };
}

/** A Stripe event around `object`, with an id of its own unless one is given. */
export function event(type: string, object: Record<string, unknown>, created = Math.floor(Date.now() / 1000), id = `evt_${++events}`) {
  return { id, object: 'event', type, created, livemode: false, api_version: '2026-10-28.endive', data: { object } };
}

/** POSTs `body` to the webhook, signed with the secret (or `options.secret`, at `options.timestamp`), or with `options.signature` as given (null: none). */
export function deliver(app: FastifyInstance, body: unknown, options: { secret?: string; timestamp?: number; signature?: string | null } = {}) {
  const payload = JSON.stringify(body);
  const signature =
    options.signature === undefined
      ? Stripe.webhooks.generateTestHeaderString({ payload, secret: options.secret ?? WEBHOOK_SECRET, ...(options.timestamp ? { timestamp: options.timestamp } : {}) })
      : options.signature;
  return app.inject({
    method: 'POST',
    url: '/v1/billing/webhook',
    headers: { 'content-type': 'application/json', ...(signature === null ? {} : { 'stripe-signature': signature }) },
    payload,
  });
}

/** A completed, paid subscription checkout of `companyId` for the professional plan. */
export const subscriptionCheckout = (companyId: string, subscription = 'sub_1', customer = 'cus_1') => ({
  id: `cs_sub_${subscription}`,
  object: 'checkout.session',
  mode: 'subscription',
  client_reference_id: companyId,
  customer,
  subscription,
  metadata: { company_id: companyId, plan_id: 'professional' },
  payment_status: 'paid',
});

const DAY = 86400;

/** An invoice of `customer` for a month from `start` (a subscription's when `subscription` is given), 49.00 USD. */
export function invoice(id: string, customer: string, subscription: string | null, reason: string, start: number, status = 'paid') {
  return {
    id,
    object: 'invoice',
    customer,
    number: `INV-${id}`,
    status,
    billing_reason: reason,
    amount_due: 4900,
    amount_paid: status === 'paid' ? 4900 : 0,
    currency: 'usd',
    created: start,
    hosted_invoice_url: `https://invoice.stripe.test/${id}`,
    ...(subscription ? { parent: { type: 'subscription_details', subscription_details: { subscription, metadata: {} } } } : {}),
    lines: { object: 'list', data: [{ id: `il_${id}`, period: { start, end: start + 30 * DAY }, pricing: { price_details: { price: 'price_pro' } } }] },
  };
}
