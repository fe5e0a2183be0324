import { randomUUID } from 'node:crypto';
import { OptimisticLockError } from '@mikro-orm/core';
import type { Orm } from '../../db/orm';
import { afterCommit, currentEm, transaction } from '../../db/unit-of-work';
import type { EventBus } from '../../events/event-bus';
import type { JobQueue } from '../../jobs/job-queue';
import type { RunningJob } from '../../jobs/worker';
import { AppError, isAppError, type ValidationIssue } from '../../errors/catalog';
import { textLength } from '../../errors/text-length';
import { canSeeJob, requireJobCaller, type JobCaller } from '../../auth/policy';
import type { Principal } from '../../auth/principal';
import { checkPage, type Page } from '../../pagination';
import { fetchPage } from '../../net/page-fetch';
import { worthRetrying, type AiApi, type Completion } from '../ai';
import type { CatalogService, ModelView } from '../catalog';
import { Company, User } from '../identity';
import type { ResearchConfig } from './config';
import {
  ResearchJob,
  researchDepths,
  researchLanguages,
  isFinished,
  type JobState,
  type ResearchDepth,
  type ResearchLanguage,
  type ResearchPhase,
  type ResearchSourceState,
} from './research-job.entity';
import { clipText } from '../../clip-text';
import { UUID_PATTERN } from '../../ids';

/** The job kind of one research step. */
export const RESEARCH_STEP = 'research.step';

/** A `research.step` job's payload. */
export interface ResearchStep {
  researchId: string;
  companyId?: string;
}
/** The recurring job that fails research jobs past RESEARCH_TIMEOUT_SECONDS whose steps stopped running (their step job dead-lettered). */
export const RESEARCH_EXPIRY = 'research.expiry';
export const RESEARCH_QUERY_MAX = 2000;

/**
 * What a depth buys (documented in the OpenAPI descriptions and the README):
 * its price, the sub-questions the model plans and the pages read.
 */
export const RESEARCH_DEPTHS: Readonly<Record<ResearchDepth, { credits: number; questions: number; sources: number }>> = {
  standard: { credits: 20, questions: 3, sources: 4 },
  deep: { credits: 35, questions: 5, sources: 8 },
  comprehensive: { credits: 50, questions: 8, sources: 12 },
};

const LANGUAGE_NAMES: Record<ResearchLanguage, string> = { en: 'English', nl: 'Dutch' };

export interface ResearchProgress {
  phase: ResearchPhase;
  step: number;
  total: number;
}

export interface ResearchSourceView {
  n: number;
  url: string;
  title: string;
}

export interface ResearchJobView {
  id: string;
  status: JobState;
  query: string;
  depth: ResearchDepth;
  language: ResearchLanguage;
  /** While running: the phase, the finished steps and their total. */
  progress: ResearchProgress | null;
  /** The Markdown report, once completed. */
  report: string | null;
  /** The sources its citations [n] refer to, once completed. */
  sources: ResearchSourceView[];
  error: string | null;
  /** Credits held at the start; spent on completion, returned on failure or cancellation. */
  credits: number;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

export interface ResearchInput {
  query: string;
  depth?: string | null;
  language?: string | null;
}

/** The platform API offers the first two depths (platform-api.md: "a standard or deep research report"). */
export type ResearchSurface = 'modules' | 'platform';

/** The error of a job that ended because its user was deleted (the job went with them). */
export const OWNER_DELETED = "cancelled: the job's user was deleted, and the job with them; unspent credits were returned";


export function researchView(job: ResearchJob): ResearchJobView {
  const completed = job.status === 'completed';
  return {
    id: job.id,
    status: job.status,
    query: job.query,
    depth: job.depth,
    language: job.language,
    progress: job.status === 'running' || job.status === 'queued' ? { phase: job.phase ?? 'planning', step: job.stepsDone, total: job.stepsTotal } : null,
    report: completed ? (job.report ?? '') : null,
    sources: completed ? (job.state.sources ?? []).filter((s) => s.summary).map((s) => ({ n: s.n, url: s.url, title: s.title })) : [],
    error: job.error ?? null,
    credits: job.credits,
    createdAt: job.createdAt,
    startedAt: job.startedAt ?? null,
    finishedAt: job.finishedAt ?? null,
  };
}

/** Steps of a job with `questions` sub-questions and `sources` pages: plan, search each, fetch each, summarise each, write. */
const stepsFor = (questions: number, sources: number) => 1 + questions + 2 * sources + 1;

/**
 * Research: the model plans sub-questions, each is searched (WEB_SEARCH_URL),
 * the best pages are fetched through the SSRF guard and summarised, and the
 * model writes a Markdown report citing them as [n]. Each step is one
 * durable job (`research.step`); a job's credits are held at the start and
 * spent on completion. The platform API and the AI-modules API are two doors
 * to this one service.
 */
export class ResearchService {
  /** Aborts the running step of a job this process runs, when it is cancelled. */
  private readonly running = new Map<string, AbortController>();

