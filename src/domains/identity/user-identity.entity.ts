import { DateTimeType, Entity, ManyToOne, OptionalProps, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { User } from './user.entity';

/**
 * A user's account at an identity provider: (provider, subject) is unique, so
 * an external account signs in as exactly one user. For the workplace provider
 * the subject is `<tid>:<sub>` (the tenant and the pairwise subject).
 */
@Entity({ tableName: 'user_identities' })
@Unique({ properties: ['provider', 'subject'] })
export class UserIdentity {
  [OptionalProps]?: 'id' | 'createdAt' | 'lastLoginAt' | 'email';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => User, { deleteRule: 'cascade' })
  user!: User;

  @Property({ type: 'string', length: 32 })
  provider!: string;

  @Property({ type: 'string', length: 255 })
  subject!: string;

  /** The verified email the account was linked by (or last signed in with); informational. */
  @Property({ type: 'string', length: 320, nullable: true })
  email: string | null = null;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();

  @Property({ type: DateTimeType, nullable: true })
  lastLoginAt: Date | null = null;
}
