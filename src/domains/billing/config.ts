import { ConfigError, int, type Env } from '../../env';

/** Settings of the billing domain (BILLING_*, CREDIT_*). */
export interface BillingConfig {
  /** The currency of prices, budgets and spend, ISO 4217 lowercase (BILLING_CURRENCY, usd). */
  currency: string;
  /** A hold not committed or released after this many seconds is released by a job (CREDIT_HOLD_TIMEOUT_SECONDS, 900). */
  holdTimeoutSeconds: number;
}

export function loadBillingConfig(env: Env): BillingConfig {
  const currency = (env.BILLING_CURRENCY?.trim() || 'usd').toLowerCase();
  if (!/^[a-z]{3}$/.test(currency)) throw new ConfigError(`BILLING_CURRENCY must be a three-letter ISO 4217 code, got "${env.BILLING_CURRENCY}"`);
  return { currency, holdTimeoutSeconds: int(env, 'CREDIT_HOLD_TIMEOUT_SECONDS', 900, 1) };
}
