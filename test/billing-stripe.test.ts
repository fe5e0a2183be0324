import { test } from 'node:test';
import assert from 'node:assert/strict';
import Stripe from 'stripe';
import type { FastifyInstance } from 'fastify';
import { build } from './helper';
import { inContext } from '../src/boot';
import { assertCode, assertInvalid, call, cast, sql } from './admin-helper';
import { assertLedgerAddsUp } from './ledger-helper';
import { deliver, event, invoice, stripeApp, subscriptionCheckout, WEBHOOK_SECRET } from './stripe-helper';
import { calendarPeriod } from '../src/domains/billing';
import { sha256Hex } from '../src/auth/tokens';
import { UUID_PATTERN } from '../src/ids';

async function outbox(app: FastifyInstance, template: string) {
  return sql<{ to_address: string; subject: string; text: string; html: string }>(app, 'select * from mail_outbox where template = ? order by created_at', [template]);
}

const day = 86400;

test('on-premise mode: the processor operations answer 503 and a plan change applies at once', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  assertCode(await deliver(app, event('invoice.payment_succeeded', {})), 503, 'payment_processor_not_configured');
  assertCode(await call(app, c.tokens.ownerA, 'POST', '/v1/billing/topup', { credits: 500 }), 503, 'payment_processor_not_configured');
  assertCode(await call(app, c.tokens.ownerA, 'POST', '/v1/admin/billing/topup/checkout', { credits: 500 }), 503, 'payment_processor_not_configured');
  assertCode(await call(app, c.tokens.ownerA, 'GET', '/v1/admin/billing/payment-methods'), 503, 'payment_processor_not_configured');

  const up = await call(app, c.tokens.ownerA, 'POST', '/v1/admin/billing/plan/change', { plan_id: 'professional' });
  assert.equal(up.statusCode, 200, up.body);
  const change = up.json() as Record<string, unknown> & { plan: { id: string } };
  assert.deepEqual({ ...change, plan: change.plan.id }, { plan: 'professional', previous_plan_id: 'starter', effective: 'now', credits_added: 4000, checkout_url: null });
  assert.equal(app.domains.billing.ledger.balance(c.a.companyId).monthly, 6000);
  const again = await call(app, c.tokens.ownerA, 'POST', '/v1/admin/billing/plan/change', { plan_id: 'professional' });
  assertCode(again, 409, 'conflict');
  const down = await call(app, c.tokens.ownerA, 'POST', '/v1/admin/billing/plan/change', { plan_id: 'starter' });
  assert.equal(down.json().effective, 'next_period');
  assert.equal(app.domains.billing.ledger.balance(c.a.companyId).monthly, 6000, 'a downgrade keeps this period\'s credits');
  // Up again in the same period: the difference was added once already.
  const reUp = await call(app, c.tokens.ownerA, 'POST', '/v1/admin/billing/plan/change', { plan_id: 'professional' });
  assert.equal(reUp.json().credits_added, 0);

  const summary = (await call(app, c.tokens.adminA, 'GET', '/v1/admin/billing/summary')).json();
  assert.equal(summary.plan.id, 'professional');
  assert.equal(summary.status, null);
  assert.equal(summary.processor, 'none');
  assert.equal(summary.credits.monthly, 6000);
  const audit = await sql(app, "select 1 from audit_events where action = 'billing.plan_changed'");
  assert.equal(audit.length, 3);
  await assertLedgerAddsUp(app);
});

test("a period that began on the larger plan gets nothing more from a downgrade and an upgrade again: a period never allocates more than its plan's credits", async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const change = (plan_id: string) => call(app, c.tokens.ownerA, 'POST', '/v1/admin/billing/plan/change', { plan_id });
  assert.equal((await change('professional')).json().credits_added, 4000);
  // The next month begins on professional: its allocation is the plan's 6,000.
  const next = calendarPeriod(new Date(Date.now() + 32 * 86400_000));
  assert.equal(await inContext(app.kernel.orm, () => app.domains.billing.ledger.allocate({ companyId: c.a.companyId, credits: 6000, ...next })), true);
  assert.equal((await change('starter')).json().effective, 'next_period');
  // Up again: this period's upgrade key was never used, and the 4,000 came once more (10,000 in one period).
  const reUp = await change('professional');
  assert.equal(reUp.statusCode, 200, reUp.body);
  assert.equal(reUp.json().credits_added, 0);
  assert.equal(app.domains.billing.ledger.balance(c.a.companyId).monthly, 6000);
  await assertLedgerAddsUp(app);
});

test('plan change and summary role rules: owners change plans; members read no billing', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  for (const token of [c.tokens.adminA, c.tokens.keyA, c.tokens.memberA]) {
    assertCode(await call(app, token, 'POST', '/v1/admin/billing/plan/change', { plan_id: 'professional' }), 403, 'forbidden');
  }
  assertInvalid(await call(app, c.tokens.ownerA, 'POST', '/v1/admin/billing/plan/change', { plan_id: 'platinum' }), 'body.plan_id');
  assertInvalid(await call(app, c.tokens.ownerA, 'POST', '/v1/admin/billing/plan/change', {}), 'body.plan_id');
  assertCode(await call(app, c.tokens.memberA, 'GET', '/v1/admin/billing/summary'), 403, 'forbidden');
  assertCode(await call(app, c.tokens.memberA, 'GET', '/v1/admin/billing/invoices'), 403, 'forbidden');
  assertCode(await call(app, c.tokens.ownerB, 'GET', `/v1/admin/billing/summary?company_id=${c.a.companyId}`), 404, 'not_found');
  for (const token of [c.tokens.ownerA, c.tokens.keyA]) {
    assertCode(await call(app, token, 'GET', '/v1/admin/billing/overview'), 403, 'forbidden');
    assertCode(await call(app, token, 'GET', '/v1/admin/billing/customers'), 403, 'forbidden');
  }
  const overview = await call(app, c.tokens.superadmin, 'GET', '/v1/admin/billing/overview');
  assert.equal(overview.statusCode, 200, overview.body);
  assert.equal(overview.json().companies, 3);
  assert.deepEqual(overview.json().by_plan, [{ key: 'starter', count: 3 }]);
  assert.deepEqual(overview.json().by_status, [{ key: 'none', count: 3 }]);
  assert.equal(overview.json().credits_allocated30d, 6000);
  const customers = await call(app, c.tokens.superadmin, 'GET', '/v1/admin/billing/customers?per_page=2');
  assert.equal(customers.statusCode, 200, customers.body);
  assert.deepEqual([customers.json().total, customers.json().items.length, customers.json().per_page], [3, 2, 2]);
  assert.equal(customers.json().items[0].credits_available, 2000);
  assert.match(String(customers.headers.link), /rel="next"/);
  assert.equal((await call(app, c.tokens.superadmin, 'GET', '/v1/admin/billing/customers')).json().per_page, 25);
});

