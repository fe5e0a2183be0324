import fs from 'node:fs';
import { Arg, Ctx, ID, Int, Mutation, Query, Resolver, Root, Subscription } from 'type-graphql';
import { Access } from '../policy/access';
import { AppError } from '../../src/errors/catalog';
import { isFinished, type JobState, type ResearchApi, type ResearchJobView, type ResearchService } from '../../src/domains/research';
import type { BulkApi, BulkJobView, BulkService } from '../../src/domains/bulk';
import type { GraphQLContext } from '../context';
import { queueIterator } from '../../src/events/event-bus';
import { BulkCsvInput, BulkJobPageType, BulkJobType, BulkRowType, JobUpdateType, ResearchInput, ResearchJobPageType, ResearchJobType } from './jobs.types';
import { RestArgs, UUID } from '../rest';
import { PAGE_BOUNDS } from '../page';
import { SharedResults } from '../shared-results';

type Update = { kind: 'research'; jobId: string; status: string; research: ResearchJobView; bulk: null } | { kind: 'bulk'; jobId: string; status: string; research: null; bulk: BulkJobView };

/**
 * One update per job view: an event hands every listener the same view, so
 * every subscriber gets the same update, whose result is executed and
 * serialised once for all of them (@SharedResults).
 */
const updates = new WeakMap<ResearchJobView | BulkJobView, Update>();
function updateOf(job: ResearchJobView | BulkJobView, make: () => Update): Update {
  let update = updates.get(job);
  if (!update) updates.set(job, (update = make()));
  return update;
}
const researchUpdate = (job: ResearchJobView) => updateOf(job, () => ({ kind: 'research', jobId: job.id, status: job.status, research: job, bulk: null }));
const bulkUpdate = (job: BulkJobView) => updateOf(job, () => ({ kind: 'bulk', jobId: job.id, status: job.status, research: null, bulk: job }));

const stateRank = (status: JobState) => (status === 'queued' ? 0 : status === 'running' ? 1 : 2);

/**
 * Where a job's state stands, as numbers that never go down from one committed
 * change to the next (the state, then the steps or rows done, then the rows
 * read), so a later state compares greater, and an equal one is the same
 * state told twice. The job events carry no version of their own.
 */
const researchOrder = (job: ResearchJobView) => [stateRank(job.status), job.progress?.step ?? 0];
const bulkOrder = (job: BulkJobView) => [stateRank(job.status), job.rowsCompleted + job.rowsFailed, job.totalRows];

function later(a: number[], b: number[]): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! > b[i]!;
  return false;
}

/**
 * One job as it changes: its current state first, then each later state,
 * and the stream ends after a finished one (completed, failed, cancelled),
 * so graphql-ws sends `complete`. The events are listened to before the
 * current state is read, so a change committed in between is not lost; an
 * event not later than what was sent (older than the read, or the read
 * itself told again) is dropped.
 */
async function oneJob<V extends { status: JobState }>(
  watch: (listener: (job: V) => void) => () => void,
  current: () => Promise<V>,
  order: (job: V) => number[],
  update: (job: V) => Update,
): Promise<AsyncIterableIterator<Update>> {
  const early: V[] = [];
  let deliver: (job: V) => void = (job) => void early.push(job);
  const detach = watch((job) => deliver(job));
  let snapshot: V;
  try {
    snapshot = await current();
  } catch (error) {
    detach();
    throw error;
  }
  return queueIterator<Update>((push, end) => {
    let last: number[] | null = null;
    const send = (job: V) => {
      const at = order(job);
      if (last && !later(at, last)) return;
      last = at;
      push(update(job));
      if (isFinished(job.status)) end();
    };
    send(snapshot);
    for (const job of early) send(job);
    early.length = 0;
    deliver = send;
    return detach;
  });
}

/**
 * Research and bulk jobs for signed-in users, company API keys (over the
 * platform API's REST paths) and AI-modules keys (scopes research and bulk).
 */
@Resolver()
export class JobsResolver {
  static from = ({ research, bulk }: { research: ResearchApi; bulk: BulkApi }) => new JobsResolver(research.research, bulk.bulk);

  constructor(
    readonly research: ResearchService,
    readonly bulk: BulkService,
  ) {}

  @Access({ auth: 'modules' })
  @Mutation(() => ResearchJobType, {
    description:
      'Starts a research job (scope research): the model plans sub-questions, each is searched, the best pages are read and summarised, and ' +
      'a Markdown report citing them is written. Its credits (by depth) are held now, spent on completion and returned on failure or ' +
      'cancellation. 503 without AI_BASE_URL or WEB_SEARCH_URL, 429 past RESEARCH_MAX_CONCURRENT jobs of the company, both spending nothing.',
  })
  startResearch(@Arg('input', () => ResearchInput) input: ResearchInput, @Ctx() ctx: GraphQLContext) {
    return this.research.start(ctx.principal, input, 'modules');
  }

  @Access({ auth: 'modules' })
  @RestArgs({ id: UUID })
  @Query(() => ResearchJobType, { description: "A research job of the caller's (an admin's: of the company); another's is 404" })
  researchJob(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext) {
    return this.research.get(ctx.principal, id);
  }

  @Access({ auth: 'modules' })
  @RestArgs(PAGE_BOUNDS)
  @Query(() => ResearchJobPageType, { description: "The caller's research jobs, newest first" })
  researchJobs(
    @Ctx() ctx: GraphQLContext,
    @Arg('page', () => Int, { defaultValue: 1 }) page: number,
    @Arg('perPage', () => Int, { defaultValue: 20 }) perPage: number,
  ) {
    return this.research.list(ctx.principal, page, perPage);
  }

