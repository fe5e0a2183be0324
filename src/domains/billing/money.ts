import { MICROS_PER_UNIT } from '../../money';

/**
 * The amounts the payment processor reports (invoices, prices) are in the
 * currency's minor unit and are converted here into Atrium's micro-units
 * (src/money.ts, which holds the decimal parser and formatter).
 */
export { MICROS_PER_UNIT, formatMicros, parseMoney } from '../../money';

/** Currencies without a minor unit, as the processor lists them (an amount of 500 JPY is 500). */
const ZERO_DECIMAL = new Set(['bif', 'clp', 'djf', 'gnf', 'jpy', 'kmf', 'krw', 'mga', 'pyg', 'rwf', 'ugx', 'vnd', 'vuv', 'xaf', 'xof', 'xpf']);

/** Currencies with three decimals, as the processor lists them (an amount of 4900 BHD minor units is 4.900). */
const THREE_DECIMAL = new Set(['bhd', 'jod', 'kwd', 'omr', 'tnd']);

/** Micro-units in one minor unit of the currency. */
function microsPerMinor(currency: string): number {
  const code = currency.toLowerCase();
  if (ZERO_DECIMAL.has(code)) return MICROS_PER_UNIT;
  return THREE_DECIMAL.has(code) ? MICROS_PER_UNIT / 1000 : MICROS_PER_UNIT / 100;
}

/** Micro-units of an amount in the currency's minor unit (cents for usd). */
export function microsFromMinor(amount: number, currency: string): number {
  return amount * microsPerMinor(currency);
}

/** The currency's minor units of an amount in micro-units, rounded to the nearest (what a processor can charge). */
export function minorFromMicros(micros: number, currency: string): number {
  return Math.round(micros / microsPerMinor(currency));
}