test('the webhook refuses a missing, wrong or stale signature and changes nothing', async (t) => {
  const { app, c } = await stripeApp(t);
  const body = event('checkout.session.completed', subscriptionCheckout(c.a.companyId));
  assertCode(await deliver(app, body, { signature: null }), 400, 'webhook_signature_invalid');
  assertCode(await deliver(app, body, { secret: 'whsec_someone_else' }), 400, 'webhook_signature_invalid');
  assertCode(await deliver(app, body, { signature: 't=1,v1=deadbeef' }), 400, 'webhook_signature_invalid');
  assertCode(await deliver(app, body, { timestamp: Math.floor(Date.now() / 1000) - 301 }), 400, 'webhook_signature_invalid');
  // A body changed after signing.
  const payload = JSON.stringify(body);
  const header = Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET });
  const tampered = await app.inject({
    method: 'POST',
    url: '/v1/billing/webhook',
    headers: { 'content-type': 'application/json', 'stripe-signature': header },
    payload: payload.replace('professional', 'enterprise'),
  });
  assertCode(tampered, 400, 'webhook_signature_invalid');
  assert.equal((await sql(app, 'select * from processor_events')).length, 0);
  assert.equal(app.domains.billing.ledger.balance(c.a.companyId).monthly, 2000);
});

test('checkout.session.completed starts the subscription once: credits for its period, the plan, one mail; a duplicate changes nothing', async (t) => {
  const { app, c } = await stripeApp(t);
  const body = event('checkout.session.completed', subscriptionCheckout(c.a.companyId));
  const first = await deliver(app, body);
  assert.equal(first.statusCode, 200, first.body);
  assert.deepEqual(first.json(), { received: true, duplicate: false });
  const dup = await deliver(app, body);
  assert.deepEqual(dup.json(), { received: true, duplicate: true });

  const balance = app.domains.billing.ledger.balance(c.a.companyId);
  assert.equal(balance.monthly, 6000, 'professional credits; the starter month expired');
  assert.equal(balance.periodKey, 'stripe:sub_1:first');
  const summary = (await call(app, c.tokens.ownerA, 'GET', '/v1/admin/billing/summary')).json();
  assert.deepEqual([summary.plan.id, summary.status, summary.processor], ['professional', 'active', 'stripe']);
  const mails = await outbox(app, 'subscription_started');
  assert.deepEqual(mails.map((m) => m.to_address), [c.a.email]);
  assert.match(mails[0]!.text, /Professional plan/);
  assert.match(mails[0]!.html, /<html/i);
  const kinds = await sql<{ kind: string }>(app, 'select kind from credit_entries where company_id = ? order by id', [c.a.companyId]);
  assert.deepEqual(kinds.map((k) => k.kind), ['allocation', 'expiry', 'allocation']);
  await assertLedgerAddsUp(app);
});

test('invoices renew the period once, mirror the invoice, and a late failure does not undo a newer success', async (t) => {
  const { app, c } = await stripeApp(t);
  // Times inside the company's first calendar month, after its creation's period start.
  const base = Math.floor(+calendarPeriod(new Date()).periodStart / 1000);
  await deliver(app, event('checkout.session.completed', subscriptionCheckout(c.a.companyId), base + 60));
  // The first invoice shares the checkout's period: no second allocation, no "renewed" mail.
  await deliver(app, event('invoice.payment_succeeded', invoice('in_1', 'cus_1', 'sub_1', 'subscription_create', base + 60), base + 65));
  assert.equal((await sql(app, "select 1 from credit_entries where kind = 'allocation' and company_id = ?", [c.a.companyId])).length, 2);
  assert.equal((await outbox(app, 'subscription_renewed')).length, 0);

  // Spend some, then the renewal: a new period of 6000, the rest expires.
  const ledger = app.domains.billing.ledger;
  await app.domains.billing.ledger.reserve({ companyId: c.a.companyId, credits: 100, key: 'spend', feature: 'chat' }).then((h) => ledger.commit(h.id, { credits: 100 }));
  const failedEarlier = event('invoice.payment_failed', invoice('in_2', 'cus_1', 'sub_1', 'subscription_cycle', base + 120, 'open'), base + 100);
  const renewal = event('invoice.payment_succeeded', invoice('in_2', 'cus_1', 'sub_1', 'subscription_cycle', base + 120), base + 130);
  assert.equal((await deliver(app, renewal)).statusCode, 200);
  const balance = ledger.balance(c.a.companyId);
  assert.deepEqual([balance.monthly, balance.periodKey], [6000, `stripe:sub_1:${base + 120}`]);
  assert.equal((await outbox(app, 'subscription_renewed')).length, 1);

  // The failure happened first but arrives last: recorded, stale, no state change, no mail, the invoice stays paid.
  assert.equal((await deliver(app, failedEarlier)).statusCode, 200);
  const summary = (await call(app, c.tokens.ownerA, 'GET', '/v1/admin/billing/summary')).json();
  assert.equal(summary.status, 'active');
  assert.equal((await outbox(app, 'payment_failed')).length, 0);
  const [stale] = await sql<{ outcome: string }>(app, 'select outcome from processor_events where id = ?', [failedEarlier.id]);
  assert.equal(stale!.outcome, 'stale');

  const invoices = (await call(app, c.tokens.adminA, 'GET', '/v1/admin/billing/invoices')).json();
  assert.equal(invoices.total, 2);
  assert.deepEqual(
    { id: invoices.items[0].id, status: invoices.items[0].status, amount_paid: invoices.items[0].amount_paid, currency: invoices.items[0].currency },
    { id: 'in_2', status: 'paid', amount_paid: '49.00', currency: 'usd' },
  );
  assert.equal(invoices.items[0].hosted_url, 'https://invoice.stripe.test/in_2');
  assert.equal(invoices.per_page, 20);

  // A newer failure does apply: past_due and one mail.
  await deliver(app, event('invoice.payment_failed', invoice('in_3', 'cus_1', 'sub_1', 'subscription_cycle', base + 200, 'open'), base + 200));
  assert.equal((await call(app, c.tokens.ownerA, 'GET', '/v1/admin/billing/summary')).json().status, 'past_due');
  assert.equal((await outbox(app, 'payment_failed')).length, 1);
  await assertLedgerAddsUp(app);
});

