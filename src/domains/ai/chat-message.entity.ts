import { DateTimeType, Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';
import { uuidv7 } from '../../ids';
import { ChatSession } from './chat-session.entity';

export const chatRoles = ['user', 'assistant'] as const;
export type ChatRole = (typeof chatRoles)[number];

/** One turn of a conversation, kept server-side so a reused session_id continues it. */
@Entity({ tableName: 'chat_messages' })
@Index({ properties: ['session', 'createdAt'] })
export class ChatMessage {
  [OptionalProps]?: 'id' | 'createdAt';

  /** Time-ordered: a new message's key lands at the end of the primary-key index, not on a random page of it. */
  @PrimaryKey({ type: 'uuid' })
  id: string = uuidv7();

  /** No index of its own: the (session, created_at) index serves every lookup by session, and each index is a page more per insert. */
  @ManyToOne(() => ChatSession, { deleteRule: 'cascade', index: false })
  session!: ChatSession;

  @Property({ type: 'string', length: 16 })
  role!: ChatRole;

  @Property({ type: 'text' })
  content!: string;

  /** The message's tokens (the provider's count for replies, estimated for the user's). */
  @Property({ type: 'integer' })
  tokens!: number;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();
}
