import { DateTimeType, Entity, Index, OptionalProps, PrimaryKey, Property, Unique } from '@mikro-orm/core';

export const creditEntryKinds = ['allocation', 'expiry', 'grant', 'revoke', 'topup', 'hold', 'commit', 'release'] as const;
export type CreditEntryKind = (typeof creditEntryKinds)[number];

/**
 * One ledger write, append-only. The four deltas say how it moved each bucket
 * of the balance (a hold moves credits from monthly/granted/purchased to
 * held; a commit takes them out of held and returns what was not spent), so
 * each bucket of `credit_accounts` is the sum of its column here. The
 * idempotency key is unique per company: replaying a write finds its entry
 * and changes nothing.
 */
@Entity({ tableName: 'credit_entries' })
@Unique({ name: 'credit_entries_company_id_idempotency_key_unique', properties: ['companyId', 'idempotencyKey'] })
@Index({ name: 'credit_entries_company_id_id_index', properties: ['companyId', 'id'] })
export class CreditEntry {
  [OptionalProps]?: 'holdId' | 'periodKey' | 'reason' | 'actorId';

  /** UUIDv7: newest first is id order. */
  @PrimaryKey({ type: 'uuid' })
  id!: string;

  @Property({ type: 'uuid' })
  companyId!: string;

  @Property({ type: 'string', length: 16 })
  kind!: CreditEntryKind;

  /** `<kind>:<key>`: the request id of a hold, the payment intent of a top-up, the period of an allocation, ... */
  @Property({ type: 'string', length: 300 })
  idempotencyKey!: string;

  /** The credits the entry is about (allocated, granted, spent, held, ...), always >= 0. */
  @Property({ type: 'integer' })
  credits!: number;

  @Property({ type: 'integer' })
  monthly!: number;

  @Property({ type: 'integer' })
  granted!: number;

  @Property({ type: 'integer' })
  purchased!: number;

  @Property({ type: 'integer' })
  held!: number;

  @Property({ type: 'uuid', nullable: true })
  holdId: string | null = null;

  @Property({ type: 'string', length: 200, nullable: true })
  periodKey: string | null = null;

  /** Why, for grants and revokes (the superadmin's words). */
  @Property({ type: 'string', length: 500, nullable: true })
  reason: string | null = null;

  /** Who: the superadmin of a grant, the user of a hold; null for the processor or the system. */
  @Property({ type: 'uuid', nullable: true })
  actorId: string | null = null;

  @Property({ type: DateTimeType })
  createdAt!: Date;
}