test('subscription updates set plan, seats and cancel_at_period_end; trial end and deletion mail the owners', async (t) => {
  const { app, c } = await stripeApp(t);
  const now = Math.floor(Date.now() / 1000);
  await deliver(app, event('checkout.session.completed', subscriptionCheckout(c.a.companyId), now - 100));
  const updated = {
    id: 'sub_1',
    object: 'subscription',
    customer: 'cus_1',
    status: 'trialing',
    cancel_at_period_end: true,
    trial_end: now + 3 * day,
    metadata: {},
    items: { object: 'list', data: [{ id: 'si_1', price: { id: 'price_starter' }, quantity: 3, current_period_start: now - 100, current_period_end: now + 30 * day }] },
  };
  await deliver(app, event('customer.subscription.updated', updated, now - 50));
  let summary = (await call(app, c.tokens.ownerA, 'GET', '/v1/admin/billing/summary')).json();
  assert.deepEqual(
    [summary.plan.id, summary.status, summary.seats, summary.cancel_at_period_end],
    ['starter', 'trialing', 3, true],
  );
  // An older update arriving late changes nothing.
  await deliver(app, event('customer.subscription.updated', { ...updated, cancel_at_period_end: false, items: { data: [{ ...updated.items.data[0], quantity: 9 }] } }, now - 60));
  summary = (await call(app, c.tokens.ownerA, 'GET', '/v1/admin/billing/summary')).json();
  assert.deepEqual([summary.seats, summary.cancel_at_period_end], [3, true]);

  await deliver(app, event('customer.subscription.trial_will_end', updated, now - 40));
  assert.equal((await outbox(app, 'trial_ending_in_2d')).length, 1);
  await deliver(app, event('customer.subscription.deleted', { ...updated, status: 'canceled' }, now - 30));
  summary = (await call(app, c.tokens.ownerA, 'GET', '/v1/admin/billing/summary')).json();
  assert.deepEqual([summary.status, summary.plan.id], ['cancelled', 'starter']);
  assert.equal((await outbox(app, 'subscription_cancelled')).length, 1);
  // GraphQL shows it on Company.
  const gql = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers: { authorization: `Bearer ${c.tokens.ownerA}` },
    payload: { query: '{ me { company { subscription { status seats cancelAtPeriodEnd plan { id } } } } }' },
  });
  assert.deepEqual(gql.json().data.me.company.subscription, { status: 'cancelled', seats: 3, cancelAtPeriodEnd: false, plan: { id: 'starter' } });
  // An event type Atrium does not handle: 200, recorded as ignored.
  const other = await deliver(app, event('customer.created', { id: 'cus_9', object: 'customer' }));
  assert.equal(other.statusCode, 200);
});

test('a top-up is credited once whichever of its two events arrives first', async (t) => {
  for (const order of [['checkout', 'intent'], ['intent', 'checkout']] as const) {
    const { app, c } = await stripeApp(t);
    const metadata = { kind: 'topup', company_id: c.a.companyId, credits: '500' };
    const checkout = event('checkout.session.completed', {
      id: 'cs_pay_1',
      object: 'checkout.session',
      mode: 'payment',
      client_reference_id: c.a.companyId,
      payment_intent: 'pi_1',
      payment_status: 'paid',
      amount_total: 500,
      currency: 'usd',
      metadata,
    });
    const intent = event('payment_intent.succeeded', { id: 'pi_1', object: 'payment_intent', status: 'succeeded', amount_received: 500, currency: 'usd', metadata });
    for (const which of order) assert.equal((await deliver(app, which === 'checkout' ? checkout : intent)).statusCode, 200);
    await deliver(app, intent);
    const balance = app.domains.billing.ledger.balance(c.a.companyId);
    assert.equal(balance.purchased, 500, `order ${order.join(' then ')}`);
    assert.equal((await sql(app, "select 1 from credit_entries where kind = 'topup'")).length, 1);
    await assertLedgerAddsUp(app);
  }
});

test('POST /billing/topup opens one checkout per Idempotency-Key at the configured price', async (t) => {
  const { app, fake, c } = await stripeApp(t);
  const send = (token: string, payload: unknown, key?: string) =>
    app.inject({
      method: 'POST',
      url: '/v1/billing/topup',
      headers: { authorization: `Bearer ${token}`, ...(key === undefined ? {} : { 'idempotency-key': key }) },
      payload: payload as object,
    });
  const first = await send(c.tokens.adminA, { credits: 500 }, 'buy-500');
  assert.equal(first.statusCode, 200, first.body);
  const { expires_at: expiresAt, ...session } = first.json() as Record<string, unknown>;
  assert.deepEqual(session, { session_id: 'cs_test_1', url: 'https://checkout.stripe.test/c/pay/cs_test_1', credits: 500, amount: '5.00', currency: 'usd' });
  assert.ok(Date.parse(String(expiresAt)) > Date.now());
  const again = await send(c.tokens.adminA, { credits: 500 }, 'buy-500');
  assert.equal(again.json().session_id, 'cs_test_1');
  assertCode(await send(c.tokens.adminA, { credits: 600 }, 'buy-500'), 409, 'conflict');
  const creates = fake.requests.filter((r) => r.path === '/v1/checkout/sessions');
  assert.equal(creates.length, 1, 'the second request never reached the processor');
  const sent = creates[0]!;
  assert.equal(sent.body.mode, 'payment');
  assert.equal(sent.body.client_reference_id, c.a.companyId);
  // The top-up's own id, the same in the payment intent's metadata, derived from the Idempotency-Key (a retry sends the same).
  const topupId = (sent.body.metadata as { topup_id: string }).topup_id;
  assert.match(topupId, UUID_PATTERN);
  assert.deepEqual(sent.body.metadata, { kind: 'topup', company_id: c.a.companyId, credits: '500', topup_id: topupId });
  assert.deepEqual((sent.body.payment_intent_data as { metadata: unknown }).metadata, sent.body.metadata);
  assert.equal((sent.body.line_items as { price_data: { unit_amount: string } }[])[0]!.price_data.unit_amount, '500');
  assert.equal(sent.idempotencyKey, `topup:${c.a.companyId}:${sha256Hex('buy-500')}`);
  assert.equal(app.domains.billing.ledger.balance(c.a.companyId).purchased, 0, 'credits only arrive through the webhook');

  assertCode(await send(c.tokens.keyA, { credits: 500 }), 403, 'forbidden');
  assertCode(await send(c.tokens.memberA, { credits: 500 }), 403, 'forbidden');
  assertInvalid(await send(c.tokens.ownerA, { credits: 99 }), 'body.credits');
  assertInvalid(await send(c.tokens.ownerA, { credits: 1_000_001 }), 'body.credits');
  assertInvalid(await send(c.tokens.ownerA, { credits: 500 }, 'has space'), 'header.Idempotency-Key');
  const console = await call(app, c.tokens.ownerA, 'POST', '/v1/admin/billing/topup/checkout', {
    credits: 1000,
    success_url: 'http://127.0.0.1:8080/console/ok?s={CHECKOUT_SESSION_ID}',
  });
  assert.equal(console.statusCode, 200, console.body);
  assert.equal(console.json().amount, '10.00');
  assert.equal(fake.requests.filter((r) => r.path === '/v1/checkout/sessions').at(-1)!.body.success_url, 'http://127.0.0.1:8080/console/ok?s={CHECKOUT_SESSION_ID}');
  assertInvalid(
    await call(app, c.tokens.ownerA, 'POST', '/v1/admin/billing/topup/checkout', { credits: 1000, success_url: 'https://evil.example/steal' }),
    'body.success_url',
  );
});

test('payment methods come from the processor: brand, last4, expiry and the default, never a card number', async (t) => {
  const { app, fake, c } = await stripeApp(t);
  assert.deepEqual((await call(app, c.tokens.ownerA, 'GET', '/v1/admin/billing/payment-methods')).json(), []);
  await deliver(app, event('checkout.session.completed', subscriptionCheckout(c.a.companyId)));
  fake.customers.set('cus_1', {
    defaultPaymentMethod: 'pm_2',
    cards: [
      { id: 'pm_1', brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2030 },
      { id: 'pm_2', brand: 'mastercard', last4: '4444', exp_month: 1, exp_year: 2029 },
    ],
  });
  const res = await call(app, c.tokens.keyA, 'GET', '/v1/admin/billing/payment-methods');
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(res.json(), [
    { id: 'pm_1', brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2030, is_default: false },
    { id: 'pm_2', brand: 'mastercard', last4: '4444', exp_month: 1, exp_year: 2029, is_default: true },
  ]);
  assertCode(await call(app, c.tokens.memberA, 'GET', '/v1/admin/billing/payment-methods'), 403, 'forbidden');
  fake.customers.delete('cus_1');
  assertCode(await call(app, c.tokens.ownerA, 'GET', '/v1/admin/billing/payment-methods'), 502, 'payment_processor_error');
});

