import { DateTimeType, Entity, ManyToOne, OptionalProps, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { User } from './user.entity';

/**
 * One MFA recovery code. Codes carry 120 random bits, so only their SHA-256
 * (bound to the user) is kept; `usedAt` is set by one conditional UPDATE, so
 * a code works once even under concurrent use.
 */
@Entity({ tableName: 'mfa_recovery_codes' })
@Unique({ properties: ['user', 'codeHash'] })
export class MfaRecoveryCode {
  [OptionalProps]?: 'id' | 'createdAt' | 'usedAt';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => User, { deleteRule: 'cascade' })
  user!: User;

  @Property({ type: 'string', length: 64 })
  codeHash!: string;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();

  @Property({ type: DateTimeType, nullable: true })
  usedAt: Date | null = null;
}
