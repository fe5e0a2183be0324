import { defineErrors } from '../../errors/catalog';

export const paymentsErrors = defineErrors({
  /** On-premise mode: checkout, payment methods and the webhook need STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET. */
  payment_processor_not_configured: { status: 503, title: 'Payment processor not configured' },
  /** The webhook's Stripe-Signature is missing, malformed, stale or does not match the body. */
  webhook_signature_invalid: { status: 400, title: 'Invalid webhook signature' },
  /** A correctly signed webhook body that is not an event Atrium can read (no id, type, creation time or data object). */
  webhook_event_invalid: { status: 400, title: 'Invalid webhook event' },
  /** The payment processor refused or failed a call. */
  payment_processor_error: { status: 502, title: 'Payment processor error' },
});

declare module '../../errors/catalog' {
  interface ErrorCodes extends Record<keyof typeof paymentsErrors, ErrorEntry> {}
}
