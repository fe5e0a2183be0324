import { DateTimeType, Entity, Index, JsonType, ManyToOne, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { Company, User } from '../identity';

export const researchDepths = ['standard', 'deep', 'comprehensive'] as const;
export type ResearchDepth = (typeof researchDepths)[number];
export const researchLanguages = ['en', 'nl'] as const;
export type ResearchLanguage = (typeof researchLanguages)[number];
export const jobStates = ['queued', 'running', 'completed', 'failed', 'cancelled'] as const;
export type JobState = (typeof jobStates)[number];
/** Whether a job's state is its last (completed, failed, cancelled): nothing changes it any more. */
export const isFinished = (status: JobState): boolean => status === 'completed' || status === 'failed' || status === 'cancelled';
export const researchPhases = ['planning', 'searching', 'fetching', 'summarising', 'writing'] as const;
export type ResearchPhase = (typeof researchPhases)[number];

/** A source the research found: its search result, then its page text and summary as the steps reach it. */
export interface ResearchSourceState {
  n: number;
  url: string;
  title: string;
  snippet: string;
  /** The page's text (fetched through the SSRF guard), cut to a limit; null until fetched or when the fetch failed. */
  text?: string | null;
  fetchError?: string | null;
  summary?: string | null;
}

/** What the finished steps produced; each step reads it and adds its part. */
export interface ResearchState {
  questions?: string[];
  /** Search results per question, in question order. */
  results?: { url: string; title: string; snippet: string }[][];
  sources?: ResearchSourceState[];
}

/**
 * One research job. Its steps run as durable jobs (`research.step`), one at
 * a time: `stepsDone` counts the finished ones and `state` holds what they
 * produced, so a restart resumes after the last finished step. `version`
 * makes a step's write and a cancellation exclude each other.
 */
@Entity({ tableName: 'research_jobs' })
@Index({ properties: ['company', 'createdAt'] })
@Index({ properties: ['user', 'createdAt'] })
export class ResearchJob {
  [OptionalProps]?: 'id' | 'createdAt' | 'updatedAt' | 'status' | 'stepsDone' | 'state' | 'tokens' | 'version';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Company, { deleteRule: 'cascade' })
  company!: Company;

  /** The user it runs for; null for a company API key. */
  @ManyToOne(() => User, { deleteRule: 'cascade', nullable: true })
  user?: User | null;

  /** The key that started it (company or AI-modules key), if any. */
  @Property({ type: 'string', length: 36, nullable: true })
  apiKeyId?: string | null;

  @Property({ type: 'text' })
  query!: string;

  @Property({ type: 'string', length: 16 })
  depth!: ResearchDepth;

  @Property({ type: 'string', length: 2 })
  language!: ResearchLanguage;

  @Property({ type: 'string', length: 16 })
  status: JobState = 'queued';

  @Property({ type: 'string', length: 16, nullable: true })
  phase?: ResearchPhase | null;

  @Property({ type: 'integer' })
  stepsDone: number = 0;

  @Property({ type: 'integer' })
  stepsTotal!: number;

  @Property({ type: JsonType })
  state: ResearchState = {};

  @Property({ type: 'text', nullable: true })
  report?: string | null;

  @Property({ type: 'text', nullable: true })
  error?: string | null;

  /** The credit hold taken at the start: committed on completion, released on failure or cancellation. */
  @Property({ type: 'string', length: 36 })
  holdId!: string;

  @Property({ type: 'integer' })
  credits!: number;

  /** Tokens the model calls used so far (the usage record's). */
  @Property({ type: 'integer' })
  tokens: number = 0;

  @Property({ version: true, type: 'integer' })
  version: number = 1;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();

  @Property({ type: DateTimeType, nullable: true })
  startedAt?: Date | null;

  @Property({ type: DateTimeType, nullable: true })
  finishedAt?: Date | null;

  @Property({ type: DateTimeType, onUpdate: () => new Date() })
  updatedAt: Date = new Date();
}
