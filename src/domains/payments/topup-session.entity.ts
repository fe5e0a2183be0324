import { DateTimeType, Entity, OptionalProps, PrimaryKey, Property, Unique } from '@mikro-orm/core';

/** A Checkout Session that sells credits; the Idempotency-Key it was asked with gives it back instead of a second one. */
@Entity({ tableName: 'topup_sessions' })
@Unique({ name: 'topup_sessions_company_id_idempotency_key_unique', properties: ['companyId', 'idempotencyKey'] })
export class TopupSession {
  [OptionalProps]?: 'idempotencyKey' | 'requestHash' | 'paymentIntentId' | 'completedAt' | 'createdAt';

  /** The processor's session id. */
  @PrimaryKey({ type: 'string', length: 255 })
  id!: string;

  @Property({ type: 'uuid' })
  companyId!: string;

  @Property({ type: 'string', length: 255, nullable: true })
  idempotencyKey: string | null = null;

  @Property({ type: 'integer' })
  credits!: number;

  /** What the buyer pays, in the currency's minor unit. */
  @Property({ type: 'integer' })
  amount!: number;

  @Property({ type: 'string', length: 3 })
  currency!: string;

  @Property({ type: 'string', length: 4096 })
  url!: string;

  @Property({ type: DateTimeType })
  expiresAt!: Date;

  @Property({ type: 'uuid' })
  requestedBy!: string;

  /** A hash of what was asked under the Idempotency-Key (credits and return URLs): the same key with anything else is 409. */
  @Property({ type: 'string', length: 64, nullable: true })
  requestHash: string | null = null;

  @Property({ type: 'string', length: 255, nullable: true })
  paymentIntentId: string | null = null;

  @Property({ type: DateTimeType, nullable: true })
  completedAt: Date | null = null;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();
}
