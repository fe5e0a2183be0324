import { DateTimeType, Entity, Index, OptionalProps, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/**
 * One metered use of a model (a chat turn, a research step, ...): what billing
 * records once it meters usage. Plain id columns, no foreign keys: usage is
 * billing history and outlives the user or API key that caused it (their ids
 * stay, as in the audit trail). Read per company and time range.
 */
@Entity({ tableName: 'usage_records' })
@Index({ properties: ['companyId', 'createdAt'] })
export class UsageRecord {
  [OptionalProps]?: 'id' | 'createdAt' | 'userId' | 'apiKeyId' | 'credits' | 'tokens' | 'holdId' | 'costMicros';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'uuid' })
  companyId!: string;

  /** The user who caused the use; null for API-key or system use. */
  @Property({ type: 'uuid', nullable: true })
  userId: string | null = null;

  @Property({ type: 'uuid', nullable: true })
  apiKeyId: string | null = null;

  /** The model id of the catalog (models.id). */
  @Property({ type: 'string', length: 128 })
  model!: string;

  /** What the use was for, e.g. chat, research, bulk. */
  @Property({ type: 'string', length: 64 })
  feature!: string;

  @Property({ type: 'integer' })
  credits: number = 0;

  @Property({ type: 'integer' })
  tokens: number = 0;

  /** Currency cost in micro-units of BILLING_CURRENCY: the tokens at the model's catalog price. */
  @Property({ type: 'integer' })
  costMicros: number = 0;

  /** The ledger hold this record settled: one record per hold, so a replayed commit records nothing twice. */
  @Property({ type: 'uuid', nullable: true })
  @Unique({ name: 'usage_records_hold_id_unique' })
  holdId: string | null = null;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();
}
