import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { build } from './helper';
import { inContext } from '../src/boot';
import { assertInvalid, call, cast, gql, sql } from './admin-helper';
import { assertLedgerAddsUp } from './ledger-helper';
import { deliver, event, invoice, stripeApp, subscriptionCheckout } from './stripe-helper';
import { calendarPeriod } from '../src/domains/billing';
import { UUID_PATTERN } from '../src/ids';

/** The lifecycle of a subscription and a top-up through the webhook, and the reports that read them. */

const day = 86400;

/** Delivers and expects 200: Stripe retries anything else. */
async function delivered(app: FastifyInstance, body: ReturnType<typeof event>) {
  const res = await deliver(app, body);
  assert.equal(res.statusCode, 200, res.body);
  return body.id;
}

const outcomeOf = async (app: FastifyInstance, id: string) => (await sql<{ outcome: string }>(app, 'select outcome from processor_events where id = ?', [id]))[0];

const mails = async (app: FastifyInstance, template: string) => (await sql(app, 'select 1 from mail_outbox where template = ?', [template])).length;


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

// --- defect 2 ---

test('a deleted subscription stays cancelled: a late paid invoice or a later update of it is ignored and moves neither status, plan nor period', async (t) => {
  const { app, c } = await stripeApp(t);
  const base = Math.floor(+calendarPeriod(new Date()).periodStart / 1000);
  await delivered(app, event('checkout.session.completed', subscriptionCheckout(c.a.companyId), base + 60));
  await delivered(app, event('invoice.payment_succeeded', invoice('in_1', 'cus_1', 'sub_1', 'subscription_create', base + 60), base + 65));
  await delivered(app, event('invoice.payment_failed', invoice('in_2', 'cus_1', 'sub_1', 'subscription_cycle', base + 60 + 30 * day, 'open'), base + 100));
  await delivered(app, event('customer.subscription.deleted', subscription('canceled'), base + 110));
  const cancelled = await summaryOf(app, c.tokens.ownerA);
  assert.deepEqual([cancelled.status, cancelled.plan.id], ['cancelled', 'starter']);
  const balance = app.domains.billing.ledger.balance(c.a.companyId);

  const latePayment = await delivered(app, event('invoice.payment_succeeded', invoice('in_2', 'cus_1', 'sub_1', 'subscription_cycle', base + 60 + 30 * day), base + 120));
  assert.equal((await outcomeOf(app, latePayment))!.outcome, 'ignored');
  const update = await delivered(app, event('customer.subscription.updated', subscription('active'), base + 130));
  assert.equal((await outcomeOf(app, update))!.outcome, 'ignored');
  const after = await summaryOf(app, c.tokens.ownerA);
  assert.deepEqual(
    [after.status, after.plan.id, after.period_start, after.period_end],
    ['cancelled', 'starter', cancelled.period_start, cancelled.period_end],
  );
  assert.deepEqual(app.domains.billing.ledger.balance(c.a.companyId), balance, 'no allocation for the late invoice');
  assert.equal(await mails(app, 'subscription_renewed'), 0);
  // The invoice itself is mirrored as Stripe reports it.
  const invoices = (await call(app, c.tokens.ownerA, 'GET', '/v1/admin/billing/invoices')).json();
  assert.equal(invoices.items.find((i: { id: string }) => i.id === 'in_2').status, 'paid');
  // Not live: the calendar month's job gives it the starter plan's credits.
  await allocateMonth(app, nextMonth());
  assert.equal(app.domains.billing.ledger.balance(c.a.companyId).monthly, 2000);
  await assertLedgerAddsUp(app);
});

// --- defect 3 ---

