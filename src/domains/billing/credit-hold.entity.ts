import { DateTimeType, Entity, Index, OptionalProps, PrimaryKey, Property, Unique } from '@mikro-orm/core';

export const holdStatuses = ['held', 'committed', 'released'] as const;
export type HoldStatus = (typeof holdStatuses)[number];

/**
 * Credits reserved for one operation until it commits (spends up to the
 * amount) or releases them. Records which buckets it took from, so what it
 * gives back returns where it came from; a hold not settled by `expiresAt`
 * (its operation crashed) is released by the `billing.hold_expiry` job.
 */
@Entity({ tableName: 'credit_holds' })
@Unique({ name: 'credit_holds_company_id_idempotency_key_unique', properties: ['companyId', 'idempotencyKey'] })
@Index({ name: 'credit_holds_status_expires_at_index', properties: ['status', 'expiresAt'] })
export class CreditHold {
  [OptionalProps]?: 'userId' | 'apiKeyId' | 'model' | 'committedCredits' | 'settledAt';

  @PrimaryKey({ type: 'uuid' })
  id!: string;

  @Property({ type: 'uuid' })
  companyId!: string;

  /** The request id of the operation: reserving twice with it finds this hold. */
  @Property({ type: 'string', length: 300 })
  idempotencyKey!: string;

  @Property({ type: 'integer' })
  credits!: number;

  @Property({ type: 'integer' })
  monthly!: number;

  @Property({ type: 'integer' })
  granted!: number;

  @Property({ type: 'integer' })
  purchased!: number;

  /** The allocation period its monthly credits came from: returned after that period, they expire instead. */
  @Property({ type: 'string', length: 200, nullable: true })
  periodKey: string | null = null;

  @Property({ type: 'string', length: 16 })
  status!: HoldStatus;

  @Property({ type: 'uuid', nullable: true })
  userId: string | null = null;

  @Property({ type: 'uuid', nullable: true })
  apiKeyId: string | null = null;

  @Property({ type: 'string', length: 64 })
  feature!: string;

  @Property({ type: 'string', length: 128, nullable: true })
  model: string | null = null;

  /** What the commit spent. */
  @Property({ type: 'integer', nullable: true })
  committedCredits: number | null = null;

  @Property({ type: DateTimeType })
  createdAt!: Date;

  @Property({ type: DateTimeType })
  expiresAt!: Date;

  @Property({ type: DateTimeType, nullable: true })
  settledAt: Date | null = null;
}
