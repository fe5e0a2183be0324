import { ConfigError, int, list, type Env } from '../../env';
import { MAX_BALANCE } from '../billing';

/**
 * The payment processor (STRIPE_*, TOPUP_*). Without STRIPE_SECRET_KEY and
 * STRIPE_WEBHOOK_SECRET Atrium runs on-premise: credits, plans, grants and
 * usage all work, and what needs the processor answers 503.
 */
export interface PaymentsConfig {
  stripe: StripeSettings | null;
  /** Price of one purchased credit in the billing currency, decimal (TOPUP_PRICE_PER_CREDIT, 0.01). */
  topupPricePerCredit: string;
  /** The fewest and most credits one top-up buys (TOPUP_MIN_CREDITS 100, TOPUP_MAX_CREDITS 1000000). */
  topupMinCredits: number;
  topupMaxCredits: number;
}

export interface StripeSettings {
  secretKey: string;
  webhookSecret: string;
  /** Plan id by Stripe price id, and back. */
  planByPrice: ReadonlyMap<string, string>;
  priceByPlan: ReadonlyMap<string, string>;
  /** Where the SDK sends its calls (STRIPE_API_URL; tests point it at a loopback fake). */
  host: string;
  port: number;
  protocol: 'http' | 'https';
}

export function loadPaymentsConfig(env: Env): PaymentsConfig {
  const secretKey = env.STRIPE_SECRET_KEY?.trim() ?? '';
  const webhookSecret = env.STRIPE_WEBHOOK_SECRET?.trim() ?? '';
  if (Boolean(secretKey) !== Boolean(webhookSecret)) {
    throw new ConfigError('Set both STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET, or neither (on-premise mode)');
  }
  const planByPrice = new Map<string, string>();
  const priceByPlan = new Map<string, string>();
  for (const pair of list(env, 'STRIPE_PRICES')) {
    const [plan, price] = pair.split(':').map((s) => s.trim());
    if (!plan || !price) throw new ConfigError(`STRIPE_PRICES must be plan:price pairs separated by commas, got "${pair}"`);
    planByPrice.set(price, plan);
    priceByPlan.set(plan, price);
  }
  const apiUrl = env.STRIPE_API_URL?.trim() || 'https://api.stripe.com';
  let url: URL;
  try {
    url = new URL(apiUrl);
  } catch {
    throw new ConfigError(`STRIPE_API_URL must be a URL, got "${apiUrl}"`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ConfigError(`STRIPE_API_URL must be http(s), got "${apiUrl}"`);
  const protocol = url.protocol === 'http:' ? 'http' : 'https';
  const price = env.TOPUP_PRICE_PER_CREDIT?.trim() || '0.01';
  if (!/^\d{1,6}(\.\d{1,6})?$/.test(price) || Number(price) <= 0) throw new ConfigError(`TOPUP_PRICE_PER_CREDIT must be a positive decimal, got "${price}"`);
  // More than a balance may hold could never be credited.
  const min = int(env, 'TOPUP_MIN_CREDITS', 100, 1, MAX_BALANCE);
  const max = int(env, 'TOPUP_MAX_CREDITS', 1_000_000, 1, MAX_BALANCE);
  if (max < min) throw new ConfigError(`TOPUP_MAX_CREDITS (${max}) must be at least TOPUP_MIN_CREDITS (${min})`);
  return {
    stripe: secretKey
      ? { secretKey, webhookSecret, planByPrice, priceByPlan, host: url.hostname, port: Number(url.port || (protocol === 'http' ? 80 : 443)), protocol }
      : null,
    topupPricePerCredit: price,
    topupMinCredits: min,
    topupMaxCredits: max,
  };
}