test('with Stripe, a plan change updates the live subscription with proration; without one it answers a checkout', async (t) => {
  const { app, fake, c } = await stripeApp(t);
  const checkout = await call(app, c.tokens.ownerA, 'POST', '/v1/admin/billing/plan/change', { plan_id: 'professional' });
  assert.equal(checkout.statusCode, 200, checkout.body);
  assert.equal(checkout.json().effective, 'checkout');
  assert.match(checkout.json().checkout_url, /^https:\/\/checkout\.stripe\.test\//);
  assert.equal(app.domains.billing.ledger.balance(c.a.companyId).monthly, 2000, 'nothing changes before payment');

  // Company B subscribes to starter, then upgrades.
  const now = Math.floor(Date.now() / 1000);
  await deliver(app, event('checkout.session.completed', { ...subscriptionCheckout(c.b.companyId, 'sub_b', 'cus_b'), metadata: { plan_id: 'starter' } }, now - 10));
  fake.subscriptions.set('sub_b', { id: 'sub_b', itemId: 'si_b', price: 'price_starter', quantity: 1 });
  const up = await call(app, c.tokens.ownerB, 'POST', '/v1/admin/billing/plan/change', { plan_id: 'professional' });
  assert.equal(up.statusCode, 200, up.body);
  assert.deepEqual([up.json().effective, up.json().credits_added], ['now', 4000]);
  const updates = () => fake.requests.filter((r) => r.method === 'POST' && r.path === '/v1/subscriptions/sub_b');
  // The upgrade's credits arrive at once, so its prorated price is invoiced at once.
  assert.equal(updates()[0]!.body.proration_behavior, 'always_invoice');
  assert.deepEqual(updates()[0]!.body.items, [{ id: 'si_b', price: 'price_pro' }]);
  assert.equal(app.domains.billing.ledger.balance(c.b.companyId).monthly, 6000);

  // A downgrade refunds nothing (an upgrade and a downgrade in one period must not net to nothing), and a
  // reused X-Request-Id still reaches the processor: each change is a call of its own.
  const change = (plan: string) =>
    app.inject({ method: 'POST', url: '/v1/admin/billing/plan/change', headers: { authorization: `Bearer ${c.tokens.ownerB}`, 'x-request-id': 'same-id' }, payload: { plan_id: plan } });
  const down = await change('starter');
  assert.equal(down.json().effective, 'next_period', down.body);
  assert.equal(updates()[1]!.body.proration_behavior, 'none');
  assert.equal((await change('professional')).statusCode, 200);
  assert.equal((await change('starter')).statusCode, 200);
  assert.equal(updates().length, 4);
  assert.equal(fake.subscriptions.get('sub_b')!.price, 'price_starter');
  await assertLedgerAddsUp(app);
});

test('a paid proration invoice after a mid-period upgrade begins no period: the spent credits stay spent, the spend stays, no "renewed" mail', async (t) => {
  const { app, fake, c } = await stripeApp(t);
  const companyId = c.b.companyId;
  const ledger = app.domains.billing.ledger;
  const now = Math.floor(Date.now() / 1000);
  await deliver(app, event('checkout.session.completed', { ...subscriptionCheckout(companyId, 'sub_b', 'cus_b'), metadata: { plan_id: 'starter' } }, now - 100));
  fake.subscriptions.set('sub_b', { id: 'sub_b', itemId: 'si_b', price: 'price_starter', quantity: 1 });
  const periodKey = ledger.balance(companyId).periodKey;
  await ledger.reserve({ companyId, credits: 1500, key: 'spend', feature: 'chat', model: 'gpt-4o' }).then((h) => ledger.commit(h.id, { credits: 1500, tokens: 100_000, model: 'gpt-4o' }));
  const spend = ledger.balance(companyId).spendMicros;
  assert.ok(spend > 0);
  const up = await call(app, c.tokens.ownerB, 'POST', '/v1/admin/billing/plan/change', { plan_id: 'professional' });
  assert.equal(up.json().credits_added, 4000, up.body);
  assert.equal(ledger.balance(companyId).monthly, 4500);

  // Stripe invoices the upgrade's prorated price at once; its line runs from now to the period's end.
  const prorated = { ...invoice('in_pr', 'cus_b', 'sub_b', 'subscription_update', now), lines: { object: 'list', data: [{ id: 'il_pr', period: { start: now, end: now + 20 * day }, pricing: { price_details: { price: 'price_pro' } } }] } };
  assert.equal((await deliver(app, event('invoice.payment_succeeded', prorated, now + 1))).statusCode, 200);
  const after = ledger.balance(companyId);
  assert.deepEqual([after.monthly, after.periodKey, after.spendMicros], [4500, periodKey, spend], 'no expiry and new allocation, no spend reset');
  assert.equal((await outbox(app, 'subscription_renewed')).length, 0);
  assert.equal((await call(app, c.tokens.ownerB, 'GET', '/v1/admin/billing/invoices')).json().items[0].id, 'in_pr', 'the invoice is mirrored');
  // A second upgrade in the same period adds nothing more.
  await call(app, c.tokens.ownerB, 'POST', '/v1/admin/billing/plan/change', { plan_id: 'starter' });
  assert.equal((await call(app, c.tokens.ownerB, 'POST', '/v1/admin/billing/plan/change', { plan_id: 'professional' })).json().credits_added, 0);
  assert.equal(ledger.balance(companyId).monthly, 4500);

  // The renewal does begin the next period.
  await deliver(app, event('invoice.payment_succeeded', invoice('in_next', 'cus_b', 'sub_b', 'subscription_cycle', now + 20 * day), now + 20 * day));
  const renewed = ledger.balance(companyId);
  assert.deepEqual([renewed.monthly, renewed.periodKey, renewed.spendMicros], [6000, `stripe:sub_b:${now + 20 * day}`, 0]);
  assert.equal((await outbox(app, 'subscription_renewed')).length, 1);
  await assertLedgerAddsUp(app);
});

test('a webhook effect that conflicts (a Stripe customer of another company) fails the event, 409, instead of recording it as seen', async (t) => {
  const { app, c } = await stripeApp(t);
  const now = Math.floor(Date.now() / 1000);
  assert.equal((await deliver(app, event('checkout.session.completed', subscriptionCheckout(c.a.companyId, 'sub_a', 'cus_shared'), now))).statusCode, 200);
  const clash = event('checkout.session.completed', subscriptionCheckout(c.b.companyId, 'sub_b', 'cus_shared'), now);
  const res = await deliver(app, clash);
  assertCode(res, 409, 'conflict');
  const [{ n }] = await sql<{ n: number }>(app, 'select count(*) as n from processor_events where id = ?', [clash.id]);
  assert.equal(n, 0, 'not recorded: Stripe delivers it again');
  assertCode(await deliver(app, clash), 409, 'conflict');
  const [{ owner }] = await sql<{ owner: string }>(app, "select company_id as owner from subscriptions where customer_id = 'cus_shared'");
  assert.equal(owner, c.a.companyId);
});

test('concurrent top-ups with one Idempotency-Key answer one checkout, never a 500', async (t) => {
  const { app, fake, c } = await stripeApp(t);
  const send = (credits: number, key: string) =>
    app.inject({ method: 'POST', url: '/v1/billing/topup', headers: { authorization: `Bearer ${c.tokens.ownerA}`, 'idempotency-key': key }, payload: { credits } });
  const answers = await Promise.all([send(500, 'together'), send(500, 'together'), send(500, 'together')]);
  for (const res of answers) assert.equal(res.statusCode, 200, res.body);
  assert.equal(new Set(answers.map((res) => res.json().session_id)).size, 1);
  const [{ n }] = await sql<{ n: number }>(app, 'select count(*) as n from topup_sessions');
  assert.equal(n, 1);
  const mixed = await Promise.all([send(700, 'mixed'), send(800, 'mixed')]);
  assert.deepEqual(mixed.map((res) => res.statusCode).sort(), [200, 409], mixed.map((res) => res.body).join('\n'));
  assert.ok(fake.requests.length > 0);
});

test('a top-up sent twice with one X-Request-Id and no Idempotency-Key opens two checkouts, never a 500', async (t) => {
  const { app, c } = await stripeApp(t);
  const send = (credits: number) =>
    app.inject({ method: 'POST', url: '/v1/billing/topup', headers: { authorization: `Bearer ${c.tokens.ownerA}`, 'x-request-id': 'client-rid-42' }, payload: { credits } });
  const first = await send(700);
  const second = await send(800);
  assert.equal(first.statusCode, 200, first.body);
  assert.equal(second.statusCode, 200, second.body);
  assert.notEqual(first.json().session_id, second.json().session_id);
  assert.equal(second.json().credits, 800);
});

test('a signed webhook body that is not a readable event answers 400 webhook_event_invalid and changes nothing', async (t) => {
  const { app } = await stripeApp(t);
  const now = Math.floor(Date.now() / 1000);
  const malformed = [
    { id: 'evt_no_data', object: 'event', type: 'invoice.payment_failed', created: now },
    { id: 'evt_null_object', object: 'event', type: 'invoice.payment_failed', created: now, data: { object: null } },
    { object: 'event', type: 'invoice.payment_failed', created: now, data: { object: {} } },
    { id: 'evt_no_created', object: 'event', type: 'invoice.payment_failed', data: { object: {} } },
    { id: 'evt_far_future', object: 'event', type: 'invoice.payment_failed', created: 1e16, data: { object: {} } },
  ];
  for (const body of malformed) assertCode(await deliver(app, body), 400, 'webhook_event_invalid');
  const [{ n }] = await sql<{ n: number }>(app, 'select count(*) as n from processor_events');
  assert.equal(n, 0);
  const late = invoice('in_far', 'cus_1', 'sub_1', 'subscription_cycle', 1e16, 'open');
  const res = await deliver(app, event('invoice.payment_failed', late));
  assert.equal(res.statusCode, 200, res.body);
});

/** A plan change under an Idempotency-Key (none when `key` is null). */
function planChange(app: FastifyInstance, token: string, plan: string, key: string | null) {
  return app.inject({
    method: 'POST',
    url: '/v1/admin/billing/plan/change',
    headers: { authorization: `Bearer ${token}`, ...(key === null ? {} : { 'idempotency-key': key }) },
    payload: { plan_id: plan },
  });
}

async function planChangeRows(app: FastifyInstance) {
  return sql<{ company_id: string; plan_id: string; previous_plan_id: string; effective: string; credits_added: number; checkout_url: string | null }>(
    app,
    'select * from plan_changes order by created_at',
  );
}

test('one Idempotency-Key is one plan change: up, down, up under it answers the first change again, and Stripe and Atrium stay on one price', async (t) => {
  const { app, fake, c } = await stripeApp(t);
  const companyId = c.b.companyId;
  await deliver(app, event('checkout.session.completed', { ...subscriptionCheckout(companyId, 'sub_b', 'cus_b'), metadata: { plan_id: 'starter' } }, Math.floor(Date.now() / 1000) - 10));
  fake.subscriptions.set('sub_b', { id: 'sub_b', itemId: 'si_b', price: 'price_starter', quantity: 1 });
  const updates = () => fake.requests.filter((r) => r.method === 'POST' && r.path === '/v1/subscriptions/sub_b');

  const up = await planChange(app, c.tokens.ownerB, 'professional', 'change-1');
  assert.equal(up.statusCode, 200, up.body);
  assert.deepEqual([up.json().effective, up.json().credits_added], ['now', 4000]);
  const down = await planChange(app, c.tokens.ownerB, 'starter', 'change-1');
  assertCode(down, 409, 'conflict');
  assert.match(down.json().detail, /Idempotency-Key was used for a different plan change/);
  const again = await planChange(app, c.tokens.ownerB, 'professional', 'change-1');
  assert.equal(again.statusCode, 200, again.body);
  assert.deepEqual(again.json(), up.json(), 'the first change, answered again');

  assert.equal(updates().length, 1, 'Stripe saw one update');
  assert.equal(updates()[0]!.idempotencyKey, `plan:${companyId}:sub_b:${sha256Hex('change-1')}`);
  assert.equal(fake.subscriptions.get('sub_b')!.price, 'price_pro');
  assert.equal((await call(app, c.tokens.ownerB, 'GET', '/v1/admin/billing/summary')).json().plan.id, 'professional');
  const [stored] = await sql<{ plan_id: string }>(app, 'select plan_id from subscriptions where company_id = ?', [companyId]);
  assert.equal(stored!.plan_id, 'professional');
  assert.equal(app.domains.billing.ledger.balance(companyId).monthly, 6000, 'the upgrade credits added once');
  assert.equal((await sql(app, "select 1 from audit_events where action = 'billing.plan_changed'")).length, 1);
  assert.deepEqual(
    (await planChangeRows(app)).map((r) => [r.company_id, r.plan_id, r.previous_plan_id, r.effective, r.credits_added, r.checkout_url]),
    [[companyId, 'professional', 'starter', 'now', 4000, null]],
  );

  // The GraphQL mutation behind the route keeps the same record.
  const gql = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers: { authorization: `Bearer ${c.tokens.ownerB}`, 'idempotency-key': 'change-1' },
    payload: { query: 'mutation { changePlan(input: { planId: "professional" }) { plan { id } previousPlanId effective creditsAdded } }' },
  });
  assert.deepEqual(gql.json().data?.changePlan, { plan: { id: 'professional' }, previousPlanId: 'starter', effective: 'now', creditsAdded: 4000 }, gql.body);
  assert.equal(updates().length, 1);

  // Another key is another change; an unreadable key is refused before anything happens.
  const other = await planChange(app, c.tokens.ownerB, 'starter', 'change-2');
  assert.equal(other.json().effective, 'next_period', other.body);
  assert.equal(fake.subscriptions.get('sub_b')!.price, 'price_starter');
  assertInvalid(await planChange(app, c.tokens.ownerB, 'professional', 'has space'), 'header.Idempotency-Key');
  assert.equal(updates().length, 2);
  await assertLedgerAddsUp(app);
});