  constructor(
    private readonly orm: Orm,
    private readonly jobs: JobQueue,
    private readonly events: EventBus,
    private readonly ai: AiApi,
    private readonly catalog: CatalogService,
    private readonly config: ResearchConfig,
    private readonly ssrfAllowLoopback: boolean,
  ) {}

  /**
   * Starts a job: refused up front (nothing spent) without a provider or web
   * search, past the company's concurrent jobs, or without credits. The
   * hold, the job and its first step commit together.
   */
  async start(principal: Principal, input: ResearchInput, surface: ResearchSurface): Promise<ResearchJobView> {
    const caller = requireJobCaller(principal, 'research');
    const { query, depth, language } = checkInput(input, surface);
    this.ai.engine.requireConfigured();
    this.ai.search.requireConfigured();
    const model = this.model();
    const plan = RESEARCH_DEPTHS[depth];
    const id = randomUUID();
    const view = await transaction(this.orm, async (em) => {
      const active = await em.count(ResearchJob, { company: caller.companyId, status: { $in: ['queued', 'running'] } });
      if (active >= this.config.maxConcurrent) {
        throw new AppError('job_limit_reached', `Your company has ${active} research jobs queued or running, the most it may (RESEARCH_MAX_CONCURRENT); try again when one finishes`, {
          headers: { 'retry-after': '30' },
          extra: { limit: this.config.maxConcurrent },
        });
      }
      const hold = await this.ai.credits.reserve(caller, {
        credits: plan.credits,
        key: `research:${id}`,
        feature: 'research',
        model: model.id,
        // The hold lasts the job's whole run; a job past it fails.
        timeoutSeconds: this.config.timeoutSeconds + 300,
      });
      const job = em.create(ResearchJob, {
        id,
        company: em.getReference(Company, caller.companyId),
        user: caller.userId ? em.getReference(User, caller.userId) : null,
        apiKeyId: caller.keyId,
        query,
        depth,
        language,
        stepsTotal: stepsFor(plan.questions, plan.sources),
        holdId: hold.id,
        credits: plan.credits,
      });
      this.jobs.enqueue(RESEARCH_STEP, { researchId: id, companyId: caller.companyId } satisfies ResearchStep);
      await em.flush();
      const v = researchView(job);
      afterCommit(em, () => this.announce(job, v));
      return v;
    });
    return view;
  }

  async get(principal: Principal, id: string): Promise<ResearchJobView> {
    return researchView(await this.visible(requireJobCaller(principal, 'research'), id));
  }

  /** The caller's own jobs, newest first (a company key's: those company keys started). */
  async list(principal: Principal, page = 1, perPage = 20): Promise<Page<ResearchJobView>> {
    const caller = requireJobCaller(principal, 'research');
    checkPage(page, perPage);
    const where = caller.userId ? { company: caller.companyId, user: caller.userId } : { company: caller.companyId, user: null, apiKeyId: { $ne: null } };
    const [rows, total] = await currentEm(this.orm).findAndCount(ResearchJob, where, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: perPage, offset: (page - 1) * perPage });
    return { items: rows.map(researchView), page, perPage, total };
  }

  /** Cancels a queued or running job and returns its credits; a finished one is 409. */
  async cancel(principal: Principal, id: string): Promise<ResearchJobView> {
    const caller = requireJobCaller(principal, 'research');
    await this.visible(caller, id);
    for (let attempt = 0; ; attempt++) {
      try {
        const view = await this.finish(id, 'cancelled', null, () => {
          throw new AppError('job_finished', 'This research job has finished already');
        });
        // The step this process runs stops at once; its results are not kept.
        this.running.get(id)?.abort();
        return view;
      } catch (error) {
        // A step committed meanwhile: read again and decide on the new state.
        if (error instanceof OptimisticLockError && attempt < 3) continue;
        throw error;
      }
    }
  }

