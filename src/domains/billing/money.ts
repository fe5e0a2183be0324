import { AppError } from '../../errors/catalog';

/**
 * Money inside Atrium is an integer of micro-units (millionths of the
 * currency's major unit): a token's cost is a fraction of a cent, and sums of
 * integers are exact. The API shows money as a decimal string in the major
 * unit ("12.50", "0.001250"), never a float. Amounts the payment processor
 * reports (invoices, prices) are in the currency's minor unit and are
 * converted here.
 */
export const MICROS_PER_UNIT = 1_000_000;

/** The decimal string of an amount in micro-units: at least two decimals, at most six ("12.50", "0.00125"). */
export function formatMicros(micros: number): string {
  const negative = micros < 0;
  const abs = Math.abs(micros);
  const whole = Math.floor(abs / MICROS_PER_UNIT);
  let fraction = String(abs % MICROS_PER_UNIT).padStart(6, '0').replace(/0+$/, '');
  if (fraction.length < 2) fraction = fraction.padEnd(2, '0');
  return `${negative ? '-' : ''}${whole}.${fraction}`;
}

const DECIMAL = /^(\d{1,9})(?:\.(\d{1,6}))?$/;

/** Micro-units of a non-negative decimal string of the major unit ("250", "12.5", "0.000001"); 422 naming `loc` otherwise. */
export function parseMoney(text: string, loc: (string | number)[]): number {
  const match = DECIMAL.exec(text.trim());
  if (!match) {
    throw AppError.validation([{ loc, msg: 'must be a decimal amount with at most 9 digits before and 6 after the point', type: 'value_error.decimal' }]);
  }
  return Number(match[1]) * MICROS_PER_UNIT + Number((match[2] ?? '').padEnd(6, '0'));
}

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