test('concurrent plan changes under one Idempotency-Key make one change and answer it to each, never a 500', async (t) => {
  const { app, fake, c } = await stripeApp(t);
  const companyId = c.b.companyId;
  await deliver(app, event('checkout.session.completed', { ...subscriptionCheckout(companyId, 'sub_b', 'cus_b'), metadata: { plan_id: 'starter' } }, Math.floor(Date.now() / 1000) - 10));
  fake.subscriptions.set('sub_b', { id: 'sub_b', itemId: 'si_b', price: 'price_starter', quantity: 1 });
  const answers = await Promise.all(Array.from({ length: 5 }, () => planChange(app, c.tokens.ownerB, 'professional', 'together')));
  for (const res of answers) assert.equal(res.statusCode, 200, res.body);
  assert.equal(new Set(answers.map((res) => res.body)).size, 1, answers.map((res) => res.body).join('\n'));
  assert.deepEqual([answers[0]!.json().effective, answers[0]!.json().credits_added], ['now', 4000]);
  // Those that reached Stripe sent one key: Stripe applied the first and replayed it to the rest.
  const updates = fake.requests.filter((r) => r.method === 'POST' && r.path === '/v1/subscriptions/sub_b');
  assert.deepEqual([...new Set(updates.map((r) => r.idempotencyKey))], [`plan:${companyId}:sub_b:${sha256Hex('together')}`]);
  assert.equal(fake.subscriptions.get('sub_b')!.price, 'price_pro');
  assert.equal((await planChangeRows(app)).length, 1);
  assert.equal(app.domains.billing.ledger.balance(companyId).monthly, 6000);
  assert.equal((await sql(app, "select 1 from audit_events where action = 'billing.plan_changed'")).length, 1);
  await assertLedgerAddsUp(app);
});

