import { DateTimeType, Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { User } from './user.entity';

/**
 * What a one-time token is for. `password_reset` (password-reset.service.ts);
 * other flows that mail a single-use link to a user (email change, account
 * deletion) add their purpose here and use one-time-tokens.ts.
 */
export type OneTimeTokenPurpose = 'password_reset' | (string & {});

/**
 * A single-use token mailed to a user. Only the SHA-256 of the token (32
 * random bytes) is stored; `usedAt` is set by one conditional UPDATE, so of
 * concurrent uses exactly one wins. An invalidated token gets `expiresAt` set
 * to the moment it was invalidated. `data` carries purpose-specific values
 * (never secrets), e.g. the new address of an email change.
 */
@Entity({ tableName: 'one_time_tokens' })
@Index({ properties: ['user', 'purpose', 'createdAt'] })
@Index({ properties: ['expiresAt'] })
export class OneTimeToken {
  [OptionalProps]?: 'id' | 'createdAt' | 'usedAt' | 'data';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => User, { deleteRule: 'cascade' })
  user!: User;

  @Property({ type: 'string', length: 32 })
  purpose!: OneTimeTokenPurpose;

  @Property({ type: 'string', length: 64, unique: true })
  tokenHash!: string;

  @Property({ type: DateTimeType })
  expiresAt!: Date;

  @Property({ type: DateTimeType, nullable: true })
  usedAt: Date | null = null;

  @Property({ type: 'json', nullable: true })
  data: Record<string, unknown> | null = null;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();
}
