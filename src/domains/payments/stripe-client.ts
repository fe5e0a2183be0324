import Stripe from 'stripe';
import type { StripeSettings } from './config';

/** The official SDK, pointed at STRIPE_API_URL; network retries left to the SDK (idempotency keys make them safe). */
export function createStripe(settings: StripeSettings): Stripe {
  return new Stripe(settings.secretKey, {
    host: settings.host,
    port: settings.port,
    protocol: settings.protocol,
    maxNetworkRetries: 2,
    timeout: 20_000,
    telemetry: false,
    appInfo: { name: 'Atrium' },
  });
}