  /** Calls `listener` with each change of the caller's visible jobs (one job with `id`) until the returned detach is called. */
  watch(principal: Principal, id: string | undefined, listener: (job: ResearchJobView) => void): () => void {
    const caller = requireJobCaller(principal, 'research');
    return this.events.subscribe('research.updated', (e) => {
      if (canSeeJob(caller, e) && (id === undefined || e.job.id === id)) listener(e.job);
    });
  }

  /**
   * A user is being deleted (called in the deletion's transaction): their
   * unfinished jobs go with them, so their subscribers get a last state,
   * `cancelled` with OWNER_DELETED, once the deletion commits (what this
   * returns). The step that would run next finds no job and gives the hold back.
   */
  async endedWithUser(userId: string): Promise<() => void> {
    const jobs = await currentEm(this.orm).find(ResearchJob, { user: userId, status: { $in: ['queued', 'running'] } }, { refresh: true });
    const finishedAt = new Date();
    const ends = jobs.map((job) => ({
      companyId: job.company.id,
      userId,
      job: { ...researchView(job), status: 'cancelled' as const, progress: null, error: OWNER_DELETED, finishedAt },
    }));
    return () => ends.forEach((end) => this.events.publish('research.updated', end));
  }

  /** Whether `id` is a research job the caller may see (for a subscription to pick its source). */
  async exists(principal: Principal, id: string): Promise<boolean> {
    return (await this.find(requireJobCaller(principal, 'research'), id)) !== null;
  }

  /**
   * The `research.step` job: the next unfinished step of a job. What it
   * produces is left in the unit of work and commits with the step job's
   * completion, together with the next step's job, so a crash repeats only
   * the step it interrupted. Retryable failures (the provider, the search)
   * are retried by the worker; the last attempt, or a failure no retry can
   * mend, fails the job and returns its credits.
   */
  async step(payload: ResearchStep, run: RunningJob): Promise<void> {
    const em = currentEm(this.orm);
    const job = await em.findOne(ResearchJob, { id: payload.researchId });
    if (!job) return this.releaseDeleted(payload);
    if (isFinished(job.status)) return;
    const deadline = job.createdAt.getTime() + this.config.timeoutSeconds * 1000;
    if (Date.now() > deadline) {
      await this.fail(job.id, `The research did not finish within ${Math.round(this.config.timeoutSeconds / 60)} minutes`);
      return;
    }
    const abort = new AbortController();
    this.running.set(job.id, abort);
    const signal = AbortSignal.any([abort.signal, run.signal, AbortSignal.timeout(Math.max(1, deadline - Date.now()))]);
    try {
      await this.advance(job, signal);
      // Deleted under the step (with its user): its changes have no row to land on (an optimistic-lock failure at the flush).
      if (!(await em.count(ResearchJob, { id: job.id }))) throw new Error('the research job was deleted');
    } catch (error) {
      if (abort.signal.aborted) {
        // Cancelled meanwhile: the cancellation settled everything, and this step's changes are dropped.
        em.clear();
        return;
      }
      // Stopping (or the lease lost) is no failure of the research: the step runs again.
      if (run.signal.aborted) throw error;
      em.clear();
      // Deleted under the step (with its user), whose write then found no row.
      if (!(await em.count(ResearchJob, { id: job.id }))) return this.releaseDeleted(payload);
      const retry = worthRetrying(error) && run.attempt < run.maxAttempts;
      if (retry) throw error;
      em.clear();
      await this.fail(job.id, failureText(error));
    } finally {
      this.running.delete(job.id);
    }
  }

  /**
   * A job deleted with its user gives its hold back now rather than at the
   * hold's expiry. (Steps queued before their payload named the company
   * leave theirs to the expiry job.)
   */
  private async releaseDeleted(payload: ResearchStep): Promise<void> {
    if (payload.companyId) await this.ai.credits.releaseHeldUnder(payload.companyId, `research:${payload.researchId}`);
  }

