import { DateTimeType, Entity, Index, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';

/** The processor's invoice, mirrored from its events (amounts in the currency's minor unit, as the processor reports them). */
@Entity({ tableName: 'invoices' })
@Index({ name: 'invoices_company_id_created_at_index', properties: ['companyId', 'createdAt'] })
export class Invoice {
  [OptionalProps]?: 'number' | 'hostedUrl' | 'periodStart' | 'periodEnd' | 'lastEventAt' | 'billingReason';

  /** The processor's invoice id. */
  @PrimaryKey({ type: 'string', length: 255 })
  id!: string;

  @Property({ type: 'uuid' })
  companyId!: string;

  @Property({ type: 'string', length: 255, nullable: true })
  number: string | null = null;

  @Property({ type: 'string', length: 32 })
  status!: string;

  @Property({ type: 'integer' })
  amountDue!: number;

  @Property({ type: 'integer' })
  amountPaid!: number;

  @Property({ type: 'string', length: 3 })
  currency!: string;

  @Property({ type: DateTimeType, nullable: true })
  periodStart: Date | null = null;

  @Property({ type: DateTimeType, nullable: true })
  periodEnd: Date | null = null;

  @Property({ type: 'string', length: 2048, nullable: true })
  hostedUrl: string | null = null;

  /** subscription_create, subscription_cycle, subscription_update (proration), manual, ...; null when not reported. */
  @Property({ type: 'string', length: 64, nullable: true })
  billingReason: string | null = null;

  /** When the processor created the invoice. */
  @Property({ type: DateTimeType })
  createdAt!: Date;

  @Property({ type: DateTimeType, nullable: true })
  lastEventAt: Date | null = null;
}
