import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import Stripe from 'stripe';
import type { FastifyInstance } from 'fastify';
import { build } from './helper';
import { inContext } from '../src/boot';
import { call, cast, sql } from './admin-helper';
import { assertLedgerAddsUp } from './ledger-helper';
import { startFakeStripe } from './fake-stripe';
import { loadPaymentsConfig } from '../src/domains/payments';
import { calendarPeriod } from '../src/domains/billing';

/** The lifecycle of a subscription and a top-up through the webhook, and the reports that read them. */

const WEBHOOK_SECRET = 'whsec_test_atrium';
let events = 0;

async function stripeApp(t: TestContext, prices = 'starter:price_starter,professional:price_pro') {
  const fake = await startFakeStripe();
  t.after(() => fake.close());
  const payments = loadPaymentsConfig({ STRIPE_SECRET_KEY: 'sk_test_atrium', STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET, STRIPE_PRICES: prices, STRIPE_API_URL: fake.url });
  const app = await build(t, { payments });
  return { app, fake, c: await cast(app) };
}

function event(type: string, object: Record<string, unknown>, created = Math.floor(Date.now() / 1000)) {
  return { id: `evt_life_${++events}`, object: 'event', type, created, livemode: false, api_version: '2026-10-28.endive', data: { object } };
}

function deliver(app: FastifyInstance, body: unknown) {
  const payload = JSON.stringify(body);
  const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET });
  return app.inject({ method: 'POST', url: '/v1/billing/webhook', headers: { 'content-type': 'application/json', 'stripe-signature': signature }, payload });
}

/** Delivers and expects 200: Stripe retries anything else. */
async function delivered(app: FastifyInstance, body: ReturnType<typeof event>) {
  const res = await deliver(app, body);
  assert.equal(res.statusCode, 200, res.body);
  return body.id;
}

const subscriptionCheckout = (companyId: string, subscription = 'sub_1', customer = 'cus_1') => ({
  id: `cs_sub_${subscription}`,
  object: 'checkout.session',
  mode: 'subscription',
  client_reference_id: companyId,
  customer,
  subscription,
  metadata: { company_id: companyId, plan_id: 'professional' },
  payment_status: 'paid',
});

function subscription(status: string, over: Record<string, unknown> = {}, item: Record<string, unknown> = {}) {
  return {
    id: 'sub_1',
    object: 'subscription',
    customer: 'cus_1',
    status,
    cancel_at_period_end: false,
    metadata: {},
    items: { object: 'list', data: [{ id: 'si_1', price: { id: 'price_pro', unit_amount: 4900, currency: 'usd' }, quantity: 1, ...item }] },
    ...over,
  };
}

const summaryOf = async (app: FastifyInstance, token: string) => {
  const res = await call(app, token, 'GET', '/v1/admin/billing/summary');
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
};

const nextMonth = () => new Date(+calendarPeriod(new Date()).periodEnd + 86400_000);
const allocateMonth = (app: FastifyInstance, at: Date) => inContext(app.kernel.orm, () => app.domains.payments.subscriptions.allocateCalendarMonth(at));

// --- defect 1 ---

test('a subscription that stops being live (unpaid, paused, incomplete_expired, canceled) returns the company to the starter plan, and the monthly job gives only starter credits', async (t) => {
  for (const [stripeStatus, status] of [['unpaid', 'unpaid'], ['paused', 'paused'], ['incomplete_expired', 'incomplete_expired'], ['canceled', 'cancelled']] as const) {
    const { app, c } = await stripeApp(t);
    const now = Math.floor(Date.now() / 1000);
    await delivered(app, event('checkout.session.completed', subscriptionCheckout(c.a.companyId), now - 100));
    assert.equal((await summaryOf(app, c.tokens.ownerA)).plan.id, 'professional');
    await delivered(app, event('customer.subscription.updated', subscription(stripeStatus), now - 50));
    const summary = await summaryOf(app, c.tokens.ownerA);
    assert.deepEqual([summary.plan.id, summary.status], ['starter', status], stripeStatus);
    // The next month's job, twice: the starter plan's credits, once.
    await allocateMonth(app, nextMonth());
    await allocateMonth(app, nextMonth());
    assert.equal(app.domains.billing.ledger.balance(c.a.companyId).monthly, 2000, stripeStatus);
    const paid = await sql(app, "select 1 from credit_entries where kind = 'allocation' and credits = 6000 and company_id = ?", [c.a.companyId]);
    assert.equal(paid.length, 1, `${stripeStatus}: only the paid first period gave professional credits`);
    await assertLedgerAddsUp(app);
  }
});

test('a subscription live again after unpaid or paused takes the plan of its price again', async (t) => {
  for (const stripeStatus of ['unpaid', 'paused']) {
    const { app, c } = await stripeApp(t);
    const now = Math.floor(Date.now() / 1000);
    await delivered(app, event('checkout.session.completed', subscriptionCheckout(c.a.companyId), now - 100));
    await delivered(app, event('customer.subscription.updated', subscription(stripeStatus), now - 50));
    assert.equal((await summaryOf(app, c.tokens.ownerA)).plan.id, 'starter');
    await delivered(app, event('customer.subscription.updated', subscription('active'), now - 40));
    const summary = await summaryOf(app, c.tokens.ownerA);
    assert.deepEqual([summary.plan.id, summary.status], ['professional', 'active'], stripeStatus);
  }
});