test('customer.subscription.trial_will_end of another subscription is ignored, an older one is stale; neither changes the trial end nor mails', async (t) => {
  const { app, c } = await stripeApp(t);
  const now = Math.floor(Date.now() / 1000);
  await delivered(app, event('checkout.session.completed', subscriptionCheckout(c.a.companyId, 'sub_main', 'cus_a'), now - 100));
  const addon = event('customer.subscription.trial_will_end', { ...subscription('trialing'), id: 'sub_addon', customer: 'cus_a', trial_end: now + 3 * day }, now - 50);
  await delivered(app, addon);
  assert.equal((await outcomeOf(app, addon.id))!.outcome, 'ignored');
  await delivered(app, event('customer.subscription.updated', { ...subscription('trialing'), id: 'sub_main', customer: 'cus_a', trial_end: now + 5 * day }, now - 40));
  const old = event('customer.subscription.trial_will_end', { ...subscription('trialing'), id: 'sub_main', customer: 'cus_a', trial_end: now + 2 * day }, now - 60);
  await delivered(app, old);
  assert.equal((await outcomeOf(app, old.id))!.outcome, 'stale');
  assert.equal(Date.parse((await summaryOf(app, c.tokens.ownerA)).trial_end), (now + 5 * day) * 1000);
  assert.equal(await mails(app, 'trial_ending_in_2d'), 0);
  // The company's own, newer: applied, one mail.
  const own = event('customer.subscription.trial_will_end', { ...subscription('trialing'), id: 'sub_main', customer: 'cus_a', trial_end: now + 5 * day }, now - 30);
  await delivered(app, own);
  assert.equal((await outcomeOf(app, own.id))!.outcome, 'applied');
  assert.equal(await mails(app, 'trial_ending_in_2d'), 1);
});

// --- defect 4 ---

test('an invoice without a subscription (manual, or none named) is mirrored and never changes the subscription status, nor mails payment_failed', async (t) => {
  const { app, c } = await stripeApp(t);
  const now = Math.floor(Date.now() / 1000);
  await delivered(app, event('checkout.session.completed', subscriptionCheckout(c.a.companyId), now - 100));
  const noSubscription = await delivered(app, event('invoice.payment_failed', invoice('in_manual', 'cus_1', null, 'manual', now - 90, 'open'), now - 90));
  assert.equal((await outcomeOf(app, noSubscription))!.outcome, 'applied');
  // Manual, though it names the subscription (Stripe fills it in for an invoice of its customer).
  await delivered(app, event('invoice.payment_failed', invoice('in_manual2', 'cus_1', 'sub_1', 'manual', now - 80, 'open'), now - 80));
  assert.equal((await summaryOf(app, c.tokens.ownerA)).status, 'active');
  assert.equal(await mails(app, 'payment_failed'), 0);
  const invoices = (await call(app, c.tokens.ownerA, 'GET', '/v1/admin/billing/invoices')).json();
  assert.deepEqual(invoices.items.map((i: { id: string; status: string }) => [i.id, i.status]).sort(), [['in_manual', 'open'], ['in_manual2', 'open']]);

  // A failed renewal makes it past due; paying a manual invoice afterwards does not clear that.
  await delivered(app, event('invoice.payment_failed', invoice('in_cycle', 'cus_1', 'sub_1', 'subscription_cycle', now - 70, 'open'), now - 70));
  assert.equal((await summaryOf(app, c.tokens.ownerA)).status, 'past_due');
  await delivered(app, event('invoice.payment_succeeded', invoice('in_manual', 'cus_1', null, 'manual', now - 60), now - 60));
  assert.equal((await summaryOf(app, c.tokens.ownerA)).status, 'past_due');
  assert.equal(await mails(app, 'payment_failed'), 1);
});

// --- defect 5 ---