test('a subscription checkout under one Idempotency-Key answers the same checkout again; another plan under it is 409', async (t) => {
  const { app, fake, c } = await stripeApp(t);
  const first = await planChange(app, c.tokens.ownerA, 'professional', 'subscribe-1');
  assert.equal(first.statusCode, 200, first.body);
  assert.equal(first.json().effective, 'checkout');
  assert.match(first.json().checkout_url, /^https:\/\/checkout\.stripe\.test\//);
  const again = await planChange(app, c.tokens.ownerA, 'professional', 'subscribe-1');
  assert.deepEqual(again.json(), first.json());
  const other = await planChange(app, c.tokens.ownerA, 'starter', 'subscribe-1');
  assertCode(other, 409, 'conflict');
  assert.match(other.json().detail, /Idempotency-Key was used for a different plan change/);
  const creates = fake.requests.filter((r) => r.path === '/v1/checkout/sessions');
  assert.equal(creates.length, 1, 'the retries never reached the processor');
  assert.equal(creates[0]!.idempotencyKey, `subscribe:${c.a.companyId}:${sha256Hex('subscribe-1')}`);
  assert.deepEqual(
    (await planChangeRows(app)).map((r) => [r.plan_id, r.previous_plan_id, r.effective, r.credits_added, r.checkout_url]),
    [['professional', 'starter', 'checkout', 0, first.json().checkout_url]],
  );
  assert.equal((await call(app, c.tokens.ownerA, 'GET', '/v1/admin/billing/summary')).json().plan.id, 'starter', 'nothing changes before payment');
  // Without a key each request is a checkout of its own, as before.
  await planChange(app, c.tokens.ownerA, 'professional', null);
  assert.equal(fake.requests.filter((r) => r.path === '/v1/checkout/sessions').length, 2);
});

test('on-premise, one Idempotency-Key is one plan change: up, down, up answers the first again; concurrent requests make one', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const companyId = c.a.companyId;
  const up = await planChange(app, c.tokens.ownerA, 'professional', 'change-1');
  assert.equal(up.statusCode, 200, up.body);
  assert.deepEqual([up.json().effective, up.json().credits_added], ['now', 4000]);
  const down = await planChange(app, c.tokens.ownerA, 'starter', 'change-1');
  assertCode(down, 409, 'conflict');
  assert.match(down.json().detail, /Idempotency-Key was used for a different plan change/);
  const again = await planChange(app, c.tokens.ownerA, 'professional', 'change-1');
  assert.equal(again.statusCode, 200, again.body);
  assert.deepEqual(again.json(), up.json());
  assert.equal(app.domains.identity.accounts.planIdOf(companyId), 'professional');
  assert.equal(app.domains.billing.ledger.balance(companyId).monthly, 6000);
  assert.equal((await sql(app, "select 1 from audit_events where action = 'billing.plan_changed'")).length, 1);
  assertInvalid(await planChange(app, c.tokens.ownerA, 'starter', 'has space'), 'header.Idempotency-Key');

  // Company B: five at once under one key.
  const together = await Promise.all(Array.from({ length: 5 }, () => planChange(app, c.tokens.ownerB, 'professional', 'together')));
  for (const res of together) assert.equal(res.statusCode, 200, res.body);
  assert.equal(new Set(together.map((res) => res.body)).size, 1, together.map((res) => res.body).join('\n'));
  assert.equal(app.domains.billing.ledger.balance(c.b.companyId).monthly, 6000);
  assert.equal((await sql(app, "select 1 from audit_events where action = 'billing.plan_changed'")).length, 2);
  assert.equal((await planChangeRows(app)).length, 2);
  await assertLedgerAddsUp(app);
});

const outcomeOf = async (app: FastifyInstance, id: string) =>
  (await sql<{ outcome: string }>(app, 'select outcome from processor_events where id = ?', [id]))[0]?.outcome;

const topupIntent = (companyId: string, id: string, credits: unknown, amount: unknown = 500, currency: unknown = 'usd') => ({
  id,
  object: 'payment_intent',
  status: 'succeeded',
  amount_received: amount,
  currency,
  metadata: { kind: 'topup', company_id: companyId, credits },
});

test('a webhook top-up that would take the balance past 2,147,483,647 credits is recorded as failed, answered 200 and credits nothing', async (t) => {
  const { app, c } = await stripeApp(t);
  for (const [credits, reason] of [[1_000_000_000, 'one'], [1_000_000_000, 'two'], [147_481_000, 'three']] as const) {
    assert.equal((await app.inject({ method: 'POST', url: `/v1/admin/companies/${c.a.companyId}/credits/grant`, headers: { authorization: `Bearer ${c.tokens.superadmin}`, 'x-request-id': `ceil-${reason}` }, payload: { credits, reason } })).statusCode, 200);
  }
  assert.equal(app.domains.billing.ledger.balance(c.a.companyId).available, 2_147_483_000);
  const body = event('payment_intent.succeeded', topupIntent(c.a.companyId, 'pi_ceiling', '1000', 1000));
  const res = await deliver(app, body);
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(await outcomeOf(app, body.id), 'failed');
  assert.equal(app.domains.billing.ledger.balance(c.a.companyId).purchased, 0);
  // Stripe's retry of it is a duplicate, not another failure to retry for days.
  assert.equal((await deliver(app, body)).json().duplicate, true);
  assert.equal((await call(app, c.tokens.ownerA, 'GET', '/v1/billing/credits')).statusCode, 200);
  await assertLedgerAddsUp(app);
});

