import { AppError } from './errors/catalog';

/**
 * Money inside Atrium is an integer of micro-units (millionths of the
 * currency's major unit): a token's cost is a fraction of a cent, and sums of
 * integers are exact. The API shows money as a decimal string in the major
 * unit ("12.50", "0.001250"), never a float. It lives in the kernel because
 * billing (budgets, spend) and the catalog (model prices) both read and write
 * it, and the catalog sits below billing.
 */
export const MICROS_PER_UNIT = 1_000_000;

/** A decimal amount as the API takes it: at most 9 digits before the point and 6 after (the REST pattern and the parser's). */
export const MONEY_PATTERN = '^\\d{1,9}(\\.\\d{1,6})?$';

/** The decimal string of an amount in micro-units: at least two decimals, at most six ("12.50", "0.00125"). */
export function formatMicros(micros: number): string {
  const negative = micros < 0;
  const abs = Math.abs(micros);
  const whole = Math.floor(abs / MICROS_PER_UNIT);
  let fraction = String(abs % MICROS_PER_UNIT).padStart(6, '0').replace(/0+$/, '');
  if (fraction.length < 2) fraction = fraction.padEnd(2, '0');
  return `${negative ? '-' : ''}${whole}.${fraction}`;
}

const DECIMAL = new RegExp(MONEY_PATTERN);

/** Micro-units of a non-negative decimal string of the major unit ("250", "12.5", "0.000001"); 422 naming `loc` otherwise. */
export function parseMoney(text: string, loc: (string | number)[]): number {
  const trimmed = typeof text === 'string' ? text.trim() : '';
  if (!DECIMAL.test(trimmed)) {
    throw AppError.validation([{ loc, msg: 'must be a decimal amount with at most 9 digits before and 6 after the point', type: 'value_error.decimal' }]);
  }
  const [whole, fraction = ''] = trimmed.split('.');
  return Number(whole) * MICROS_PER_UNIT + Number(fraction.padEnd(6, '0'));
}
