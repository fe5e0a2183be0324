import { DateTimeType, Entity, Index, ManyToOne, OptionalProps, PrimaryKey, PrimaryKeyProp, Property } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { Company, User } from '../identity';
import type { JobState } from '../research';

/**
 * One bulk job: a table whose rows each go to the model through a prompt
 * template. The rows live in `bulk_rows`, never in memory; the counters
 * move in the same transaction as each row's result and credits.
 */
@Entity({ tableName: 'bulk_jobs' })
@Index({ properties: ['company', 'createdAt'] })
@Index({ properties: ['user', 'createdAt'] })
export class BulkJob {
  [OptionalProps]?: 'id' | 'createdAt' | 'updatedAt' | 'status' | 'totalRows' | 'rowsCompleted' | 'rowsFailed' | 'creditsUsed' | 'bom';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Company, { deleteRule: 'cascade' })
  company!: Company;

  /** The user it runs for; null for a company API key. */
  @ManyToOne(() => User, { deleteRule: 'cascade', nullable: true })
  user?: User | null;

  @Property({ type: 'string', length: 36, nullable: true })
  apiKeyId?: string | null;

  @Property({ type: 'string', length: 255 })
  filename!: string;

  /** csv or xlsx: the input's, and so the result file's. */
  @Property({ type: 'string', length: 8 })
  format!: string;

  @Property({ type: 'string', length: 1 })
  delimiter!: string;

  /** A CSV result starts with a byte-order mark: the input had one, or was Windows-1252 (Excel then reads the UTF-8 right). */
  @Property({ type: 'boolean', default: false })
  bom: boolean = false;

  /** The header row, as JSON text. */
  @Property({ type: 'text' })
  columns!: string;

  @Property({ type: 'string', length: 255 })
  inputColumn!: string;

  @Property({ type: 'integer' })
  inputIndex!: number;

  @Property({ type: 'text' })
  promptTemplate!: string;

  @Property({ type: 'string', length: 255 })
  outputColumn!: string;

  @Property({ type: 'string', length: 100 })
  model!: string;

  @Property({ type: 'string', length: 16 })
  status: JobState = 'queued';

  @Property({ type: 'integer' })
  totalRows: number = 0;

  @Property({ type: 'integer' })
  rowsCompleted: number = 0;

  @Property({ type: 'integer' })
  rowsFailed: number = 0;

  @Property({ type: 'integer' })
  creditsUsed: number = 0;

  @Property({ type: 'text', nullable: true })
  error?: string | null;

  /** The uploaded file until its rows are read into `bulk_rows`. */
  @Property({ type: 'text', nullable: true })
  uploadPath?: string | null;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();

  @Property({ type: DateTimeType, nullable: true })
  startedAt?: Date | null;

  @Property({ type: DateTimeType, nullable: true })
  finishedAt?: Date | null;

  @Property({ type: DateTimeType, onUpdate: () => new Date() })
  updatedAt: Date = new Date();
}

/** One row of a bulk job: its cells (JSON text), then its result or error. */
@Entity({ tableName: 'bulk_rows' })
@Index({ properties: ['job', 'status', 'idx'] })
export class BulkRow {
  [PrimaryKeyProp]?: ['job', 'idx'];
  [OptionalProps]?: 'status' | 'tokens' | 'credits';

  @ManyToOne(() => BulkJob, { primary: true, deleteRule: 'cascade' })
  job!: BulkJob;

  /** 1 for the first row after the header. */
  @PrimaryKey({ type: 'integer', autoincrement: false })
  idx!: number;

  @Property({ type: 'text' })
  cells!: string;

  /** pending, completed or failed. */
  @Property({ type: 'string', length: 16 })
  status: string = 'pending';

  @Property({ type: 'text', nullable: true })
  output?: string | null;

  @Property({ type: 'text', nullable: true })
  error?: string | null;

  @Property({ type: 'integer' })
  tokens: number = 0;

  @Property({ type: 'integer' })
  credits: number = 0;

  @Property({ type: DateTimeType, nullable: true })
  finishedAt?: Date | null;
}
