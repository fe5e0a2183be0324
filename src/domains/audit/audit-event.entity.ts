import { DateTimeType, Entity, Index, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';
import { uuidv7 } from '../../ids';

export type ActorType = 'user' | 'api_key' | 'system' | 'anonymous';

/**
 * An append-only record of a security-relevant action. Ids are kept as plain
 * columns, not foreign keys, so the trail outlives the users and keys it names.
 */
@Entity({ tableName: 'audit_events' })
@Index({ properties: ['companyId', 'createdAt'] })
export class AuditEvent {
  [OptionalProps]?: 'id' | 'createdAt' | 'companyId' | 'actorId' | 'actorLabel' | 'targetType' | 'targetId' | 'ip' | 'requestId' | 'data';

  @PrimaryKey({ type: 'uuid' })
  /** Time-ordered, so id breaks ties between events of the same millisecond. */
  id: string = uuidv7();

  @Property({ type: 'uuid', nullable: true })
  companyId: string | null = null;

  @Property({ type: 'string', length: 64 })
  action!: string;

  @Property({ type: 'string', length: 16 })
  actorType!: ActorType;

  @Property({ type: 'string', length: 64, nullable: true })
  actorId: string | null = null;

  /** Email or key name at the time of the action. */
  @Property({ type: 'string', length: 320, nullable: true })
  actorLabel: string | null = null;

  @Property({ type: 'string', length: 32, nullable: true })
  targetType: string | null = null;

  @Property({ type: 'string', length: 64, nullable: true })
  targetId: string | null = null;

  @Property({ type: 'string', length: 64, nullable: true })
  ip: string | null = null;

  @Property({ type: 'string', length: 128, nullable: true })
  requestId: string | null = null;

  @Property({ type: 'json', nullable: true })
  data: Record<string, unknown> | null = null;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();
}
