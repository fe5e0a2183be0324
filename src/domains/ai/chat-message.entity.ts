import { DateTimeType, Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { ChatSession } from './chat-session.entity';

export const chatRoles = ['user', 'assistant'] as const;
export type ChatRole = (typeof chatRoles)[number];

/** One turn of a conversation, kept server-side so a reused session_id continues it. */
@Entity({ tableName: 'chat_messages' })
@Index({ properties: ['session', 'createdAt'] })
export class ChatMessage {
  [OptionalProps]?: 'id' | 'createdAt';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => ChatSession, { deleteRule: 'cascade' })
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