test('a subscription checkout completed unpaid activates nothing; async_payment_succeeded activates it, async_payment_failed never does', async (t) => {
  const { app, c } = await stripeApp(t);
  const unpaid = { ...subscriptionCheckout(c.a.companyId), payment_status: 'unpaid' };
  assert.equal((await deliver(app, event('checkout.session.completed', unpaid))).statusCode, 200);
  let balance = app.domains.billing.ledger.balance(c.a.companyId);
  assert.equal(balance.monthly, 2000, 'no professional credits before the money');
  let summary = (await call(app, c.tokens.ownerA, 'GET', '/v1/admin/billing/summary')).json();
  assert.equal(summary.plan.id, 'starter');
  assert.notEqual(summary.status, 'active');
  const paid = await deliver(app, event('checkout.session.async_payment_succeeded', { ...unpaid, payment_status: 'paid' }));
  assert.equal(paid.statusCode, 200, paid.body);
  balance = app.domains.billing.ledger.balance(c.a.companyId);
  assert.equal(balance.monthly, 6000);
  summary = (await call(app, c.tokens.ownerA, 'GET', '/v1/admin/billing/summary')).json();
  assert.deepEqual([summary.plan.id, summary.status], ['professional', 'active']);

  const unpaidB = { ...subscriptionCheckout(c.b.companyId, 'sub_b', 'cus_b'), payment_status: 'unpaid' };
  await deliver(app, event('checkout.session.completed', unpaidB));
  const failed = event('checkout.session.async_payment_failed', unpaidB);
  assert.equal((await deliver(app, failed)).statusCode, 200);
  assert.ok(await outcomeOf(app, failed.id));
  assert.equal(app.domains.billing.ledger.balance(c.b.companyId).monthly, 2000);
  const summaryB = (await call(app, c.tokens.ownerB, 'GET', '/v1/admin/billing/summary')).json();
  assert.equal(summaryB.plan.id, 'starter');
  assert.notEqual(summaryB.status, 'active');
  await assertLedgerAddsUp(app);
});

test("events of another subscription of the same customer leave the company's subscription, plan and period as they are", async (t) => {
  const { app, c } = await stripeApp(t);
  await deliver(app, event('checkout.session.completed', subscriptionCheckout(c.a.companyId, 'sub_old', 'cus_a')));
  const before = (await call(app, c.tokens.ownerA, 'GET', '/v1/admin/billing/summary')).json();
  assert.deepEqual([before.plan.id, before.status], ['professional', 'active']);
  const now = Math.floor(Date.now() / 1000);
  const addon = {
    id: 'sub_addon',
    object: 'subscription',
    customer: 'cus_a',
    status: 'active',
    cancel_at_period_end: true,
    items: { data: [{ price: { id: 'price_starter' }, quantity: 3, current_period_start: now - 40 * day, current_period_end: now - 10 * day }] },
  };
  const updated = event('customer.subscription.updated', addon);
  assert.equal((await deliver(app, updated)).statusCode, 200);
  assert.equal(await outcomeOf(app, updated.id), 'ignored');
  const deleted = event('customer.subscription.deleted', { ...addon, status: 'canceled' });
  assert.equal((await deliver(app, deleted)).statusCode, 200);
  assert.equal(await outcomeOf(app, deleted.id), 'ignored');
  const failed = event('invoice.payment_failed', invoice('in_addon', 'cus_a', 'sub_addon', 'subscription_cycle', now, 'open'));
  await deliver(app, failed);
  const after = (await call(app, c.tokens.ownerA, 'GET', '/v1/admin/billing/summary')).json();
  assert.deepEqual(
    [after.plan.id, after.status, after.cancel_at_period_end, after.seats, after.period_end],
    ['professional', 'active', false, 1, before.period_end],
  );
  assert.equal((await outbox(app, 'subscription_cancelled')).length, 0);
});

test('the webhook checks the signature before the body: a non-object body is 400 webhook_signature_invalid unsigned, webhook_event_invalid signed', async (t) => {
  const { app } = await stripeApp(t);
  for (const payload of ['[]', 'null', '"str"', '42']) {
    const unsigned = await app.inject({ method: 'POST', url: '/v1/billing/webhook', headers: { 'content-type': 'application/json' }, payload });
    assertCode(unsigned, 400, 'webhook_signature_invalid');
    const wrong = await app.inject({ method: 'POST', url: '/v1/billing/webhook', headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=deadbeef' }, payload });
    assertCode(wrong, 400, 'webhook_signature_invalid');
    const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET });
    const signed = await app.inject({ method: 'POST', url: '/v1/billing/webhook', headers: { 'content-type': 'application/json', 'stripe-signature': signature }, payload });
    assertCode(signed, 400, 'webhook_event_invalid');
  }
  assert.equal((await sql(app, 'select * from processor_events')).length, 0);
});

test('webhook top-up credits are read strictly, within the top-up bounds, and only when the amount paid matches; anything else is a failed event, answered 200', async (t) => {
  const { app, c } = await stripeApp(t);
  const cases: [string, unknown, unknown, unknown][] = [
    ['pi_exp', '1e3', 1000, 'usd'],
    ['pi_space', ' 500', 500, 'usd'],
    ['pi_hex', '0x10', 16, 'usd'],
    ['pi_above', '1000001', 1000001, 'usd'],
    ['pi_below', '50', 50, 'usd'],
    ['pi_huge', '2147483648', 2147483648, 'usd'],
    ['pi_number', 500, 500, 'usd'],
    ['pi_underpaid', '500', 1, 'usd'],
    ['pi_currency', '500', 500, 'eur'],
    ['pi_no_amount', '500', null, 'usd'],
  ];
  for (const [id, credits, amount, currency] of cases) {
    const body = event('payment_intent.succeeded', topupIntent(c.a.companyId, id, credits, amount, currency));
    const res = await deliver(app, body);
    assert.equal(res.statusCode, 200, `${id}: ${res.body}`);
    assert.equal(await outcomeOf(app, body.id), 'failed', id);
  }
  assert.equal(app.domains.billing.ledger.balance(c.a.companyId).purchased, 0);
  // A checkout Atrium opened sells what it recorded, whatever the metadata says.
  const opened = await call(app, c.tokens.ownerA, 'POST', '/v1/billing/topup', { credits: 500 });
  assert.equal(opened.statusCode, 200, opened.body);
  const sessionId = opened.json().session_id as string;
  const tampered = event('checkout.session.completed', {
    id: sessionId, object: 'checkout.session', mode: 'payment', client_reference_id: c.a.companyId, payment_intent: 'pi_tampered',
    payment_status: 'paid', amount_total: 600, currency: 'usd', metadata: { kind: 'topup', company_id: c.a.companyId, credits: '600' },
  });
  assert.equal((await deliver(app, tampered)).statusCode, 200);
  assert.equal(await outcomeOf(app, tampered.id), 'failed');
  assert.equal(app.domains.billing.ledger.balance(c.a.companyId).purchased, 0);
  const good = event('payment_intent.succeeded', topupIntent(c.a.companyId, 'pi_good', '500', 500, 'usd'));
  await deliver(app, good);
  assert.equal(await outcomeOf(app, good.id), 'applied');
  assert.equal(app.domains.billing.ledger.balance(c.a.companyId).purchased, 500);
  await assertLedgerAddsUp(app);
});

