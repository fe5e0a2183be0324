import type { CreditBalance } from './ledger.service';

export {};

declare module '../../events/event-bus' {
  interface EventMap {
    /** A company's credit balance changed (a committed ledger write); feeds the `creditsChanged` subscription. */
    'credits.changed': { companyId: string; balance: CreditBalance };
  }
}
