import { DateTimeType, Entity, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/** Feedback left on a documentation page by anyone, signed in or not. */
@Entity({ tableName: 'docs_feedback' })
export class DocsFeedback {
  [OptionalProps]?: 'id' | 'createdAt' | 'helpful' | 'comment' | 'ipHash' | 'userAgent';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'string', length: 500 })
  page!: string;

  @Property({ type: 'boolean', nullable: true })
  helpful: boolean | null = null;

  @Property({ type: 'text', nullable: true })
  comment: string | null = null;

  /** A salted hash, enough to spot abuse without keeping the address. */
  @Property({ type: 'string', length: 64, nullable: true })
  ipHash: string | null = null;

  @Property({ type: 'string', length: 512, nullable: true })
  userAgent: string | null = null;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();
}