  private async advance(job: ResearchJob, signal: AbortSignal): Promise<void> {
    const em = currentEm(this.orm);
    const model = this.model();
    const state = structuredClone(job.state);
    const questions = state.questions ?? [];
    const sources = state.sources ?? [];
    const k = job.stepsDone;
    const q = questions.length;
    const s = sources.length;
    if (job.status === 'queued') {
      job.status = 'running';
      job.startedAt = new Date();
      // Written now, not with the step: a first step that fails and is retried shows the job running, and a failed one when it started.
      await em.flush();
    }
    if (k === 0) {
      job.phase = 'planning';
      state.questions = await this.plan(job, model, signal);
      state.results = [];
      job.stepsTotal = stepsFor(state.questions.length, RESEARCH_DEPTHS[job.depth].sources);
      job.phase = 'searching';
    } else if (k <= q) {
      const found = await this.ai.search.search(questions[k - 1]!, signal);
      state.results = [...(state.results ?? []).slice(0, k - 1), found.map((r) => ({ url: r.url, title: r.title, snippet: r.content }))];
      if (k === q) {
        state.sources = pickSources(state.results, RESEARCH_DEPTHS[job.depth].sources);
        if (!state.sources.length) throw new AppError('web_search_error', 'The web search found no pages for this research');
        job.stepsTotal = stepsFor(q, state.sources.length);
        job.phase = 'fetching';
      }
    } else if (k <= q + s) {
      const source = sources[k - q - 1]!;
      try {
        const page = await fetchPage(source.url, {
          allowLoopback: this.ssrfAllowLoopback,
          timeoutMs: this.config.pageTimeoutMs,
          maxBytes: this.config.pageMaxBytes,
          maxChars: this.config.pageMaxChars,
          signal,
        });
        source.text = page.text;
        if (!source.title || source.title === source.url) source.title = page.title || source.title;
      } catch (error) {
        if (signal.aborted) throw error;
        // One unreachable or refused page is not the research's failure: its search snippet stands in.
        source.text = null;
        source.fetchError = error instanceof Error ? error.message.slice(0, 300) : 'fetch failed';
      }
      state.sources = sources;
      if (k === q + s) job.phase = 'summarising';
    } else if (k <= q + 2 * s) {
      const source = sources[k - q - s - 1]!;
      source.summary = await this.summarise(job, model, source, signal);
      state.sources = sources;
      if (k === q + 2 * s) job.phase = 'writing';
    } else {
      await this.write(job, model, signal);
      return;
    }
    job.state = state;
    job.stepsDone = k + 1;
    this.jobs.enqueue(RESEARCH_STEP, { researchId: job.id, companyId: job.company.id } satisfies ResearchStep);
    const view = researchView(job);
    afterCommit(em, () => this.announce(job, view));
  }

  private async plan(job: ResearchJob, model: ModelView, signal: AbortSignal): Promise<string[]> {
    const wanted = RESEARCH_DEPTHS[job.depth].questions;
    const reply = await this.call(job, model, signal, [
      {
        role: 'system',
        content:
          `You plan web research. Split the user's research question into exactly ${wanted} distinct web search queries that together cover it. ` +
          'Answer with JSON only, in the form {"queries": ["…", "…"]}.',
      },
      { role: 'user', content: job.query },
    ]);
    return parsePlan(reply.content, wanted, job.query);
  }

  private async summarise(job: ResearchJob, model: ModelView, source: ResearchSourceState, signal: AbortSignal): Promise<string | null> {
    const text = source.text?.trim() || source.snippet.trim();
    if (!text) return null;
    const reply = await this.call(job, model, signal, [
      {
        role: 'system',
        content:
          `You summarise one web page for a research report on: "${job.query}". Write 3 to 6 sentences in ${LANGUAGE_NAMES[job.language]} ` +
          'with the facts from the page that bear on the question. Use only the page; say so briefly if it does not help.',
      },
      { role: 'user', content: `Title: ${source.title}\nURL: ${source.url}\n\n${text}` },
    ]);
    return reply.content.trim() || null;
  }