test('a top-up Atrium opened is credited once whichever of its two events comes first, with or without a payment_intent on the session', async (t) => {
  for (const withIntent of [true, false]) {
    for (const order of [['checkout', 'intent'], ['intent', 'checkout']] as const) {
      const label = `${withIntent ? 'with' : 'without'} payment_intent, ${order.join(' then ')}`;
      const { app, fake, c } = await stripeApp(t);
      const opened = await call(app, c.tokens.ownerA, 'POST', '/v1/billing/topup', { credits: 500 });
      assert.equal(opened.statusCode, 200, opened.body);
      const created = fake.requests.find((r) => r.path === '/v1/checkout/sessions')!.body as {
        metadata: Record<string, string>;
        payment_intent_data: { metadata: Record<string, string> };
      };
      const topupId = created.metadata.topup_id!;
      assert.match(topupId, UUID_PATTERN);
      assert.equal(created.payment_intent_data.metadata.topup_id, topupId);
      const metadata = { kind: 'topup', company_id: c.a.companyId, credits: '500', topup_id: topupId };
      const checkout = event('checkout.session.completed', {
        id: opened.json().session_id,
        object: 'checkout.session',
        mode: 'payment',
        client_reference_id: c.a.companyId,
        payment_intent: withIntent ? 'pi_real' : null,
        payment_status: 'paid',
        amount_total: 500,
        currency: 'usd',
        metadata,
      });
      const intent = event('payment_intent.succeeded', { id: 'pi_real', object: 'payment_intent', status: 'succeeded', amount_received: 500, currency: 'usd', metadata });
      for (const which of order) await delivered(app, which === 'checkout' ? checkout : intent);
      assert.equal(app.domains.billing.ledger.balance(c.a.companyId).purchased, 500, label);
      assert.equal((await sql(app, "select 1 from credit_entries where kind = 'topup'")).length, 1, label);
      await assertLedgerAddsUp(app);
    }
  }
});

test('a top-up session opened before top-up ids (no topup_id in its metadata) keeps the payment intent as its key', async (t) => {
  const { app, c } = await stripeApp(t);
  const metadata = { kind: 'topup', company_id: c.a.companyId, credits: '500' };
  await delivered(app, event('payment_intent.succeeded', { id: 'pi_old', object: 'payment_intent', amount_received: 500, currency: 'usd', metadata }));
  await delivered(
    app,
    event('checkout.session.completed', {
      id: 'cs_old', object: 'checkout.session', mode: 'payment', client_reference_id: c.a.companyId, payment_intent: 'pi_old',
      payment_status: 'paid', amount_total: 500, currency: 'usd', metadata,
    }),
  );
  const keys = await sql<{ idempotency_key: string }>(app, "select idempotency_key from credit_entries where kind = 'topup'");
  assert.deepEqual(keys.map((k) => k.idempotency_key), ['topup:pi_old']);
});

// --- defect 6 ---

test('seats from customer.subscription.updated are integers from 0 to 1,000,000; anything else is ignored with its reason, answered 200, and changes nothing', async (t) => {
  const { app, c } = await stripeApp(t);
  const now = Math.floor(Date.now() / 1000);
  await delivered(app, event('checkout.session.completed', subscriptionCheckout(c.a.companyId), now - 100));
  await delivered(app, event('customer.subscription.updated', subscription('active', {}, { quantity: 3 }), now - 90));
  const mrr = async () => {
    const res = await call(app, c.tokens.superadmin, 'GET', '/v1/admin/billing/overview');
    assert.equal(res.statusCode, 200, res.body);
    return res.json().mrr;
  };
  const seats = async () => {
    const customers = await call(app, c.tokens.superadmin, 'GET', '/v1/admin/billing/customers');
    assert.equal(customers.statusCode, 200, customers.body);
    const row = customers.json().items.find((x: { company_id: string }) => x.company_id === c.a.companyId);
    const summary = await summaryOf(app, c.tokens.ownerA);
    assert.equal(row.seats, summary.seats);
    return summary.seats;
  };
  assert.deepEqual([await seats(), await mrr()], [3, '147.00']);
  let at = now - 80;
  for (const quantity of [-3, 2.5, 1e10, 1_000_001, '5', true, Number.MAX_SAFE_INTEGER + 2]) {
    const id = await delivered(app, event('customer.subscription.updated', subscription('active', { cancel_at_period_end: true }, { quantity }), at++));
    assert.equal((await outcomeOf(app, id))!.outcome, 'ignored', String(quantity));
    const [recorded] = await sql<{ reason: string | null }>(app, 'select reason from processor_events where id = ?', [id]);
    assert.match(String(recorded!.reason), /quantity/, String(quantity));
    assert.deepEqual([await seats(), await mrr()], [3, '147.00'], String(quantity));
    assert.equal((await summaryOf(app, c.tokens.ownerA)).cancel_at_period_end, false, 'the ignored event changed nothing else either');
  }
  await delivered(app, event('customer.subscription.updated', subscription('active', {}, { quantity: 0 }), at++));
  assert.deepEqual([await seats(), await mrr()], [0, '0.00']);
  await delivered(app, event('customer.subscription.updated', subscription('active', {}, { quantity: 1_000_000 }), at++));
  assert.deepEqual([await seats(), await mrr()], [1_000_000, '49000000.00']);
  // A price that times the seats is past the largest amount the API shows is ignored as well.
  const huge = await delivered(
    app,
    event('customer.subscription.updated', subscription('active', {}, { quantity: 1_000_000, price: { id: 'price_pro', unit_amount: 99_999_999_999, currency: 'usd' } }), at++),
  );
  assert.equal((await outcomeOf(app, huge))!.outcome, 'ignored');
  assert.equal(await mrr(), '49000000.00');
  // GraphQL reads the same.
  const res = await gql(app, c.tokens.ownerA, '{ billingSummary { seats } }');
  assert.deepEqual(res.data, { billingSummary: { seats: 1_000_000 } });
});

