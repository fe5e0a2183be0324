import { DateTimeType, Entity, Index, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';

/**
 * The failed-login count of one email address, known or not (see
 * login-throttle.service.ts). The address itself is never stored: the key is
 * an HMAC-SHA-256 of the normalized email under a server secret, so the table
 * does not even reveal which addresses were tried. A row with no failures
 * left is deleted; stale rows are swept.
 */
@Entity({ tableName: 'login_throttles' })
@Index({ properties: ['lastFailureAt'] })
export class LoginThrottle {
  [OptionalProps]?: 'failures' | 'lastFailureAt' | 'blockedUntil' | 'createdAt';

  /** HMAC-SHA-256 (hex) of the normalized email. */
  @PrimaryKey({ type: 'string', length: 64 })
  keyHash!: string;

  /** Consecutive failed password attempts (an attempt counts from the moment it starts; success deletes the row). */
  @Property({ type: 'integer' })
  failures: number = 0;

  @Property({ type: DateTimeType, nullable: true })
  lastFailureAt: Date | null = null;

  /** No attempt is accepted before this time: a delay, or a lock once `failures` reached the lock threshold. */
  @Property({ type: DateTimeType, nullable: true })
  blockedUntil: Date | null = null;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();
}
