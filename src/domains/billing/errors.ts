import { defineErrors } from '../../errors/catalog';

export const billingErrors = defineErrors({
  /** The problem carries `required` and `balance`. */
  insufficient_credits: { status: 402, title: 'Insufficient credits' },
  /** The period's spend reached the company's spending budget; the problem carries `budget` and `spend`. */
  budget_exhausted: { status: 402, title: 'Budget exhausted' },
  hold_not_found: { status: 404, title: 'Credit hold not found' },
  /** A committed hold cannot be released, nor a released one committed. */
  hold_settled: { status: 409, title: 'Credit hold already settled' },
});

declare module '../../errors/catalog' {
  interface ErrorCodes extends Record<keyof typeof billingErrors, ErrorEntry> {}
}
