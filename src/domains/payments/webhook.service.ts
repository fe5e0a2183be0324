import type Stripe from 'stripe';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { Orm } from '../../db/orm';
import { currentEm, transaction } from '../../db/unit-of-work';
import { AppError } from '../../errors/catalog';
import type { Mailer } from '../../mail/mailer';
import type { Logger } from '../../kernel/logger';
import { microsFromMinor, minorFromMicros, parseMoney, type LedgerService, type PlanService } from '../billing';
import type { IdentityService } from '../identity';
import type { PaymentsConfig, StripeSettings } from './config';
import { Invoice } from './invoice.entity';
import { billingMail, type BillingMailKind } from './mail';
import { ProcessorEvent, type EventOutcome } from './processor-event.entity';
import { Subscription, subscriptionStatuses, type SubscriptionStatus } from './subscription.entity';
import { TopupSession } from './topup-session.entity';
import { UUID_PATTERN } from '../../ids';
import { clipText } from '../../clip-text';

/** The plan a company returns to when its subscription ends. */
export const DEFAULT_PLAN = 'starter';
/** The Stripe signature's tolerance: an event signed longer ago than this is refused (replay). */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

/** The key of the first period's credits, shared by the checkout and the first invoice, whichever comes first. */
export const firstPeriodKey = (subscriptionId: string) => `stripe:${subscriptionId}:first`;
export const periodKey = (subscriptionId: string, start: Date) => `stripe:${subscriptionId}:${Math.floor(+start / 1000)}`;

type Obj = Record<string, unknown>;
const str = (v: unknown): string | null => (typeof v === 'string' && v ? v : null);
const idOf = (v: unknown): string | null => str(v) ?? str((v as Obj | null)?.id);
/** The event's id is recorded already: its delivery is a duplicate (the transaction rolls back). */
class SeenBefore extends Error {}

