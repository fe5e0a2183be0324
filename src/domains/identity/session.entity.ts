import { DateTimeType, Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { Company } from './company.entity';
import { User } from './user.entity';

/** One sign-in: the access tokens it issues carry its id and die with it. */
@Entity({ tableName: 'sessions' })
@Index({ properties: ['user', 'revokedAt'] })
export class Session {
  [OptionalProps]?: 'id' | 'createdAt' | 'lastSeenAt' | 'revokedAt' | 'revokedReason' | 'ip' | 'userAgent' | 'cookieTokenHash';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => User, { deleteRule: 'cascade' })
  user!: User;

  @ManyToOne(() => Company, { deleteRule: 'cascade' })
  company!: Company;

  @Property({ type: 'string', length: 64, nullable: true })
  ip: string | null = null;

  @Property({ type: 'string', length: 512, nullable: true })
  userAgent: string | null = null;

  /** When the user last proved who they are (login; step-up later). */
  @Property({ type: DateTimeType })
  authenticatedAt!: Date;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();

  @Property({ type: DateTimeType })
  lastSeenAt: Date = new Date();

  /** End of the refresh chain: 30 days after the last rotation. */
  @Property({ type: DateTimeType })
  expiresAt!: Date;

  @Property({ type: DateTimeType, nullable: true })
  revokedAt: Date | null = null;

  @Property({ type: 'string', length: 64, nullable: true })
  revokedReason: string | null = null;

  /**
   * SHA-256 of the `service_token` cookie of a browser (single sign-on)
   * session; null for token-only sessions. The cookie is valid as long as the
   * session: it dies with the session's revocation or expiry.
   */
  @Property({ type: 'string', length: 64, nullable: true, unique: true })
  cookieTokenHash: string | null = null;
}
