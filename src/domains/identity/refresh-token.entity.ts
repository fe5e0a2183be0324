import { DateTimeType, Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { Session } from './session.entity';

/**
 * One link of a session's refresh chain. Only the SHA-256 of the token is kept;
 * `usedAt` is set by a single conditional UPDATE so that one presentation wins.
 */
@Entity({ tableName: 'refresh_tokens' })
@Index({ properties: ['session'] })
export class RefreshToken {
  [OptionalProps]?: 'id' | 'createdAt' | 'usedAt';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Session, { deleteRule: 'cascade' })
  session!: Session;

  @Property({ type: 'string', length: 64, unique: true })
  tokenHash!: string;

  @Property({ type: DateTimeType })
  expiresAt!: Date;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();

  @Property({ type: DateTimeType, nullable: true })
  usedAt: Date | null = null;
}
