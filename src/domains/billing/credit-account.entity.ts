import { DateTimeType, Entity, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';

/**
 * A company's credit balance, cached: the sum of its ledger entries per
 * bucket, updated in the same transaction as every entry (so a reserve reads
 * one row, not the whole ledger). `test/ledger.test.ts` checks the sums. Also
 * the company's current allocation period, spending budget and the period's
 * spend. No foreign key: billing history outlives its company record.
 */
@Entity({ tableName: 'credit_accounts' })
export class CreditAccount {
  [OptionalProps]?: 'monthly' | 'granted' | 'purchased' | 'held' | 'periodKey' | 'periodStart' | 'periodEnd' | 'budgetMicros' | 'spendMicros';

  @PrimaryKey({ type: 'uuid' })
  companyId!: string;

  /** Credits of the current period's allocation, not yet spent or held; they expire with the period. */
  @Property({ type: 'integer' })
  monthly: number = 0;

  /** Credits a superadmin granted; they never expire. */
  @Property({ type: 'integer' })
  granted: number = 0;

  /** Credits bought with top-ups; they never expire. */
  @Property({ type: 'integer' })
  purchased: number = 0;

  /** Credits reserved by operations still running. */
  @Property({ type: 'integer' })
  held: number = 0;

  /** The allocation period: `YYYY-MM` (calendar month, UTC) or `stripe:<subscription>:<period start>`. */
  @Property({ type: 'string', length: 200, nullable: true })
  periodKey: string | null = null;

  @Property({ type: DateTimeType, nullable: true })
  periodStart: Date | null = null;

  @Property({ type: DateTimeType, nullable: true })
  periodEnd: Date | null = null;

  /** Spending budget per period in currency micro-units; null: none. */
  @Property({ type: 'integer', nullable: true })
  budgetMicros: number | null = null;

  /** Currency cost committed in the current period, in micro-units. */
  @Property({ type: 'integer' })
  spendMicros: number = 0;

  @Property({ type: DateTimeType })
  updatedAt!: Date;
}
