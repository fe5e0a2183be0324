import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import { Rest } from '../rest';
import { PageType } from '../page';
import { jobStates, RESEARCH_DEPTHS, RESEARCH_QUERY_MAX, researchDepths, researchLanguages, researchPhases } from '../../src/domains/research';
import { COLUMN_NAME_MAX, PROMPT_TEMPLATE_MAX, tableKinds } from '../../src/domains/bulk';
import { MODEL_NAME_MAX } from '../../src/domains/catalog';

const STATES = `${jobStates.join(', ')}`;
const DEPTHS = researchDepths.map((d) => `${d}: ${RESEARCH_DEPTHS[d].credits} credits, ${RESEARCH_DEPTHS[d].questions} sub-questions, up to ${RESEARCH_DEPTHS[d].sources} pages read`).join('; ');

@ObjectType('ResearchProgress', { description: 'Where a running research job is: the next phase, the steps finished and their total' })
export class ResearchProgressType {
  @Rest({ enum: researchPhases })
  @Field({ description: researchPhases.join(', ') })
  phase!: string;

  @Field(() => Int, { description: 'Steps finished' })
  step!: number;

  @Field(() => Int, { description: 'Steps in all (known once the searches are done; estimated before)' })
  total!: number;
}

@ObjectType('ResearchSource', { description: 'A source the report cites as [n]' })
export class ResearchSourceType {
  @Field(() => Int)
  n!: number;

  @Field()
  url!: string;

  @Field()
  title!: string;
}

@ObjectType('ResearchJob', { description: 'A research report being written, or written' })
export class ResearchJobType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  id!: string;

  @Rest({ enum: jobStates })
  @Field({ description: STATES })
  status!: string;

  @Field()
  query!: string;

  @Rest({ enum: researchDepths })
  @Field({ description: DEPTHS })
  depth!: string;

  @Rest({ enum: researchLanguages })
  @Field()
  language!: string;

  @Field(() => ResearchProgressType, { nullable: true, description: 'While queued or running' })
  progress?: ResearchProgressType | null;

  @Field(() => String, { nullable: true, description: 'The Markdown report with citations [n], once completed' })
  report?: string | null;

  @Field(() => [ResearchSourceType], { description: 'What the citations refer to, once completed' })
  sources!: ResearchSourceType[];

  @Field(() => String, { nullable: true, description: 'Why it failed' })
  error?: string | null;

  @Field(() => Int, { description: 'Credits held at the start: spent on completion, returned on failure or cancellation' })
  credits!: number;

  @Field()
  createdAt!: Date;

  @Field(() => Date, { nullable: true })
  startedAt?: Date | null;

  @Field(() => Date, { nullable: true })
  finishedAt?: Date | null;
}

export const ResearchJobPageType = PageType(ResearchJobType, 'ResearchJobPage');

@InputType('ResearchInput')
export class ResearchInput {
  @Rest({ minLength: 1, maxLength: RESEARCH_QUERY_MAX })
  @Field({ description: `The research question, 1 to ${RESEARCH_QUERY_MAX} characters` })
  query!: string;

  @Rest({ enum: researchDepths })
  @Field(() => String, { nullable: true, description: `${DEPTHS}. Default standard` })
  depth?: string | null;

  @Rest({ enum: researchLanguages })
  @Field(() => String, { nullable: true, description: 'The report\'s language: en (default) or nl' })
  language?: string | null;
}

@ObjectType('BulkJob', { description: 'A table whose rows each go to the model through a prompt template' })
export class BulkJobType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  id!: string;

  @Rest({ enum: jobStates })
  @Field({ description: `${STATES}; failed is the whole job (an unreadable file), a row's failure is counted in rowsFailed` })
  status!: string;

  @Field()
  filename!: string;

  @Rest({ enum: tableKinds })
  @Field({ description: 'csv or xlsx: decided by the content; the result file has the same format' })
  format!: string;

  @Field()
  inputColumn!: string;

  @Field()
  outputColumn!: string;

  @Field()
  promptTemplate!: string;

  @Field({ description: 'The catalog model the rows run on' })
  model!: string;

  @Field(() => Int, { description: 'Rows of the file after its header (0 until it is read)' })
  totalRows!: number;

  @Field(() => Int)
  rowsCompleted!: number;

  @Field(() => Int)
  rowsFailed!: number;

  @Field(() => Int, { description: "A cancelled job's rows that will never run (0 for any other state): rowsCompleted + rowsFailed + rowsCancelled = totalRows once it is cancelled" })
  rowsCancelled!: number;

  @Field(() => Int)
  creditsUsed!: number;

  @Field(() => String, { nullable: true })
  error?: string | null;

  @Field()
  createdAt!: Date;

  @Field(() => Date, { nullable: true })
  startedAt?: Date | null;

  @Field(() => Date, { nullable: true })
  finishedAt?: Date | null;
}

export const BulkJobPageType = PageType(BulkJobType, 'BulkJobPage');

@ObjectType('BulkRow', { description: "One processed row: its input cell and the model's output, or why it failed" })
export class BulkRowType {
  @Field(() => Int, { description: '1 for the first row after the header' })
  row!: number;

  @Rest({ enum: ['completed', 'failed'] })
  @Field()
  status!: string;

  @Field()
  input!: string;

  @Field(() => String, { nullable: true })
  output?: string | null;

  @Field(() => String, { nullable: true })
  error?: string | null;

  @Field(() => Int)
  tokens!: number;

  @Field(() => Int)
  creditsUsed!: number;
}

@InputType('BulkCsvInput', { description: 'A bulk job from CSV text (for files, and .xlsx, use the REST upload)' })
export class BulkCsvInput {
  // REST sends this file as the multipart member `file` (POST /v1/bulk/submit), and the service names
  // the file's issues there (["body", "file"]): the REST name maps them back to ["input", "csv"].
  @Rest({ name: 'file' })
  @Field({ description: 'The CSV, its first row the header' })
  csv!: string;

  @Field(() => String, { nullable: true })
  filename?: string | null;

  @Rest({ minLength: 1, maxLength: COLUMN_NAME_MAX })
  @Field({ description: 'The column whose cell fills {text}' })
  inputColumn!: string;

  @Rest({ minLength: 1, maxLength: PROMPT_TEMPLATE_MAX })
  @Field({ description: 'Must contain {text}' })
  promptTemplate!: string;

  @Field(() => String, { nullable: true, description: 'Default AI_Result' })
  outputColumn?: string | null;

  @Rest({ maxLength: MODEL_NAME_MAX })
  @Field(() => String, { nullable: true, description: 'A catalog model id or a model family' })
  model?: string | null;
}

@ObjectType('JobUpdate', { description: 'A research or bulk job as it changes: its state and progress' })
export class JobUpdateType {
  @Rest({ enum: ['research', 'bulk'] })
  @Field()
  kind!: string;

  @Field(() => ID)
  jobId!: string;

  @Field()
  status!: string;

  @Field(() => ResearchJobType, { nullable: true })
  research?: ResearchJobType | null;

  @Field(() => BulkJobType, { nullable: true })
  bulk?: BulkJobType | null;
}