test('a late payment of an older invoice never moves the subscription period backwards', async (t) => {
  const { app, c } = await stripeApp(t);
  const base = Math.floor(+calendarPeriod(new Date()).periodStart / 1000);
  await deliver(app, event('checkout.session.completed', subscriptionCheckout(c.a.companyId), base + 60));
  await deliver(app, event('invoice.payment_succeeded', invoice('in_1', 'cus_1', 'sub_1', 'subscription_create', base + 60), base + 65));
  const n = base + 60 + 30 * day;
  await deliver(app, event('invoice.payment_failed', invoice('in_n', 'cus_1', 'sub_1', 'subscription_cycle', n, 'open'), base + 100));
  await deliver(app, event('invoice.payment_succeeded', invoice('in_n1', 'cus_1', 'sub_1', 'subscription_cycle', n + 30 * day), base + 200));
  const current = (await call(app, c.tokens.ownerA, 'GET', '/v1/admin/billing/summary')).json();
  assert.equal(Date.parse(current.period_start), (n + 30 * day) * 1000);
  await deliver(app, event('invoice.payment_succeeded', invoice('in_n', 'cus_1', 'sub_1', 'subscription_cycle', n), base + 300));
  const after = (await call(app, c.tokens.ownerA, 'GET', '/v1/admin/billing/summary')).json();
  assert.deepEqual([after.period_start, after.period_end, after.status], [current.period_start, current.period_end, 'active']);
  const customers = (await call(app, c.tokens.superadmin, 'GET', '/v1/admin/billing/customers')).json();
  assert.equal(customers.items.find((x: { company_id: string }) => x.company_id === c.a.companyId).period_end, current.period_end);
});

test('overview mrr is the live subscription\'s recurring price, never a proration or a manual invoice', async (t) => {
  const { app, c } = await stripeApp(t);
  const base = Math.floor(+calendarPeriod(new Date()).periodStart / 1000);
  const mrr = async () => (await call(app, c.tokens.superadmin, 'GET', '/v1/admin/billing/overview')).json().mrr;
  await deliver(app, event('checkout.session.completed', subscriptionCheckout(c.a.companyId), base + 60));
  await deliver(app, event('invoice.payment_succeeded', invoice('in_c1', 'cus_1', 'sub_1', 'subscription_create', base + 60), base + 65));
  assert.equal(await mrr(), '49.00');
  await deliver(app, event('invoice.payment_succeeded', { ...invoice('in_c2', 'cus_1', 'sub_1', 'subscription_update', base + 70), amount_paid: 1234, amount_due: 1234 }, base + 70));
  await deliver(app, event('invoice.payment_succeeded', { ...invoice('in_c3', 'cus_1', 'sub_1', 'manual', base + 80), amount_paid: 99, amount_due: 99 }, base + 80));
  assert.equal(await mrr(), '49.00', 'from the recurring invoice, not the proration or the manual one');
  // Once the subscription reports its price: that price times its seats.
  await deliver(
    app,
    event('customer.subscription.updated', {
      id: 'sub_1', object: 'subscription', customer: 'cus_1', status: 'active', cancel_at_period_end: false,
      items: { data: [{ price: { id: 'price_pro', unit_amount: 4900, currency: 'usd' }, quantity: 3 }] },
    }, base + 90),
  );
  assert.equal(await mrr(), '147.00');
});

test('the invoice mirror stores only what the API documents: no negative or huge amounts, no unknown status or currency, https links only, three-decimal currencies scaled', async (t) => {
  const { app, c } = await stripeApp(t);
  const now = Math.floor(Date.now() / 1000);
  const send = (id: string, over: Record<string, unknown>) =>
    deliver(app, event('invoice.payment_succeeded', { ...invoice(id, 'cus_m', 'sub_m', 'manual', now), customer: undefined, parent: undefined, metadata: { company_id: c.a.companyId }, ...over }));
  // The company is named by the invoice's metadata only when its customer is on record, so start a subscription first.
  await deliver(app, event('checkout.session.completed', subscriptionCheckout(c.a.companyId, 'sub_m', 'cus_m')));
  for (const [id, over] of [
    ['in_neg', { customer: 'cus_m', amount_due: -500 }],
    ['in_huge', { customer: 'cus_m', amount_due: 1e20, amount_paid: 1e20 }],
    ['in_status', { customer: 'cus_m', status: 'hacked' }],
    ['in_cur', { customer: 'cus_m', currency: 'u$d' }],
    ['in_js', { customer: 'cus_m', hosted_invoice_url: 'javascript:alert(1)' }],
    ['in_bhd', { customer: 'cus_m', currency: 'bhd', amount_due: 4900, amount_paid: 4900 }],
  ] as const) {
    assert.equal((await send(id, over)).statusCode, 200, id);
  }
  const items = (await call(app, c.tokens.ownerA, 'GET', '/v1/admin/billing/invoices?per_page=50')).json().items as Record<string, string>[];
  const byId = new Map(items.map((i) => [i.id, i]));
  for (const item of items) {
    assert.match(item.amount_due!, /^\d{1,9}(\.\d{1,6})?$/, item.id);
    assert.match(item.amount_paid!, /^\d{1,9}(\.\d{1,6})?$/, item.id);
    assert.ok(['draft', 'open', 'paid', 'uncollectible', 'void'].includes(item.status!), item.id);
    assert.match(item.currency!, /^[a-z]{3}$/, item.id);
    assert.ok(item.hosted_url === null || item.hosted_url!.startsWith('https://'), item.id);
  }
  assert.equal(byId.get('in_js')!.hosted_url, null);
  assert.equal(byId.get('in_bhd')!.amount_paid, '4.90');
});

test('a top-up Idempotency-Key reused with another return URL is 409 sent one after the other too; the URL forwarded is the normalised one that was checked', async (t) => {
  const { app, fake, c } = await stripeApp(t);
  const send = (payload: Record<string, unknown>, key: string) =>
    app.inject({ method: 'POST', url: '/v1/admin/billing/topup/checkout', headers: { authorization: `Bearer ${c.tokens.ownerA}`, 'idempotency-key': key }, payload });
  const first = await send({ credits: 500, success_url: 'http://127.0.0.1:8080/ok-1' }, 'same-key');
  assert.equal(first.statusCode, 200, first.body);
  assert.equal((await send({ credits: 500, success_url: 'http://127.0.0.1:8080/ok-1' }, 'same-key')).json().session_id, first.json().session_id);
  assertCode(await send({ credits: 500, success_url: 'http://127.0.0.1:8080/ok-2' }, 'same-key'), 409, 'conflict');
  const odd = await send({ credits: 500, success_url: 'http://127.0.0.1:8080\\@evil.test' }, 'odd-url');
  assert.equal(odd.statusCode, 200, odd.body);
  assert.equal(fake.requests.filter((r) => r.path === '/v1/checkout/sessions').at(-1)!.body.success_url, 'http://127.0.0.1:8080/@evil.test');
});