// --- defect 7 ---

test('in Stripe mode a plan change to a plan without a price is refused 422 and applies nothing; the default plan without a live subscription stays immediate', async (t) => {
  {
    const { app, fake, c } = await stripeApp(t, 'starter:price_starter');
    const res = await call(app, c.tokens.ownerA, 'POST', '/v1/admin/billing/plan/change', { plan_id: 'professional' });
    assertInvalid(res, 'body.plan_id');
    assert.match(res.body, /no price/);
    assert.equal(fake.requests.length, 0);
    assert.equal((await summaryOf(app, c.tokens.ownerA)).plan.id, 'starter');
    assert.equal(app.domains.billing.ledger.balance(c.a.companyId).monthly, 2000);
    assert.equal((await sql(app, "select 1 from audit_events where action = 'billing.plan_changed'")).length, 0);
  }
  {
    const { app, fake, c } = await stripeApp(t, 'professional:price_pro');
    await inContext(app.kernel.orm, () => app.domains.identity.accounts.setPlan(c.a.companyId, 'professional'));
    const res = await call(app, c.tokens.ownerA, 'POST', '/v1/admin/billing/plan/change', { plan_id: 'starter' });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual([res.json().effective, res.json().credits_added, res.json().checkout_url], ['next_period', 0, null]);
    assert.equal(fake.requests.length, 0);
    assert.equal((await summaryOf(app, c.tokens.ownerA)).plan.id, 'starter');
  }
});

// --- defect 8 ---

test('Company.subscription follows the billing summary role rule: a member reads null with forbidden; owners and admins read it', async (t) => {
  const { app, c } = await stripeApp(t);
  await delivered(app, event('checkout.session.completed', subscriptionCheckout(c.a.companyId)));
  const query = '{ me { company { id subscription { status seats plan { id } } } } }';
  const member = await gql(app, c.tokens.memberA, query);
  assert.equal((member.data as { me: { company: { subscription: unknown } } }).me.company.subscription, null);
  assert.equal(member.errors?.[0]?.extensions.code, 'forbidden');
  for (const token of [c.tokens.ownerA, c.tokens.adminA]) {
    const res = await gql(app, token, query);
    assert.equal(res.errors, undefined, JSON.stringify(res.errors));
    assert.deepEqual((res.data as { me: { company: { subscription: unknown } } }).me.company.subscription, { status: 'active', seats: 1, plan: { id: 'professional' } });
  }
});

// --- defect 9 ---