/** A Unix time as a Date; null when absent or outside what a Date can hold. */
function time(v: unknown): Date | null {
  if (typeof v !== 'number') return null;
  const date = new Date(v * 1000);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** What makes a signed body unreadable as an event, if anything: answered 400 rather than failing inside an effect. */
function malformedEvent(event: Stripe.Event): string | null {
  if (typeof event !== 'object' || event === null || Array.isArray(event)) return 'the body must be a JSON object';
  const { id, type, created, data } = event as unknown as Obj;
  if (typeof id !== 'string' || !id || id.length > 255) return 'id must be a string of 1 to 255 characters';
  if (typeof type !== 'string' || !type) return 'type must be a non-empty string';
  if (time(created) === null) return 'created must be a Unix time';
  const object = (data as Obj | null | undefined)?.object;
  if (typeof object !== 'object' || object === null || Array.isArray(object)) return 'data.object must be an object';
  return null;
}
const metadataOf = (o: Obj): Obj => ((o.metadata as Obj | null) ?? {}) as Obj;

/** The subscription's period, from its first item (recent API versions) or the subscription itself (older ones). */
function subscriptionPeriod(sub: Obj): { start: Date | null; end: Date | null } {
  const item = ((sub.items as Obj | undefined)?.data as Obj[] | undefined)?.[0] ?? {};
  return { start: time(item.current_period_start ?? sub.current_period_start), end: time(item.current_period_end ?? sub.current_period_end) };
}

/** The item's quantity as sent (checked by the caller); null when absent, as for a metered price. */
function subscriptionPrice(sub: Obj): { price: string | null; quantity: unknown; unitAmount: number | null; currency: string | null } {
  const item = ((sub.items as Obj | undefined)?.data as Obj[] | undefined)?.[0];
  if (!item) return { price: null, quantity: null, unitAmount: null, currency: null };
  const price = (typeof item.price === 'object' && item.price ? item.price : {}) as Obj;
  const unit = price.unit_amount;
  return {
    price: idOf(item.price),
    quantity: item.quantity ?? null,
    // The recurring price, when the event carries the price object (MRR).
    unitAmount: Number.isSafeInteger(unit) && (unit as number) >= 0 ? (unit as number) : null,
    currency: typeof price.currency === 'string' && /^[a-z]{3}$/.test(price.currency) ? price.currency : null,
  };
}

/** The subscription an invoice bills: `subscription` in older API versions, `parent.subscription_details` in newer ones. */
function invoiceSubscription(invoice: Obj): { id: string | null; metadata: Obj } {
  const details = ((invoice.parent as Obj | null)?.subscription_details ?? invoice.subscription_details) as Obj | null | undefined;
  return { id: idOf(invoice.subscription) ?? idOf(details?.subscription), metadata: ((details?.metadata as Obj | null) ?? {}) as Obj };
}

/** The subscription period an invoice pays for: its lines' periods (the invoice's own period_* cover the period before). */
function invoicePeriod(invoice: Obj): { start: Date | null; end: Date | null; price: string | null } {
  const lines = ((invoice.lines as Obj | undefined)?.data as Obj[] | undefined) ?? [];
  let best: { start: Date | null; end: Date | null; price: string | null } = { start: null, end: null, price: null };
  for (const line of lines) {
    const period = line.period as Obj | undefined;
    const end = time(period?.end);
    if (end && (!best.end || end > best.end)) {
      const pricing = line.pricing as Obj | undefined;
      best = { start: time(period?.start), end, price: idOf(line.price) ?? str((pricing?.price_details as Obj | undefined)?.price) };
    }
  }
  return best;
}

/** Subscription states in which the company has the plan it pays for. */
const LIVE_STATUSES: readonly SubscriptionStatus[] = ['active', 'trialing', 'past_due'];
const isLive = (sub: Subscription) => LIVE_STATUSES.includes(sub.status);

/**
 * Whether an event of `subscriptionId` is about another subscription than the
 * one on record for the company (a duplicate subscription of the same
 * customer, or an old one after a re-subscribe).
 */
function another(sub: Subscription, subscriptionId: string | null): boolean {
  return sub.subscriptionId !== null && subscriptionId !== null && subscriptionId !== sub.subscriptionId;
}

/** Another subscription than the company's live one: it must not change the company's plan, status or period. */
const otherThanLive = (sub: Subscription, subscriptionId: string | null) => another(sub, subscriptionId) && isLive(sub);

/** The subscription on record was cancelled: Stripe never revives one, so no later event of it (a late payment, an update) may. */
const ended = (sub: Subscription, subscriptionId: string | null) => sub.status === 'cancelled' && subscriptionId !== null && sub.subscriptionId === subscriptionId;

/** A top-up's credit count as Atrium writes it in metadata: a plain decimal integer, nothing Number() would also read ("1e3", " 5", "0x10"). */
const CREDITS_TEXT = /^[1-9][0-9]{0,9}$/;

/** An event that is signed and readable but cannot be applied as it is: recorded as failed and logged, answered 200 (a retry cannot fix it). */
class Unusable extends Error {
  constructor(
    message: string,
    readonly companyId: string | null,
  ) {
    super(message);
  }
}

/** The invoice states Stripe reports (and the API documents). */
const INVOICE_STATUSES = ['draft', 'open', 'paid', 'uncollectible', 'void'];
/** The largest amount the API can show: 999,999,999.999999 in the major unit (its decimal pattern). */
export const MAX_AMOUNT_MICROS = 999_999_999_999_999;
/** The seats a subscription may report: Stripe allows 0; more than this is no real subscription of Atrium's. */
export const MAX_SEATS = 1_000_000;

/** An invoice's currency: three ASCII letters, lower-case as stored; null otherwise. */
function currencyOf(v: unknown): string | null {
  return typeof v === 'string' && /^[A-Za-z]{3}$/.test(v) ? v.toLowerCase() : null;
}

/** An amount in the currency's minor unit that the API can show; null when negative, fractional or too large. */
function amountOf(v: unknown, currency: string): number | null {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && microsFromMinor(v, currency) <= MAX_AMOUNT_MICROS ? v : null;
}

/** A hosted invoice page: an https URL only (a console renders it as a link). */
function httpsUrl(v: unknown): string | null {
  if (typeof v !== 'string' || v.length > 2048) return null;
  try {
    const url = new URL(v);
    return url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}

function statusOf(stripeStatus: unknown): SubscriptionStatus {
  const status = stripeStatus === 'canceled' ? 'cancelled' : String(stripeStatus);
  return (subscriptionStatuses as readonly string[]).includes(status) ? (status as SubscriptionStatus) : 'incomplete';
}

interface Applied {
  companyId: string | null;
  outcome: EventOutcome;
  /** Recorded with the event (and logged) when the outcome alone does not explain it. */
  reason?: string;
}

/**
 * POST /billing/webhook: verifies the processor's signature over the raw
 * body, then applies each event once, from its own payload. The event's
 * record, its ledger entries, its state change and its mail commit in one
 * transaction; a duplicate id changes nothing. Per subscription, an event
 * older than the newest one applied changes no state (a late
 * `invoice.payment_failed` does not undo a later success).
 */
export class WebhookService {
  constructor(
    private readonly orm: Orm,
    private readonly stripe: Stripe | null,
    private readonly settings: StripeSettings | null,
    private readonly ledger: LedgerService,
    private readonly plans: PlanService,
    private readonly accounts: IdentityService,
    private readonly mailer: Mailer,
    private readonly log: Logger,
    private readonly payments: Pick<PaymentsConfig, 'topupPricePerCredit' | 'topupMinCredits' | 'topupMaxCredits'>,
  ) {}

  async receive(raw: Buffer | undefined, signature: string | string[] | undefined): Promise<{ received: true; duplicate: boolean }> {
    if (!this.stripe || !this.settings) throw new AppError('payment_processor_not_configured', 'This server has no payment processor (on-premise mode)');
    if (!raw || typeof signature !== 'string' || !signature) {
      throw new AppError('webhook_signature_invalid', 'The Stripe-Signature header and a JSON body are required');
    }
    let event: Stripe.Event;
    try {
      event = this.stripe.webhooks.constructEvent(raw, signature, this.settings.webhookSecret, SIGNATURE_TOLERANCE_SECONDS);
    } catch {
      throw new AppError('webhook_signature_invalid', 'The signature does not match the body, or it is older than 300 seconds');
    }
    const malformed = malformedEvent(event);
    if (malformed) throw new AppError('webhook_event_invalid', `The signed body is not a readable event: ${malformed}`);
    try {
      await transaction(this.orm, async (em) => {
        const record = em.create(ProcessorEvent, { id: event.id, type: event.type, createdAt: time(event.created)!, outcome: 'ignored' });
        // First, so a duplicate delivered by another process fails here, before any effect. Only this
        // insert means "seen before": a conflict inside an effect fails the event (Stripe retries it).
        try {
          await em.flush();
        } catch (error) {
          throw error instanceof UniqueConstraintViolationException ? new SeenBefore() : error;
        }
        let applied: Applied;
        try {
          applied = await this.apply(event);
        } catch (error) {
          if (!(error instanceof Unusable)) throw error;
          // Thrown before any state of the event was changed (ledger writes roll back to their savepoint).
          this.log.error({ eventId: event.id, type: event.type, err: error }, `webhook event not applied: ${error.message}`);
          applied = { companyId: error.companyId, outcome: 'failed', reason: error.message };
        }
        if (applied.reason && applied.outcome !== 'failed') this.log.warn({ eventId: event.id, type: event.type }, `webhook event ignored: ${applied.reason}`);
        record.outcome = applied.outcome;
        record.companyId = applied.companyId;
        record.reason = applied.reason ? clipText(applied.reason, 255) : null;
        await em.flush();
      });
    } catch (error) {
      if (error instanceof SeenBefore) return { received: true, duplicate: true };
      throw error;
    }
    return { received: true, duplicate: false };
  }

  private async apply(event: Stripe.Event): Promise<Applied> {
    const object = event.data.object as unknown as Obj;
    const created = time(event.created)!;
    switch (event.type) {
      // A delayed payment method (SEPA, ACH) completes the session unpaid; the money arrives with async_payment_succeeded.
      case 'checkout.session.completed':
      case 'checkout.session.async_payment_succeeded':
        return object.mode === 'payment' ? this.topupCompleted(object) : this.subscriptionStarted(object, created);
      case 'checkout.session.async_payment_failed':
        return this.checkoutFailed(object, created);
      case 'invoice.payment_succeeded':
        return this.invoicePaid(object, created);
      case 'invoice.payment_failed':
        return this.invoiceFailed(object, created);
      case 'customer.subscription.updated':
        return this.subscriptionUpdated(object, created);
      case 'customer.subscription.deleted':
        return this.subscriptionDeleted(object, created);
      case 'customer.subscription.trial_will_end':
        return this.trialEnding(object, created);
      case 'payment_intent.succeeded':
        return this.paymentSucceeded(object);
      default:
        return { companyId: null, outcome: 'ignored' };
    }
  }

  /** The company an object names (client_reference_id, metadata.company_id) when it exists, else the customer's. */
  private async companyOf(object: Obj, metadata: Obj = metadataOf(object)): Promise<string | null> {
    for (const candidate of [str(object.client_reference_id), str(metadata.company_id)]) {
      if (candidate && UUID_PATTERN.test(candidate) && this.accounts.planIdOf(candidate) !== null) return candidate;
    }
    const customer = idOf(object.customer);
    if (!customer) return null;
    const sub = await currentEm(this.orm).findOne(Subscription, { customerId: customer });
    return sub?.companyId ?? null;
  }

  private planOf(price: string | null, metadata: Obj): string | null {
    const byPrice = price ? this.settings?.planByPrice.get(price) : undefined;
    const plan = byPrice ?? str(metadata.plan_id);
    return plan && this.plans.exists(plan) ? plan : null;
  }

  private async topupCompleted(session: Obj): Promise<Applied> {
    const metadata = metadataOf(session);
    const companyId = await this.companyOf(session);
    if (!companyId || metadata.kind !== 'topup') return { companyId, outcome: companyId ? 'ignored' : 'unmatched' };
    const em = currentEm(this.orm);
    const topup = await em.findOne(TopupSession, { id: String(session.id) });
    if (topup) topup.paymentIntentId = idOf(session.payment_intent);
    if (session.payment_status !== 'paid') return { companyId, outcome: 'applied' };
    const paid = { amount: session.amount_total, currency: session.currency };
    await this.creditTopup(companyId, metadata, idOf(session.payment_intent) ?? String(session.id), paid, topup);
    if (topup) topup.completedAt ??= new Date();
    return { companyId, outcome: 'applied' };
  }

  private async paymentSucceeded(intent: Obj): Promise<Applied> {
    const metadata = metadataOf(intent);
    if (metadata.kind !== 'topup') return { companyId: null, outcome: 'ignored' };
    const companyId = await this.companyOf(intent);
    if (!companyId) return { companyId: null, outcome: 'unmatched' };
    const opened = await currentEm(this.orm).findOne(TopupSession, { paymentIntentId: String(intent.id) });
    await this.creditTopup(companyId, metadata, String(intent.id), { amount: intent.amount_received, currency: intent.currency }, opened);
    return { companyId, outcome: 'applied' };
  }

  /**
   * The credits of a paid top-up: once per top-up, whichever of its two
   * events comes first. The key is the top-up id Atrium put in both events'
   * metadata; a session opened before there were such ids keeps the key it
   * had, its payment intent (else its session id), so a replay of its events
   * never credits twice. The count in metadata must be a plain integer
   * within the top-up bounds, match the checkout Atrium opened when it is
   * known, and have been paid for: the amount and currency received are
   * what that many credits cost at TOPUP_PRICE_PER_CREDIT (the checkout's own
   * amount when known). Anything else is credited never (Unusable).
   */
  private async creditTopup(companyId: string, metadata: Obj, paymentIntent: string, paid: { amount: unknown; currency: unknown }, opened: TopupSession | null): Promise<void> {
    const unusable = (why: string) => new Unusable(`top-up ${paymentIntent}: ${why}; nothing credited`, companyId);
    const topupId = metadata.topup_id;
    if (topupId !== undefined && (typeof topupId !== 'string' || !UUID_PATTERN.test(topupId))) throw unusable('metadata.topup_id is not an id Atrium writes');
    const text = metadata.credits;
    const { topupMinCredits: min, topupMaxCredits: max } = this.payments;
    if (typeof text !== 'string' || !CREDITS_TEXT.test(text)) throw unusable('metadata.credits is not a decimal integer');
    const credits = Number(text);
    if (credits < min || credits > max) throw unusable(`metadata.credits ${credits} is outside ${min} to ${max}`);
    if (opened && (opened.companyId !== companyId || opened.credits !== credits)) throw unusable(`metadata says ${credits} credits, the checkout Atrium opened sold ${opened.credits}`);
    const currency = opened?.currency ?? this.ledger.currency;
    const expected = opened?.amount ?? minorFromMicros(credits * parseMoney(this.payments.topupPricePerCredit, ['TOPUP_PRICE_PER_CREDIT']), currency);
    if (typeof paid.currency !== 'string' || paid.currency.toLowerCase() !== currency || paid.amount !== expected) {
      throw unusable(`paid ${String(paid.amount)} ${String(paid.currency)}, ${credits} credits cost ${expected} ${currency}`);
    }
    try {
      await this.ledger.topUp({ companyId, credits, key: typeof topupId === 'string' ? `id:${topupId}` : paymentIntent });
    } catch (error) {
      // The balance's maximum (MAX_BALANCE): the same event would be refused on every retry.
      if (error instanceof AppError && error.code === 'validation_error') throw unusable(error.message);
      throw error;
    }
  }

  private async subscriptionStarted(session: Obj, created: Date): Promise<Applied> {
    const companyId = await this.companyOf(session);
    const subscriptionId = idOf(session.subscription);
    const customerId = idOf(session.customer);
    if (!companyId || !subscriptionId || !customerId) return { companyId, outcome: 'unmatched' };
    if (session.payment_status === 'unpaid') {
      // A delayed payment method: no plan and no credits before the money (async_payment_succeeded or the first paid invoice).
      const sub = await this.subscriptionRow(companyId, customerId);
      if (isStale(sub, created) || isLive(sub) || ended(sub, subscriptionId)) return { companyId, outcome: 'ignored' };
      Object.assign(sub, { subscriptionId, status: 'incomplete', lastEventAt: created });
      return { companyId, outcome: 'applied' };
    }
    const expanded = typeof session.subscription === 'object' && session.subscription ? (session.subscription as Obj) : null;
    const planId = this.planOf(expanded ? subscriptionPrice(expanded).price : null, metadataOf(session)) ?? this.accounts.planIdOf(companyId) ?? DEFAULT_PLAN;
    const period = expanded ? subscriptionPeriod(expanded) : { start: null, end: null };
    const start = period.start ?? created;
    const end = period.end ?? addMonth(start);
    const sub = await this.subscriptionRow(companyId, customerId);
    if (ended(sub, subscriptionId)) return { companyId, outcome: 'ignored' };
    if (isStale(sub, created)) return { companyId, outcome: 'stale' };
    Object.assign(sub, { subscriptionId, planId, status: expanded ? statusOf(expanded.status) : 'active', periodStart: start, periodEnd: end, lastEventAt: created });
    await this.accounts.setPlan(companyId, planId);
    const credits = this.plans.plan(planId)?.monthlyCredits ?? 0;
    const allocated = await this.ledger.allocate({ companyId, periodKey: firstPeriodKey(subscriptionId), periodStart: start, periodEnd: end, credits });
    await this.mail(companyId, 'subscription_started', sub, allocated ? credits : null);
    return { companyId, outcome: 'applied' };
  }

  private async invoicePaid(invoice: Obj, created: Date): Promise<Applied> {
    const { id: subscriptionId, metadata } = invoiceSubscription(invoice);
    const companyId = await this.companyOf(invoice, metadata);
    if (!companyId) return { companyId, outcome: 'unmatched' };
    await this.mirror(companyId, invoice, created);
    const customerId = idOf(invoice.customer);
    if (!subscriptionId || !customerId) return { companyId, outcome: 'applied' };
    // Only a subscription's first invoice and its renewals begin a period. A mid-period change's
    // prorated invoice (subscription_update), a threshold or a manual invoice is mirrored, and that
    // is all: its lines run from the change to the period's end, and taking them for a new period
    // would refill the spent monthly credits and reset the period's spend.
    const first = invoice.billing_reason === 'subscription_create';
    if (!first && invoice.billing_reason !== 'subscription_cycle') return { companyId, outcome: 'applied' };
    const period = invoicePeriod(invoice);
    const sub = await this.subscriptionRow(companyId, customerId);
    if (otherThanLive(sub, subscriptionId) || ended(sub, subscriptionId)) return { companyId, outcome: 'ignored' };
    if (isStale(sub, created)) return { companyId, outcome: 'stale' };
    // A late payment of an older invoice (its period ended before the one on record) is mirrored, and that is all:
    // the period never moves backwards, and the ledger would not allocate an older period anyway.
    if (sub.subscriptionId === subscriptionId && period.end && sub.periodStart && period.end <= sub.periodStart) return { companyId, outcome: 'stale' };
    const planId = this.planOf(period.price, metadata) ?? sub.planId;
    Object.assign(sub, { subscriptionId, planId, status: 'active', lastEventAt: created });
    if (period.start) sub.periodStart = period.start;
    if (period.end) sub.periodEnd = period.end;
    await this.accounts.setPlan(companyId, planId);
    const start = period.start ?? created;
    const credits = this.plans.plan(planId)?.monthlyCredits ?? 0;
    const allocated = await this.ledger.allocate({
      companyId,
      periodKey: first ? firstPeriodKey(subscriptionId) : periodKey(subscriptionId, start),
      periodStart: start,
      periodEnd: period.end ?? addMonth(start),
      credits,
    });
    if (allocated && !first) await this.mail(companyId, 'subscription_renewed', sub, credits);
    return { companyId, outcome: 'applied' };
  }

  private async invoiceFailed(invoice: Obj, created: Date): Promise<Applied> {
    const { id: subscriptionId, metadata } = invoiceSubscription(invoice);
    const companyId = await this.companyOf(invoice, metadata);
    if (!companyId) return { companyId, outcome: 'unmatched' };
    await this.mirror(companyId, invoice, created);
    const customerId = idOf(invoice.customer);
    // A one-off invoice (manual, or of no subscription) is mirrored and that is all: its failure says nothing of the
    // subscription, and the payment_failed mail would tell the owners their subscription is past due.
    if (!customerId || !subscriptionId || invoice.billing_reason === 'manual') return { companyId, outcome: 'applied' };
    const sub = await this.subscriptionRow(companyId, customerId);
    if (another(sub, subscriptionId) || ended(sub, subscriptionId)) return { companyId, outcome: 'ignored' };
    if (isStale(sub, created)) return { companyId, outcome: 'stale' };
    Object.assign(sub, { status: 'past_due', lastEventAt: created });
    await this.mail(companyId, 'payment_failed', sub, null);
    return { companyId, outcome: 'applied' };
  }

  private async subscriptionUpdated(object: Obj, created: Date): Promise<Applied> {
    const companyId = await this.companyOf(object);
    const customerId = idOf(object.customer);
    if (!companyId || !customerId) return { companyId, outcome: 'unmatched' };
    const sub = await this.subscriptionRow(companyId, customerId);
    const status = statusOf(object.status);
    // Another subscription than the one on record takes over only as a live one replacing none that is live.
    if (another(sub, String(object.id)) && (isLive(sub) || !LIVE_STATUSES.includes(status))) {
      return { companyId, outcome: 'ignored' };
    }
    if (ended(sub, String(object.id))) return { companyId, outcome: 'ignored' };
    if (isStale(sub, created)) return { companyId, outcome: 'stale' };
    const wasLive = isLive(sub);
    const { price, quantity, unitAmount, currency } = subscriptionPrice(object);
    // Checked before anything changes: a seat count the API cannot show (negative, fractional, huge) is ignored whole,
    // answered 200 (a retry carries the same payload), and the reason recorded.
    if (quantity !== null && !(Number.isInteger(quantity) && (quantity as number) >= 0 && (quantity as number) <= MAX_SEATS)) {
      return { companyId, outcome: 'ignored', reason: `items.data[0].quantity ${clipText(String(quantity), 40)} is not an integer from 0 to ${MAX_SEATS}` };
    }
    const seats = (quantity as number | null) ?? sub.seats;
    const recurring = unitAmount !== null && currency ? { unitAmount, priceCurrency: currency } : { unitAmount: sub.unitAmount, priceCurrency: sub.priceCurrency };
    // MRR is the price times the seats: it must stay an amount the API can show.
    if (recurring.unitAmount !== null && recurring.priceCurrency && microsFromMinor(recurring.unitAmount, recurring.priceCurrency) * seats > MAX_AMOUNT_MICROS) {
      return { companyId, outcome: 'ignored', reason: `items.data[0].price.unit_amount times its quantity ${seats} is past the largest amount` };
    }
    const period = subscriptionPeriod(object);
    Object.assign(sub, recurring);
    const planId = this.planOf(price, metadataOf(object)) ?? sub.planId;
    Object.assign(sub, {
      subscriptionId: String(object.id),
      planId,
      status,
      seats,
      cancelAtPeriodEnd: object.cancel_at_period_end === true,
      trialEnd: time(object.trial_end),
      lastEventAt: created,
    });
    // Never backwards: an update that reports an older period than the one on record keeps the newer.
    if (period.end && (!sub.periodEnd || period.end >= sub.periodEnd)) {
      if (period.start) sub.periodStart = period.start;
      sub.periodEnd = period.end;
    }
    // Only a subscription that is paid for (or trialing) gives its plan; an incomplete one waits for its payment.
    if (isLive(sub)) await this.accounts.setPlan(companyId, planId);
    // One that stops being live (unpaid, paused, incomplete_expired, canceled) is not paid for: back on the default
    // plan, as a deletion does, or the monthly job would give the paid plan's credits to a company that is not paying.
    else if (wasLive) await this.accounts.setPlan(companyId, DEFAULT_PLAN);
    return { companyId, outcome: 'applied' };
  }

  private async subscriptionDeleted(object: Obj, created: Date): Promise<Applied> {
    const companyId = await this.companyOf(object);
    const customerId = idOf(object.customer);
    if (!companyId || !customerId) return { companyId, outcome: 'unmatched' };
    const sub = await this.subscriptionRow(companyId, customerId);
    // The end of another subscription (a duplicate, an old one) leaves the company's own as it is.
    // A repeat of its end (another event id) mails no one twice.
    if (another(sub, String(object.id)) || ended(sub, String(object.id))) return { companyId, outcome: 'ignored' };
    if (isStale(sub, created)) return { companyId, outcome: 'stale' };
    Object.assign(sub, { status: 'cancelled', cancelAtPeriodEnd: false, lastEventAt: created });
    await this.mail(companyId, 'subscription_cancelled', sub, null);
    // Back on the default plan: the monthly job gives its calendar-month credits from the next month.
    await this.accounts.setPlan(companyId, DEFAULT_PLAN);
    return { companyId, outcome: 'applied' };
  }

  /** A delayed payment failed: nothing was activated for it; the incomplete subscription on record is marked expired. */
  private async checkoutFailed(session: Obj, created: Date): Promise<Applied> {
    const companyId = await this.companyOf(session);
    if (!companyId) return { companyId, outcome: 'unmatched' };
    const subscriptionId = idOf(session.subscription);
    const sub = subscriptionId ? await currentEm(this.orm).findOne(Subscription, { companyId, subscriptionId }) : null;
    if (sub && sub.status === 'incomplete' && !isStale(sub, created)) Object.assign(sub, { status: 'incomplete_expired', lastEventAt: created });
    this.log.info({ companyId, session: String(session.id), subscriptionId }, 'a delayed checkout payment failed; nothing was activated');
    return { companyId, outcome: 'applied' };
  }

  private async trialEnding(object: Obj, created: Date): Promise<Applied> {
    const companyId = await this.companyOf(object);
    const customerId = idOf(object.customer);
    if (!companyId || !customerId) return { companyId, outcome: 'unmatched' };
    const sub = await this.subscriptionRow(companyId, customerId);
    // The same checks as the other subscription events: another subscription's trial is not the company's.
    if (another(sub, String(object.id)) || ended(sub, String(object.id))) return { companyId, outcome: 'ignored' };
    if (isStale(sub, created)) return { companyId, outcome: 'stale' };
    sub.trialEnd = time(object.trial_end) ?? sub.trialEnd;
    sub.lastEventAt = created;
    await this.mail(companyId, 'trial_ending_in_2d', sub, null);
    return { companyId, outcome: 'applied' };
  }

  /** The company's subscription row, created on its first event (the processor's customer id names it from then on). */
  private async subscriptionRow(companyId: string, customerId: string): Promise<Subscription> {
    const em = currentEm(this.orm);
    const owner = await em.findOne(Subscription, { customerId, companyId: { $ne: companyId } });
    if (owner) {
      // One Stripe customer pays for one company: never move it silently (nor drop the event as seen).
      throw new AppError('conflict', `Stripe customer ${customerId} already belongs to another company; the event was not applied`);
    }
    const existing = await em.findOne(Subscription, { companyId });
    if (existing) {
      existing.customerId = customerId;
      return existing;
    }
    return em.create(Subscription, { companyId, customerId, planId: this.accounts.planIdOf(companyId) ?? DEFAULT_PLAN, status: 'incomplete' });
  }

  /** The invoice as the processor last reported it; an older event does not overwrite a newer one. */
  private async mirror(companyId: string, object: Obj, created: Date): Promise<void> {
    const em = currentEm(this.orm);
    const id = String(object.id);
    const invoice = (await em.findOne(Invoice, { id })) ?? em.create(Invoice, {
      id,
      companyId,
      status: 'draft',
      amountDue: 0,
      amountPaid: 0,
      currency: 'usd',
      createdAt: time(object.created) ?? created,
    });
    if (invoice.lastEventAt && created < invoice.lastEventAt) return;
    const period = invoicePeriod(object);
    // Only what the API can serve as documented: a value outside it keeps what was stored (and is logged).
    const currency = currencyOf(object.currency) ?? invoice.currency;
    const status = typeof object.status === 'string' && INVOICE_STATUSES.includes(object.status) ? object.status : invoice.status;
    const amountDue = amountOf(object.amount_due, currency);
    const amountPaid = amountOf(object.amount_paid, currency);
    const number = str(object.number);
    if (status !== object.status || amountDue === null || amountPaid === null || currency !== object.currency) {
      this.log.warn({ invoice: id, companyId }, 'an invoice event carries a status, amount or currency outside what Stripe sends; those members were not stored');
    }
    Object.assign(invoice, {
      number: number && number.length <= 255 ? number : null,
      status,
      amountDue: amountDue ?? (currency === invoice.currency ? invoice.amountDue : 0),
      amountPaid: amountPaid ?? (currency === invoice.currency ? invoice.amountPaid : 0),
      currency,
      periodStart: period.start ?? time(object.period_start),
      periodEnd: period.end ?? time(object.period_end),
      hostedUrl: httpsUrl(object.hosted_invoice_url),
      billingReason: typeof object.billing_reason === 'string' && /^[a-z_]{1,64}$/.test(object.billing_reason) ? object.billing_reason : invoice.billingReason,
      lastEventAt: created,
    });
  }

  /** One mail per owner, in the event's transaction (the outbox): a rolled-back event sends none. */
  private async mail(companyId: string, kind: BillingMailKind, sub: Subscription, credits: number | null): Promise<void> {
    const company = (await this.accounts.companiesByIds([companyId]))[0];
    const plan = this.plans.plan(sub.planId)?.name ?? sub.planId;
    for (const owner of await this.accounts.ownersOf(companyId)) {
      await this.mailer.enqueue(
        owner.email,
        billingMail(kind, { name: owner.name, company: company?.name ?? '', plan, periodEnd: sub.periodEnd, trialEnd: sub.trialEnd, credits }),
      );
    }
  }
}

function isStale(sub: Subscription, created: Date): boolean {
  return sub.lastEventAt !== null && created < sub.lastEventAt;
}

export function addMonth(date: Date): Date {
  const next = new Date(date);
  next.setUTCMonth(next.getUTCMonth() + 1);
  return next;
}