  /** The last step: the report, the completed state and the spent hold, in one transaction. */
  private async write(job: ResearchJob, model: ModelView, signal: AbortSignal): Promise<void> {
    const used = (job.state.sources ?? []).filter((s) => s.summary);
    if (!used.length) throw new AppError('ai_provider_error', 'No source could be summarised');
    const language = LANGUAGE_NAMES[job.language];
    const reply = await this.call(
      job,
      model,
      signal,
      [
        {
          role: 'system',
          content:
            `You write a research report in ${language}, in Markdown: a title, a short summary, sections, and a conclusion. ` +
            'Base every claim on the numbered sources and cite them as [n] right after the claim. Cite only the numbers given; do not add a list of sources.',
        },
        { role: 'user', content: `Research question: ${job.query}\n\nSources:\n\n${used.map((s) => `[${s.n}] ${s.title} (${s.url})\n${s.summary}`).join('\n\n')}` },
      ],
      this.ai.config.maxOutputTokens * 2,
    );
    const heading = job.language === 'nl' ? 'Bronnen' : 'Sources';
    const cited = onlyCitationsOf(reply.content.trim(), new Set(used.map((s) => s.n)));
    const report = `${cited}\n\n## ${heading}\n\n${used.map((s) => `[${s.n}] [${markdownText(s.title)}](${s.url})`).join('\n')}\n`;
    // Deleted meanwhile (with its user): a report nobody can read is not charged, and the job's changes go.
    if (!(await currentEm(this.orm).count(ResearchJob, { id: job.id }))) {
      currentEm(this.orm).clear();
      await this.ai.credits.releaseWith({ id: job.holdId });
      return;
    }
    await transaction(this.orm, async (tx) => {
      job.status = 'completed';
      job.report = report;
      job.phase = null;
      job.stepsDone = job.stepsTotal;
      job.finishedAt = new Date();
      await tx.flush();
      await this.ai.credits.commit({ id: job.holdId }, { credits: job.credits, tokens: job.tokens, model: model.id });
      const view = researchView(job);
      afterCommit(tx, () => {
        this.announce(job, view);
        this.events.publish('research.report.ready', {
          id: randomUUID(),
          type: 'research.report.ready',
          created_at: new Date().toISOString(),
          company_id: job.company.id,
          data: { report_id: job.id, query: job.query, depth: job.depth, content_length: report.length },
        });
      });
    });
  }

  private async call(job: ResearchJob, model: ModelView, signal: AbortSignal, messages: { role: 'system' | 'user'; content: string }[], maxTokens?: number): Promise<Completion> {
    const reply = await this.ai.engine.complete({ model, messages, maxTokens: maxTokens ?? this.ai.config.maxOutputTokens, signal });
    job.tokens += reply.usage.totalTokens;
    return reply;
  }

  /** Ends a job that is not finished: failed or cancelled, its hold released, in one transaction. */
  private async finish(id: string, status: 'failed' | 'cancelled', error: string | null, onFinished: () => never | void): Promise<ResearchJobView> {
    return transaction(this.orm, async (em) => {
      const job = await em.findOneOrFail(ResearchJob, { id }, { refresh: true });
      if (isFinished(job.status)) {
        onFinished();
        return researchView(job);
      }
      job.status = status;
      job.error = error;
      job.phase = null;
      job.finishedAt = new Date();
      await em.flush();
      await this.ai.credits.releaseWith({ id: job.holdId });
      const view = researchView(job);
      afterCommit(em, () => this.announce(job, view));
      return view;
    });
  }

  /**
   * Fails the jobs still queued or running past RESEARCH_TIMEOUT_SECONDS and
   * returns their credits: a job whose step job was dead-lettered (its
   * worker died on every attempt) runs no step that would notice.
   */
  async expireOverdue(now = new Date()): Promise<number> {
    const overdue = await currentEm(this.orm).find(
      ResearchJob,
      { status: { $in: ['queued', 'running'] }, createdAt: { $lt: new Date(now.getTime() - this.config.timeoutSeconds * 1000) } },
      { fields: ['id'], limit: 100 },
    );
    for (const { id } of overdue) await this.fail(id, `The research did not finish within ${Math.round(this.config.timeoutSeconds / 60)} minutes`);
    return overdue.length;
  }

  private async fail(id: string, reason: string): Promise<void> {
    await this.finish(id, 'failed', reason, () => undefined);
  }

  private announce(job: ResearchJob, view: ResearchJobView): void {
    this.events.publish('research.updated', { companyId: job.company.id, userId: job.user?.id ?? null, job: view });
  }

  private model(): ModelView {
    return this.catalog.resolve(this.ai.config.defaultModel);
  }

  /** The job with `id` if the caller may see it; another company's or another member's is as absent as an unknown one. */
  private async find(caller: JobCaller, id: string): Promise<ResearchJob | null> {
    // Read from the database, not the unit of work's map: a subscription's first state must be the committed one now.
    const job = UUID_PATTERN.test(id) ? await currentEm(this.orm).findOne(ResearchJob, { id }, { refresh: true }) : null;
    return job && canSeeJob(caller, { companyId: job.company.id, userId: job.user?.id ?? null }) ? job : null;
  }

