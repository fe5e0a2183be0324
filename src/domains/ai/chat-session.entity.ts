import { DateTimeType, Entity, ManyToOne, OptionalProps, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { uuidv7 } from '../../ids';
import { Company, User } from '../identity';

/**
 * A chat conversation, named by the caller's `session_id` within one user:
 * another user's identical session_id is another conversation.
 */
@Entity({ tableName: 'chat_sessions' })
@Unique({ properties: ['user', 'key'] })
export class ChatSession {
  [OptionalProps]?: 'id' | 'createdAt' | 'updatedAt' | 'revision';

  @PrimaryKey({ type: 'uuid' })
  id: string = uuidv7();

  @ManyToOne(() => Company, { deleteRule: 'cascade' })
  company!: Company;

  /** The conversation goes with its user. */
  @ManyToOne(() => User, { deleteRule: 'cascade' })
  user!: User;

  /** The caller's session_id. */
  @Property({ type: 'string', length: 128 })
  key!: string;

  @Property({ type: 'string', length: 32 })
  agent!: string;

  /** Bumped by every write of the session's history: a cached history of another revision is stale. */
  @Property({ type: 'integer', default: 0 })
  revision: number = 0;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();

  @Property({ type: DateTimeType })
  updatedAt: Date = new Date();
}