  @Access({ auth: 'modules' })
  @RestArgs({ id: UUID })
  @Mutation(() => ResearchJobType, { description: 'Cancels a queued or running research job and returns its credits; a finished one is 409 job_finished' })
  cancelResearch(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext) {
    return this.research.cancel(ctx.principal, id);
  }

  @Access({ auth: 'modules' })
  @Mutation(() => BulkJobType, {
    description:
      'Creates a bulk job from CSV text (scope bulk): each row\'s input cell fills {text} of the template and goes to the model. Each row ' +
      "costs tokens ÷ 1,000 × the model's credit cost, rounded up, under its own hold; when credits run out the remaining rows fail " +
      'and the job still completes. Files and .xlsx go through the REST upload.',
  })
  async submitBulkJob(@Arg('input', () => BulkCsvInput) input: BulkCsvInput, @Ctx() ctx: GraphQLContext) {
    const path = this.bulk.uploadPath();
    await fs.promises.writeFile(path, input.csv, { mode: 0o600 });
    return this.bulk.submit(ctx.principal, { path, filename: input.filename ?? 'input.csv', inputColumn: input.inputColumn, promptTemplate: input.promptTemplate, outputColumn: input.outputColumn, model: input.model }, ['csv']);
  }

  @Access({ auth: 'modules' })
  @RestArgs({ id: UUID })
  @Query(() => BulkJobType, { description: "A bulk job of the caller's (an admin's: of the company); another's is 404" })
  bulkJob(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext) {
    return this.bulk.get(ctx.principal, id);
  }

  @Access({ auth: 'modules' })
  @RestArgs(PAGE_BOUNDS)
  @Query(() => BulkJobPageType, { description: "The caller's bulk jobs, newest first" })
  bulkJobs(
    @Ctx() ctx: GraphQLContext,
    @Arg('page', () => Int, { defaultValue: 1 }) page: number,
    @Arg('perPage', () => Int, { defaultValue: 20 }) perPage: number,
  ) {
    return this.bulk.list(ctx.principal, page, perPage);
  }

  @Access({ auth: 'modules' })
  @RestArgs({ id: UUID })
  @Query(() => [BulkRowType], { description: 'Processed rows after row `after`, in row order, at most `first` (a row still running ends the list)' })
  bulkJobRows(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: GraphQLContext,
    @Arg('after', () => Int, { defaultValue: 0 }) after: number,
    @Arg('first', () => Int, { defaultValue: 100 }) first: number,
  ) {
    if (!Number.isInteger(after) || after < 0) throw AppError.validation([{ loc: ['after'], msg: 'must be an integer >= 0', type: 'range' }]);
    if (!Number.isInteger(first) || first < 1 || first > 1000) throw AppError.validation([{ loc: ['first'], msg: 'must be an integer from 1 to 1000', type: 'range' }]);
    return this.bulk.rows(ctx.principal, id, after, first);
  }

  @Access({ auth: 'modules' })
  @RestArgs({ id: UUID })
  @Mutation(() => BulkJobType, { description: 'Stops a queued or running bulk job: rows not yet sent stay unprocessed and cost nothing; a finished job is 409 job_finished' })
  cancelBulkJob(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext) {
    return this.bulk.cancel(ctx.principal, id);
  }

  @Access({ auth: 'modules' })
  @RestArgs({ id: UUID })
  @SharedResults()
  @Subscription(() => JobUpdateType, {
    description:
      'One research or bulk job as it changes: first its current state (the same shape as every update), then each change (research phases ' +
      'and steps, bulk counts a few a second at most), and after its final state (completed, failed or cancelled) the subscription ' +
      "completes; a job finished already gives its final state and completes at once. Another's job is 404.",
    subscribe: async ({ args, context }) => {
      const ctx = context as GraphQLContext;
      const self = ctx.container.get(JobsResolver);
      const id = (args as { id: string }).id;
      if (await self.research.exists(ctx.principal, id)) {
        return oneJob((listener) => self.research.watch(ctx.principal, id, listener), () => self.research.get(ctx.principal, id), researchOrder, researchUpdate);
      }
      if (self.bulk.exists(ctx.principal, id)) {
        return oneJob((listener) => self.bulk.watch(ctx.principal, id, listener), () => self.bulk.get(ctx.principal, id), bulkOrder, bulkUpdate);
      }
      throw new AppError('not_found', 'No research or bulk job with this id');
    },
  })
  jobProgress(@Root() update: Update, @Arg('id', () => ID) _id: string): Update {
    return update;
  }

  @Access({ auth: 'modules' })
  @SharedResults()
  @Subscription(() => JobUpdateType, {
    description:
      "Every research and bulk job the caller may see as it changes (an admin's: the company's; a member's: their own), from now on (no " +
      'current states), each to its final state; it never completes. A job deleted with its user ends as cancelled, its error saying so.',
    subscribe: ({ context }) => {
      const ctx = context as GraphQLContext;
      const self = ctx.container.get(JobsResolver);
      // One queue fed by both kinds: no iterator per kind, no merging.
      return queueIterator<Update>((push) => {
        const research = self.research.watch(ctx.principal, undefined, (job) => push(researchUpdate(job)));
        const bulk = self.bulk.watch(ctx.principal, undefined, (job) => push(bulkUpdate(job)));
        return () => {
          research();
          bulk();
        };
      });
    },
  })
  companyJobProgress(@Root() update: Update): Update {
    return update;
  }
}