  private async visible(caller: JobCaller, id: string): Promise<ResearchJob> {
    const job = await this.find(caller, id);
    if (!job) throw new AppError('not_found', 'No research job with this id');
    return job;
  }
}


function checkInput(input: ResearchInput, surface: ResearchSurface): { query: string; depth: ResearchDepth; language: ResearchLanguage } {
  const issues: ValidationIssue[] = [];
  const query = typeof input.query === 'string' ? input.query.trim() : '';
  if (!query || textLength(query) > RESEARCH_QUERY_MAX) issues.push({ loc: ['body', 'query'], msg: `must be 1 to ${RESEARCH_QUERY_MAX} characters`, type: 'string_length' });
  const depths: readonly string[] = surface === 'platform' ? ['standard', 'deep'] : researchDepths;
  const depth = input.depth ?? 'standard';
  if (!depths.includes(depth)) issues.push({ loc: ['body', 'depth'], msg: `must be one of ${depths.join(', ')}`, type: 'enum' });
  const language = input.language ?? 'en';
  if (!(researchLanguages as readonly string[]).includes(language)) issues.push({ loc: ['body', 'language'], msg: `must be one of ${researchLanguages.join(', ')}`, type: 'enum' });
  if (issues.length) throw AppError.validation(issues);
  return { query, depth: depth as ResearchDepth, language: language as ResearchLanguage };
}

/** The model's plan as search queries: its JSON, or failing that its lines; the question itself when it gives nothing usable. */
export function parsePlan(text: string, wanted: number, question: string): string[] {
  let queries: string[] = [];
  const json = text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1);
  try {
    const parsed = JSON.parse(json) as { queries?: unknown };
    if (Array.isArray(parsed.queries)) queries = parsed.queries.filter((x): x is string => typeof x === 'string');
  } catch {
    queries = text.split('\n').map((line) => line.replace(/^\s*(?:[-*•]|\d+[.)])\s*/, '').replace(/^["']|["']$/g, ''));
  }
  const unique = [...new Set(queries.map((x) => clipText(x.trim(), 300)).filter((x) => x.length > 2))].slice(0, wanted);
  return unique.length ? unique : [clipText(question, 300)];
}

/** The pages to read: each question's best result in turn, then each one's second, …, without repeats, numbered 1…n. */
export function pickSources(results: readonly { url: string; title: string; snippet: string }[][], wanted: number): ResearchSourceState[] {
  const picked: ResearchSourceState[] = [];
  const seen = new Set<string>();
  for (let rank = 0; picked.length < wanted && results.some((r) => r.length > rank); rank++) {
    for (const list of results) {
      const r = list[rank];
      if (!r) continue;
      const key = r.url.replace(/#.*$/, '');
      if (seen.has(key)) continue;
      seen.add(key);
      picked.push({ n: picked.length + 1, url: r.url, title: r.title, snippet: r.snippet });
      if (picked.length >= wanted) break;
    }
  }
  return picked;
}

const markdownText = (text: string) => text.replace(/[[\]]/g, '');

/**
 * The report with only citations of its sources: a number the model made up
 * (`[7]` with four sources) would point nowhere, so it is dropped, and a list
 * keeps its valid numbers (`[1, 9]` becomes `[1]`). A link's `[text](url)` is
 * left alone, and so is code.
 */
function onlyCitationsOf(text: string, numbers: ReadonlySet<number>): string {
  // Code (fenced or inline) is left as written: `arr[9]` there is no citation.
  return text
    .split(/(```[\s\S]*?(?:```|$)|`[^`\n]*`)/)
    .map((part, i) => (i % 2 ? part : dropCitations(part, numbers)))
    .join('');
}

function dropCitations(text: string, numbers: ReadonlySet<number>): string {
  return text.replace(/( ?)\[(\d+(?:\s*,\s*\d+)*)\](?!\()/g, (_match, space: string, list: string) => {
    const kept = list.split(',').map(Number).filter((n) => numbers.has(n));
    return kept.length ? `${space}[${kept.join(', ')}]` : '';
  });
}

function failureText(error: unknown): string {
  if (isAppError(error)) return `${error.code}: ${error.message}`;
  return 'The research failed unexpectedly';
}
