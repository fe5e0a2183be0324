import { DateTimeType, Entity, OptionalProps, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { uuidv7 } from '../../ids';

/**
 * A plan change made under an Idempotency-Key, with what it answered: the
 * same key answers it again without a second change; another plan under it
 * is 409 conflict. Written in the transaction that applies the change, so
 * neither exists without the other.
 */
@Entity({ tableName: 'plan_changes' })
@Unique({ name: 'plan_changes_company_id_idempotency_key_unique', properties: ['companyId', 'idempotencyKey'] })
export class PlanChangeRecord {
  [OptionalProps]?: 'id' | 'checkoutUrl' | 'createdAt';

  @PrimaryKey({ type: 'uuid' })
  id: string = uuidv7();

  @Property({ type: 'uuid' })
  companyId!: string;

  @Property({ type: 'string', length: 255 })
  idempotencyKey!: string;

  @Property({ type: 'string', length: 64 })
  planId!: string;

  @Property({ type: 'string', length: 64 })
  previousPlanId!: string;

  /** now, next_period or checkout (PlanChange.effective). */
  @Property({ type: 'string', length: 16 })
  effective!: 'now' | 'next_period' | 'checkout';

  @Property({ type: 'integer' })
  creditsAdded!: number;

  /** The processor's checkout to subscribe (effective checkout). */
  @Property({ type: 'string', length: 4096, nullable: true })
  checkoutUrl: string | null = null;

  @Property({ type: 'uuid' })
  requestedBy!: string;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();
}
