import { DateTimeType, Entity, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';

/** failed: signed and read, but unusable as it is (a top-up whose credits do not match its payment, a balance past its maximum); logged, never retried. */
export const eventOutcomes = ['applied', 'stale', 'ignored', 'unmatched', 'failed'] as const;
export type EventOutcome = (typeof eventOutcomes)[number];

/** A processor event Atrium received: its id is the key that applies it once. */
@Entity({ tableName: 'processor_events' })
export class ProcessorEvent {
  [OptionalProps]?: 'companyId' | 'reason' | 'receivedAt';

  @PrimaryKey({ type: 'string', length: 255 })
  id!: string;

  @Property({ type: 'string', length: 100 })
  type!: string;

  /** The event's own `created` time. */
  @Property({ type: DateTimeType })
  createdAt!: Date;

  @Property({ type: 'uuid', nullable: true })
  companyId: string | null = null;

  @Property({ type: 'string', length: 16 })
  outcome!: EventOutcome;

  /** Why it was ignored or failed, when its outcome does not say (an unusable seat count, an unusable top-up). */
  @Property({ type: 'string', length: 255, nullable: true })
  reason: string | null = null;

  @Property({ type: DateTimeType })
  receivedAt: Date = new Date();
}
