import { DateTimeType, Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { Company, User } from '../identity';

/**
 * An uploaded document of one user: only its text is kept, as passages in
 * the full-text index (`document_chunks_fts`), never the file. It goes with
 * its user, and its passages with it (a trigger of the migration).
 */
@Entity({ tableName: 'documents' })
@Index({ properties: ['user', 'createdAt'] })
export class Document {
  [OptionalProps]?: 'id' | 'createdAt';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Company, { deleteRule: 'cascade' })
  company!: Company;

  @ManyToOne(() => User, { deleteRule: 'cascade' })
  user!: User;

  @Property({ type: 'string', length: 255 })
  filename!: string;

  /** pdf, docx, xlsx, txt or csv: decided by the content. */
  @Property({ type: 'string', length: 8 })
  kind!: string;

  @Property({ type: 'integer' })
  sizeBytes!: number;

  @Property({ type: 'integer' })
  pages!: number;

  @Property({ type: 'integer' })
  chunks!: number;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();
}