test('customers and summary report the same period_end, after a cancellation and the next month\'s allocation too', async (t) => {
  const { app, c } = await stripeApp(t);
  const now = Math.floor(Date.now() / 1000);
  const periodEnd = async () => {
    const customers = (await call(app, c.tokens.superadmin, 'GET', '/v1/admin/billing/customers')).json();
    const row = customers.items.find((x: { company_id: string }) => x.company_id === c.a.companyId);
    const summary = await summaryOf(app, c.tokens.ownerA);
    assert.equal(row.period_end, summary.period_end);
    return summary.period_end;
  };
  await delivered(app, event('checkout.session.completed', subscriptionCheckout(c.a.companyId), now - 100));
  await periodEnd();
  await delivered(app, event('customer.subscription.deleted', subscription('canceled'), now - 50));
  await periodEnd();
  await allocateMonth(app, nextMonth());
  assert.equal(Date.parse(await periodEnd()), +calendarPeriod(nextMonth()).periodEnd);
});

// --- defect 10 ---

test('failed_payments30d counts only failed payments applied to a company: unmatched, stale and ignored ones are not counted', async (t) => {
  const { app, c } = await stripeApp(t);
  const now = Math.floor(Date.now() / 1000);
  const failed = async () => (await call(app, c.tokens.superadmin, 'GET', '/v1/admin/billing/overview')).json().failed_payments30d;
  await delivered(app, event('checkout.session.completed', subscriptionCheckout(c.a.companyId), now - 100));
  const unmatched = await delivered(app, event('invoice.payment_failed', invoice('in_x', 'cus_of_someone_else', 'sub_x', 'subscription_cycle', now, 'open'), now - 90));
  assert.equal((await outcomeOf(app, unmatched))!.outcome, 'unmatched');
  const ignored = await delivered(app, event('invoice.payment_failed', invoice('in_other', 'cus_1', 'sub_other', 'subscription_cycle', now, 'open'), now - 80));
  assert.equal((await outcomeOf(app, ignored))!.outcome, 'ignored');
  await delivered(app, event('invoice.payment_succeeded', invoice('in_2', 'cus_1', 'sub_1', 'subscription_cycle', now), now - 10));
  const stale = await delivered(app, event('invoice.payment_failed', invoice('in_2', 'cus_1', 'sub_1', 'subscription_cycle', now, 'open'), now - 20));
  assert.equal((await outcomeOf(app, stale))!.outcome, 'stale');
  assert.equal(await failed(), 0);
  await delivered(app, event('invoice.payment_failed', invoice('in_3', 'cus_1', 'sub_1', 'subscription_cycle', now + 30 * day, 'open'), now));
  assert.equal(await failed(), 1);
});

// --- defect 11 ---

test('a blocked model keeps its display name as its usage label in the report, the CSV export and GraphQL', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  await sql(
    app,
    'insert into usage_records (id, company_id, user_id, api_key_id, model, feature, credits, tokens, cost_micros, created_at) values (?, ?, ?, null, ?, ?, ?, ?, ?, ?)',
    [randomUUID(), c.a.companyId, c.adminA.userId, 'gpt-4o', 'chat', 10, 2000, 10_000, Date.now() - 1000],
  );
  const blocked = await call(app, c.tokens.superadmin, 'PATCH', '/v1/admin/models/gpt-4o', { blocked: true });
  assert.equal(blocked.statusCode, 200, blocked.body);
  const report = await call(app, c.tokens.ownerA, 'GET', '/v1/admin/usage');
  assert.deepEqual(report.json().rows.map((r: { key: string; label: string | null }) => [r.key, r.label]), [['gpt-4o', 'GPT-4o']]);
  const csv = await call(app, c.tokens.ownerA, 'GET', '/v1/admin/usage/export');
  assert.equal(csv.statusCode, 200, csv.body);
  assert.match(csv.body, /\r\ngpt-4o,GPT-4o,1,2000,10,/);
  const res = await gql(app, c.tokens.ownerA, '{ usageReport { rows { key label } } }');
  assert.deepEqual(res.data, { usageReport: { rows: [{ key: 'gpt-4o', label: 'GPT-4o' }] } });
});
