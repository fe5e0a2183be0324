import { DateTimeType, Entity, OptionalProps, PrimaryKey, Property, Unique } from '@mikro-orm/core';

export const subscriptionStatuses = ['trialing', 'active', 'past_due', 'unpaid', 'incomplete', 'incomplete_expired', 'paused', 'cancelled'] as const;
export type SubscriptionStatus = (typeof subscriptionStatuses)[number];

/**
 * A company's paid subscription as the processor last reported it, one per
 * company. `lastEventAt` is the `created` time of the newest event applied:
 * an older event that arrives late does not undo it.
 */
@Entity({ tableName: 'subscriptions' })
export class Subscription {
  [OptionalProps]?: 'subscriptionId' | 'seats' | 'unitAmount' | 'priceCurrency' | 'cancelAtPeriodEnd' | 'periodStart' | 'periodEnd' | 'trialEnd' | 'lastEventAt' | 'updatedAt';

  @PrimaryKey({ type: 'uuid' })
  companyId!: string;

  @Property({ type: 'string', length: 255 })
  @Unique({ name: 'subscriptions_customer_id_unique' })
  customerId!: string;

  @Property({ type: 'string', length: 255, nullable: true })
  subscriptionId: string | null = null;

  @Property({ type: 'string', length: 64 })
  planId!: string;

  @Property({ type: 'string', length: 32 })
  status!: SubscriptionStatus;

  @Property({ type: 'integer' })
  seats: number = 1;

  /** The recurring price per seat in the currency's minor unit, as the processor last reported it (MRR); null: not reported. */
  @Property({ type: 'integer', nullable: true })
  unitAmount: number | null = null;

  @Property({ type: 'string', length: 3, nullable: true })
  priceCurrency: string | null = null;

  @Property({ type: 'boolean' })
  cancelAtPeriodEnd: boolean = false;

  @Property({ type: DateTimeType, nullable: true })
  periodStart: Date | null = null;

  @Property({ type: DateTimeType, nullable: true })
  periodEnd: Date | null = null;

  @Property({ type: DateTimeType, nullable: true })
  trialEnd: Date | null = null;

  @Property({ type: DateTimeType, nullable: true })
  lastEventAt: Date | null = null;

  @Property({ type: DateTimeType, onUpdate: () => new Date() })
  updatedAt: Date = new Date();
}
