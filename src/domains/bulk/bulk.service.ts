import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import type { Writable } from 'node:stream';
import type { Orm } from '../../db/orm';
import type { ReadStore } from '../../db/read-store';
import type { SqliteWriter } from '../../db/sqlite-writer';
import { afterCommit, transaction } from '../../db/unit-of-work';
import type { EventBus } from '../../events/event-bus';
import type { JobQueue } from '../../jobs/job-queue';
import type { RunningJob } from '../../jobs/worker';
import { collectGarbage } from '../../kernel/gc';
import type { Logger } from '../../kernel/logger';
import { AppError, isAppError, type ValidationIssue } from '../../errors/catalog';
import { textLength } from '../../errors/text-length';
import { refusedText } from '../../errors/refused-text';
import { storedFileName } from '../../file-name';
import { canSeeJob, requireJobCaller, type JobCaller } from '../../auth/policy';
import type { Principal } from '../../auth/principal';
import { checkPage, type Page } from '../../pagination';
import { creditsFor, holdTokens, modulesApiSpelling, worthRetrying, type AiApi, type Completion } from '../ai';
import { MODEL_NAME_MAX, type CatalogService, type ModelView } from '../catalog';
import type { ExtractLimits } from '../documents';
import { Company, User } from '../identity';
import { isFinished, type JobState } from '../research';
import { BulkJob } from './bulk-job.entity';
import type { BulkConfig } from './config';
import { guardCell } from '../../spreadsheet-cell';
import { cellString, readHeader, readTable, sniffTable, TABLE_MIME, writeTable, type TableCell, type TableFormat, type TableKind } from './table-file';
import { UUID_PATTERN } from '../../ids';

export const BULK_INGEST = 'bulk.ingest';
export const BULK_PROCESS = 'bulk.process';
export const BULK_UPLOAD_SWEEP = 'bulk.upload_sweep';
/** How often uploads no job holds are looked for, and how long one must have been left untouched to go. */
export const UPLOAD_SWEEP_SECONDS = 3600;
export const PROMPT_TEMPLATE_MAX = 8000;
export const COLUMN_NAME_MAX = 255;
/** Rows read into the database per transaction. */
const INGEST_BATCH = 1000;
/** Pending rows a run reads at a time. */
const PROCESS_BATCH = 500;
/** Progress events of one job at most this often (the final state always). */
const PROGRESS_EVERY_MS = 250;
/**
 * Resident-set growth during a run after which it asks for a full
 * collection between two batches: what a row allocates (the provider call,
 * its request and answer) is garbage at once, but V8 lets the heap grow
 * hundreds of MB before collecting it, so a 100,000-row job would otherwise
 * end far larger than a 1,000-row one (bench/README.md).
 */
const GC_AFTER_GROWTH_BYTES = 48 * 1024 * 1024;

export interface BulkJobView {
  id: string;
  status: JobState;
  filename: string;
  format: TableKind;
  inputColumn: string;
  outputColumn: string;
  promptTemplate: string;
  model: string;
  totalRows: number;
  rowsCompleted: number;
  rowsFailed: number;
  /** A cancelled job's rows that will never run (0 otherwise): with the completed and failed ones, they make up totalRows. */
  rowsCancelled: number;
  creditsUsed: number;
  error: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

export interface BulkRowView {
  row: number;
  status: 'completed' | 'failed';
  input: string;
  output: string | null;
  error: string | null;
  tokens: number;
  creditsUsed: number;
}

export interface BulkSubmission {
  /** The uploaded file on disk; the service owns it from here (moved, then deleted once read). */
  path: string;
  filename: string;
  inputColumn?: string | null;
  promptTemplate?: string | null;
  outputColumn?: string | null;
  model?: string | null;
}

interface JobRow {
  id: string;
  company_id: string;
  user_id: string | null;
  api_key_id: string | null;
  filename: string;
  format: TableKind;
  delimiter: string;
  /** 1 when a CSV result starts with a byte-order mark. */
  bom: number;
  columns: string;
  input_column: string;
  input_index: number;
  prompt_template: string;
  output_column: string;
  model: string;
  status: JobState;
  total_rows: number;
  rows_completed: number;
  rows_failed: number;
  credits_used: number;
  error: string | null;
  upload_path: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
}

interface RowRow {
  idx: number;
  cells: string;
  status: 'pending' | 'completed' | 'failed';
  output: string | null;
  error: string | null;
  tokens: number;
  credits: number;
}

const JOB = 'select * from bulk_jobs where id = ?';

/**
 * A row's result found no pending row to land on: its job is gone (its user
 * was deleted, and the job's rows with them). Thrown inside the commit's
 * transaction, so no credits are spent on a result that cannot be kept.
 */
class RowGone extends Error {}
/** The error of a job that ended because its user was deleted (the job went with them). */
export const OWNER_DELETED = "cancelled: the job's user was deleted, and the job with them; rows not yet run were not charged";

const view = (r: JobRow): BulkJobView => ({
  id: r.id,
  status: r.status,
  filename: r.filename,
  format: r.format,
  inputColumn: r.input_column,
  outputColumn: r.output_column,
  promptTemplate: r.prompt_template,
  model: r.model,
  totalRows: r.total_rows,
  rowsCompleted: r.rows_completed,
  rowsFailed: r.rows_failed,
  // Derived rather than stored: a row in flight at the cancellation may still settle (completed or failed), and the counts still add up.
  rowsCancelled: r.status === 'cancelled' ? r.total_rows - r.rows_completed - r.rows_failed : 0,
  creditsUsed: r.credits_used,
  error: r.error,
  createdAt: new Date(r.created_at),
  startedAt: r.started_at === null ? null : new Date(r.started_at),
  finishedAt: r.finished_at === null ? null : new Date(r.finished_at),
});

const rowView = (r: RowRow, inputIndex: number): BulkRowView => ({
  row: r.idx,
  status: r.status as 'completed' | 'failed',
  input: cellString((JSON.parse(r.cells) as TableCell[])[inputIndex]),
  output: r.output,
  error: r.error,
  tokens: r.tokens,
  creditsUsed: r.credits,
});

const outOfCredits = (error: unknown) => isAppError(error) && (error.code === 'insufficient_credits' || error.code === 'budget_exhausted');

/**
 * Bulk jobs: a CSV or .xlsx file whose rows each go to the model through a
 * prompt template ({text} is the row's input cell). The upload is checked
 * up front (type by content, the template, the column); a `bulk.ingest`
 * job streams its rows into the database, and `bulk.process` runs them,
 * BULK_CONCURRENCY at a time, each under its own credit hold whose commit
 * writes the row's result in the same transaction, so a crash or a retry
 * never charges a row twice or loses one. Results are streamed back as
 * NDJSON or as a file in the input's format.
 */
export class BulkService {
  private readonly running = new Map<string, AbortController>();
  private readonly progressTimers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly orm: Orm,
    private readonly writer: SqliteWriter,
    private readonly reads: ReadStore,
    private readonly jobs: JobQueue,
    private readonly events: EventBus,
    private readonly ai: AiApi,
    private readonly catalog: CatalogService,
    private readonly config: BulkConfig,
    private readonly limits: ExtractLimits,
    private readonly uploadDir: string,
    private readonly log: Logger,
  ) {}

  /** Where a route puts an upload while it arrives: a fresh path in the uploads folder. */
  uploadPath(): string {
    fs.mkdirSync(this.uploadDir, { recursive: true, mode: 0o700 });
    return `${this.uploadDir}/${randomUUID()}.upload`;
  }

  /** What a submission needs before its file is read (the caller's scope, a provider): an upload route checks it first, so a refusal costs no transfer. */
  admit(principal: Principal): void {
    requireJobCaller(principal, 'bulk');
    this.ai.engine.requireConfigured();
  }

  /**
   * Creates a job from an uploaded file: refused before anything is kept
   * without a provider (503), with a template lacking {text} or a column
   * the file lacks (422, naming the columns found), a file of another type
   * (415), or past the company's concurrent jobs (429). `kinds`: the
   * formats this door takes (the platform API takes CSV).
   */
  async submit(principal: Principal, input: BulkSubmission, kinds: readonly TableKind[] = ['csv', 'xlsx']): Promise<BulkJobView> {
    let kept = false;
    try {
      const caller = requireJobCaller(principal, 'bulk');
      const fields = checkFields(input);
      this.ai.engine.requireConfigured();
      const model = this.catalog.resolve(fields.model ?? this.ai.config.defaultModel);
      const format = await sniffTable(input.path, input.filename, this.limits);
      if (!kinds.includes(format.kind)) {
        throw new AppError('unsupported_media_type', 'This endpoint takes CSV; send .xlsx files to POST /v1/bulk/submit');
      }
      const header = await readHeader(input.path, format);
      const inputIndex = header.indexOf(fields.inputColumn);
      if (inputIndex < 0) {
        const issues = [{ loc: ['body', 'input_column'], msg: `the file has no column "${fields.inputColumn}"`, type: 'value_error' }];
        throw new AppError('validation_error', `The file has no column "${fields.inputColumn}"; its columns are: ${header.join(', ')}`, { extra: { errors: issues, columns: header } });
      }
      if (header.indexOf(fields.inputColumn, inputIndex + 1) >= 0) {
        // Two columns of that name: which one is meant cannot be guessed.
        throw AppError.validation([{ loc: ['body', 'input_column'], msg: `the file has more than one column "${fields.inputColumn}"; rename one`, type: 'value_error' }]);
      }
      const taken = [fields.outputColumn, `${fields.outputColumn}_error`].find((name) => header.includes(name));
      if (taken) {
        // The result file adds both columns beside the input's: a name the file has would appear twice.
        throw AppError.validation([{ loc: ['body', 'output_column'], msg: `the file already has a column "${taken}"; choose another output_column`, type: 'value_error' }]);
      }
      const id = randomUUID();
      const result = await transaction(this.orm, async (em) => {
        const active = await em.count(BulkJob, { company: caller.companyId, status: { $in: ['queued', 'running'] } });
        if (active >= this.config.maxConcurrent) {
          throw new AppError('job_limit_reached', `Your company has ${active} bulk jobs queued or running, the most it may (BULK_MAX_CONCURRENT); try again when one finishes`, {
            headers: { 'retry-after': '30' },
            extra: { limit: this.config.maxConcurrent },
          });
        }
        const job = em.create(BulkJob, {
          id,
          company: em.getReference(Company, caller.companyId),
          user: caller.userId ? em.getReference(User, caller.userId) : null,
          apiKeyId: caller.keyId,
          filename: storedFileName(input.filename, `upload.${format.kind}`),
          format: format.kind,
          delimiter: format.delimiter,
          bom: format.bom,
          columns: JSON.stringify(header),
          inputColumn: fields.inputColumn,
          inputIndex,
          promptTemplate: fields.promptTemplate,
          outputColumn: fields.outputColumn,
          model: model.id,
          uploadPath: input.path,
        });
        this.jobs.enqueue(BULK_INGEST, { jobId: id });
        await em.flush();
        afterCommit(em, () => this.announce(id, true));
        return job;
      });
      kept = true;
      return this.viewOf(result.id);
    } finally {
      if (!kept) await fs.promises.rm(input.path, { force: true });
    }
  }

  async get(principal: Principal, id: string): Promise<BulkJobView> {
    return view(this.visible(requireJobCaller(principal, 'bulk'), id));
  }

  /** The caller's own jobs, newest first (a company key's: those company keys submitted). */
  list(principal: Principal, page = 1, perPage = 20): Page<BulkJobView> {
    const caller = requireJobCaller(principal, 'bulk');
    checkPage(page, perPage);
    const where = caller.userId ? 'company_id = ? and user_id = ?' : 'company_id = ? and user_id is null and api_key_id is not null';
    const params = caller.userId ? [caller.companyId, caller.userId] : [caller.companyId];
    const total = this.reads.get<{ n: number }>(`select count(*) as n from bulk_jobs where ${where}`, ...params)!.n;
    const rows = this.reads.all<JobRow>(`select * from bulk_jobs where ${where} order by created_at desc, id desc limit ? offset ?`, ...params, perPage, (page - 1) * perPage);
    return { items: rows.map(view), page, perPage, total };
  }

  /** Stops a queued or running job: rows not yet sent stay unprocessed and cost nothing; a finished job is 409. */
  async cancel(principal: Principal, id: string): Promise<BulkJobView> {
    const job = this.visible(requireJobCaller(principal, 'bulk'), id);
    const changed = await this.writer.write(
      (sql) => sql.run("update bulk_jobs set status = 'cancelled', finished_at = ?, updated_at = ? where id = ? and status in ('queued', 'running')", Date.now(), Date.now(), id).changes,
    );
    if (!changed) throw new AppError('job_finished', 'This bulk job has finished already');
    this.running.get(id)?.abort();
    // The rows in flight give their holds back now, also when the worker running them is gone (or in another process).
    await this.ai.credits.releaseHeldUnder(job.company_id, `bulk:${id}:`);
    await this.dropUnreadUpload(id);
    this.announce(id, true);
    return this.viewOf(id);
  }

  /**
   * A cancelled job's upload that no ingest will read any more (its
   * `bulk.ingest` was dead-lettered) goes at once, as a read one does: the
   * job was kept waiting only so its file could list its rows, and nothing
   * else would remove it (the job holds it from the sweep). A live ingest
   * still reads it, and drops it after.
   */
  private async dropUnreadUpload(id: string): Promise<void> {
    const job = this.reads.get<JobRow>(JOB, id);
    if (!job?.upload_path || (await this.jobs.hasLive(BULK_INGEST, { jobId: id }))) return;
    const released = await this.writer.write(
      (sql) =>
        sql.run(
          'update bulk_jobs set upload_path = null, error = coalesce(error, ?), updated_at = ? where id = ? and upload_path = ?',
          'not read: reading its file had been given up when the job was cancelled',
          Date.now(),
          id,
          job.upload_path,
        ).changes,
    );
    if (released) await this.dropUpload(job);
  }

  /** Finished rows after row `after`, in row order, at most `limit` (a row still running ends the page). */
  rows(principal: Principal, id: string, after = 0, limit = 100): BulkRowView[] {
    const job = this.visible(requireJobCaller(principal, 'bulk'), id);
    return this.finishedRows(job, after, limit).rows;
  }

  /**
   * The finished rows after `after` as they come, in row order: follows a
   * running job (each row once it and every row before it are done) and
   * ends when the job has ended and everything finished was sent.
   */
  async *follow(principal: Principal, id: string, after = 0, signal?: AbortSignal): AsyncGenerator<BulkRowView> {
    const first = this.visible(requireJobCaller(principal, 'bulk'), id);
    let cursor = after;
    for (;;) {
      const job = this.reads.get<JobRow>(JOB, id) ?? first;
      const done = isFinished(job.status);
      // At the end, rows never run (a cancelled job's) are skipped rather than waited for.
      const { rows, blocked } = this.finishedRows(job, cursor, 500, done);
      for (const row of rows) {
        yield row;
        cursor = row.row;
      }
      if (signal?.aborted) return;
      if (rows.length === 500) continue;
      if (done) return;
      if (!blocked || rows.length === 0) await this.nextChange(id, signal);
    }
  }

  /** The result file: the input's columns, the output column and an error column, in the input's format, streamed. */
  async download(principal: Principal, id: string): Promise<{ filename: string; mime: string; write: (out: Writable) => Promise<void> }> {
    const job = this.visible(requireJobCaller(principal, 'bulk'), id);
    // A failed job has no file, now or later: it is answered as such, not as one still to come.
    if (job.status === 'failed') throw new AppError('job_failed', `The job failed: ${job.error ?? 'no result'}`, { extra: { job_status: job.status } });
    if (job.status !== 'completed' && job.status !== 'cancelled') {
      throw new AppError('job_not_finished', `The job is ${job.status}; its file is ready once it completes`, { extra: { job_status: job.status } });
    }
    // Cancelled before its file was read: the rows are being read (each to be marked not processed), not absent.
    if (job.upload_path) {
      throw new AppError('job_not_finished', 'The job was cancelled before its file was read; its rows are being read now, ask again shortly', {
        extra: { job_status: job.status },
      });
    }
    const header = [...(JSON.parse(job.columns) as string[]), job.output_column, `${job.output_column}_error`];
    const width = header.length - 2;
    const reads = this.reads;
    async function* rows(): AsyncGenerator<TableCell[]> {
      let cursor = 0;
      for (;;) {
        const page = reads.all<RowRow>('select * from bulk_rows where job_id = ? and idx > ? order by idx limit 1000', id, cursor);
        for (const r of page) {
          const cells = JSON.parse(r.cells) as TableCell[];
          while (cells.length < width) cells.push('');
          const error = r.status === 'pending' ? 'not processed: the job was cancelled' : (r.error ?? '');
          yield [...cells.slice(0, width), guardCell(r.output ?? ''), guardCell(error)];
          cursor = r.idx;
        }
        if (page.length < 1000) return;
      }
    }
    const base = job.filename.replace(/\.[A-Za-z0-9]+$/, '') || 'result';
    return {
      filename: `${base}-results.${job.format}`,
      mime: TABLE_MIME[job.format],
      write: (out) => writeTable(out, { kind: job.format, delimiter: job.delimiter, bom: job.bom === 1 } satisfies TableFormat, header, rows()),
    };
  }

  /** Calls `listener` with each change of the caller's visible jobs (one job with `id`) until the returned detach is called. */
  watch(principal: Principal, id: string | undefined, listener: (job: BulkJobView) => void): () => void {
    const caller = requireJobCaller(principal, 'bulk');
    return this.events.subscribe('bulk.updated', (e) => {
      if (canSeeJob(caller, e) && (id === undefined || e.job.id === id)) listener(e.job);
    });
  }

  /**
   * A user is being deleted (called in the deletion's transaction): their
   * unfinished jobs go with them, so their subscribers get a last state,
   * `cancelled` with OWNER_DELETED, once the deletion commits (what this
   * returns). The rows in flight find no job and stop (RowGone).
   */
  endedWithUser(userId: string): () => void {
    const rows = this.reads.all<JobRow>("select * from bulk_jobs where user_id = ? and status in ('queued', 'running')", userId);
    const finishedAt = new Date();
    const ends = rows.map((row) => ({ companyId: row.company_id, userId, job: { ...view({ ...row, status: 'cancelled' }), error: OWNER_DELETED, finishedAt } }));
    return () => {
      for (const end of ends) {
        // A trailing progress announcement would find no row; dropped anyway so nothing follows the end.
        clearTimeout(this.progressTimers.get(end.job.id));
        this.progressTimers.delete(end.job.id);
        this.events.publish('bulk.updated', end);
      }
    };
  }

  /** Whether `id` is a bulk job the caller may see (for a subscription to pick its source). */
  exists(principal: Principal, id: string): boolean {
    return this.find(requireJobCaller(principal, 'bulk'), id) !== null;
  }

  /**
   * `bulk.ingest`: streams the uploaded file into `bulk_rows`, a thousand
   * rows a transaction; a repeat after a crash inserts only what is
   * missing. An unreadable file fails the job.
   */
  async ingest(payload: { jobId: string }): Promise<void> {
    const job = this.reads.get<JobRow>(JOB, payload.jobId);
    if (!job?.upload_path) return;
    // A job cancelled before its file was read still has its rows read, so its file lists them, each not processed.
    if (job.status === 'failed' || job.status === 'completed') return this.dropUpload(job);
    const format: TableFormat = { kind: job.format, delimiter: job.delimiter, bom: job.bom === 1 };
    let idx = 0;
    let batch: [number, string][] = [];
    const flush = async () => {
      const rows = batch;
      batch = [];
      await this.writer.write((sql) => {
        for (const [i, cells] of rows) sql.run("insert or ignore into bulk_rows (job_id, idx, cells, status, tokens, credits) values (?, ?, ?, 'pending', 0, 0)", job.id, i, cells);
      });
    };
    try {
      let header = true;
      for await (const cells of readTable(job.upload_path, format)) {
        if (header) {
          header = false;
          continue;
        }
        if (++idx > this.config.maxRows) throw AppError.validation([{ loc: ['body', 'file'], msg: `more than ${this.config.maxRows} rows`, type: 'file' }], `The file has more than ${this.config.maxRows} rows (BULK_MAX_ROWS)`);
        batch.push([idx, JSON.stringify(cells)]);
        if (batch.length >= INGEST_BATCH) await flush();
      }
      await flush();
    } catch (error) {
      if (!isAppError(error)) throw error; // an I/O failure: retried
      await this.writer.write((sql) => {
        // The upload goes below, so no row names it any more.
        const failed = sql.run(
          "update bulk_jobs set status = 'failed', error = ?, upload_path = null, finished_at = ?, updated_at = ? where id = ? and status in ('queued', 'running')",
          error.message,
          Date.now(),
          Date.now(),
          job.id,
        ).changes;
        // A cancelled job stays cancelled, with the reason its file gives no rows, and none of the rows read before it.
        if (!failed) {
          sql.run('delete from bulk_rows where job_id = ?', job.id);
          sql.run('update bulk_jobs set error = ?, upload_path = null, updated_at = ? where id = ?', `not read: ${error.message}`, Date.now(), job.id);
        }
      });
      await this.dropUpload(job);
      this.announce(job.id, true);
      return;
    }
    const total = idx;
    const cancelled = await this.writer.write((sql) => {
      sql.run('update bulk_jobs set total_rows = ?, upload_path = null, updated_at = ? where id = ?', total, Date.now(), job.id);
      return sql.get<{ status: JobState }>('select status from bulk_jobs where id = ?', job.id)?.status === 'cancelled';
    });
    await this.dropUpload(job);
    // Each restart or lost lease counts an attempt; a long job may see many, and its rows are safe across them.
    if (!cancelled) this.jobs.enqueue(BULK_PROCESS, { jobId: job.id }, { dedupeKey: `${BULK_PROCESS}:${job.id}`, maxAttempts: 100 });
    this.announce(job.id, true);
  }

  /**
   * `bulk.process`: runs the job's pending rows, BULK_CONCURRENCY at once,
   * until none is left, then completes the job. A row's result, its counters
   * and its credits commit in one transaction; a repeat after a crash finds
   * the row's hold by its key and charges it once.
   */
  async process(payload: { jobId: string }, run: RunningJob): Promise<void> {
    const start = this.reads.get<JobRow>(JOB, payload.jobId);
    if (!start || isFinished(start.status)) return;
    if (start.status === 'queued') {
      await this.writer.write((sql) => sql.run("update bulk_jobs set status = 'running', started_at = ?, updated_at = ? where id = ? and status = 'queued'", Date.now(), Date.now(), start.id));
      this.announce(start.id, true);
    }
    let model: ModelView;
    try {
      model = this.catalog.resolve(start.model);
    } catch (error) {
      // Blocked or removed since the job was submitted: no retry can mend that, so the job fails with the reason.
      if (!isAppError(error)) throw error;
      await this.writer.write((sql) =>
        sql.run("update bulk_jobs set status = 'failed', error = ?, finished_at = ?, updated_at = ? where id = ? and status in ('queued', 'running')", `${error.code}: ${error.message}`, Date.now(), Date.now(), start.id),
      );
      this.announce(start.id, true);
      return;
    }
    const abort = new AbortController();
    this.running.set(start.id, abort);
    const signal = AbortSignal.any([abort.signal, run.signal]);
    // Set by the first row refused for credits: no further row starts.
    const out: { of: AppError | null } = { of: null };
    const baseline = process.memoryUsage.rss();
    let batches = 0;
    try {
      while (!signal.aborted && !out.of) {
        // At most every fourth batch: when V8 keeps its pages after a collection, asking again at once would not help.
        if (++batches % 4 === 0 && process.memoryUsage.rss() - baseline > GC_AFTER_GROWTH_BYTES) await collectGarbage();
        const pending = this.reads.all<{ idx: number; cells: string }>("select idx, cells from bulk_rows where job_id = ? and status = 'pending' order by idx limit ?", start.id, PROCESS_BATCH);
        if (!pending.length) break;
        let next = 0;
        // Rows running now, and the rows refused credits that wait for one of them to settle.
        let running = 0;
        const waiting: (() => void)[] = [];
        const worker = async () => {
          while (next < pending.length && !signal.aborted && !out.of) {
            const row = pending[next++]!;
            while (!signal.aborted && !out.of) {
              let refused: AppError | null = null;
              running++;
              try {
                await this.runRow(start, model, row, signal, run);
              } catch (error) {
                if (outOfCredits(error)) refused = error as AppError;
                else if (!signal.aborted) throw error;
              } finally {
                running--;
                for (const wake of waiting.splice(0)) wake();
              }
              if (!refused) break;
              // A hold is the most a row may cost, and its commit returns the rest: while other rows still
              // hold credits, wait for one to settle and ask again. Out of credits only once none does.
              if (running === 0) out.of ??= refused;
              else await new Promise<void>((resolve) => waiting.push(resolve));
            }
          }
        };
        await Promise.all(Array.from({ length: this.config.concurrency }, worker));
      }
      if (signal.aborted) {
        // Cancelled: the cancellation settled the job. Stopping, or the lease lost: the rows left wait for the next run.
        if (run.signal.aborted) throw new Error('stopped before its rows were done (the process is stopping, or another worker took the job over)');
        return;
      }
      // Bulk is an AI module: a row's reason is written as the AI modules API spells it (on either surface).
      const spelled = out.of && (modulesApiSpelling(out.of) as AppError);
      const reason = spelled ? `${spelled.code}: ${spelled.message}` : null;
      const finished = await this.writer.write((sql) => {
        const now = Date.now();
        // Out of credits: the rows not run fail with that reason, and the job still completes.
        const failed = reason ? sql.run("update bulk_rows set status = 'failed', error = ?, finished_at = ? where job_id = ? and status = 'pending'", reason, now, start.id).changes : 0;
        return sql.run(
          "update bulk_jobs set status = 'completed', rows_failed = rows_failed + ?, finished_at = ?, updated_at = ? where id = ? and status = 'running'",
          failed,
          now,
          now,
          start.id,
        ).changes;
      });
      if (finished) {
        const done = this.reads.get<JobRow>(JOB, start.id)!;
        this.announce(start.id, true);
        this.events.publish('bulk.job.completed', {
          id: randomUUID(),
          type: 'bulk.job.completed',
          created_at: new Date().toISOString(),
          company_id: done.company_id,
          data: { job_id: done.id, total_rows: done.total_rows, rows_completed: done.rows_completed, rows_failed: done.rows_failed },
        });
      }
    } finally {
      this.running.delete(start.id);
      // Counts still waiting for their throttled announcement go out now, while the database is surely open (a stop closes it after this).
      if (this.progressTimers.has(start.id)) this.announce(start.id, true);
    }
  }

  /** One row: a hold for the largest call, the call (retried), then its result and credits together, or its failure and the hold returned. */
  private async runRow(job: JobRow, model: ModelView, row: { idx: number; cells: string }, signal: AbortSignal, run: RunningJob): Promise<void> {
    if (!this.reads.get(JOB, job.id)) return this.stopGone(job.id);
    const text = cellString((JSON.parse(row.cells) as TableCell[])[job.input_index]);
    const caller = { companyId: job.company_id, userId: job.user_id, keyId: job.api_key_id };
    if (!text.trim()) {
      await this.writer.write((sql) => this.rowFailed(sql, job.id, row.idx, 'the input cell is empty'));
      this.progress(job.id);
      return;
    }
    // A function replacement: a cell's `$&`, `$$` or `$`` is text, not a replacement pattern.
    const prompt = job.prompt_template.replaceAll('{text}', () => text);
    const messages = [{ role: 'user' as const, content: prompt }];
    const maxTokens = this.ai.config.maxOutputTokens;
    const hold = await this.ai.credits.reserve(caller, {
      credits: creditsFor(holdTokens(messages, maxTokens), model),
      key: `bulk:${job.id}:${row.idx}`,
      feature: 'bulk',
      model: model.id,
    });
    if (hold.status !== 'held') {
      // A commit writes its row in the same transaction, so a settled hold of a pending row was released (a cancelled run's): the row fails rather than run unpaid.
      await this.writer.write((sql) => this.rowFailed(sql, job.id, row.idx, 'its credit hold was released before it ran'));
      return;
    }
    let failure: unknown;
    // Set when the model answered but the row's result and credits did not commit.
    let unsettled = false;
    for (let attempt = 1; attempt <= this.config.rowAttempts; attempt++) {
      let reply: Completion;
      try {
        reply = await this.ai.engine.complete({ model, messages, maxTokens, signal });
      } catch (error) {
        failure = error;
        if (signal.aborted || !worthRetrying(error) || attempt === this.config.rowAttempts) break;
        await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** (attempt - 1)));
        continue;
      }
      const tokens = reply.usage.totalTokens;
      const credits = Math.min(creditsFor(tokens, model), hold.credits);
      try {
        await this.ai.credits.commit(hold, { credits, tokens, model: model.id }, (sql, now) => {
          const output = reply.content.trim();
          if (!sql.run("update bulk_rows set status = 'completed', output = ?, tokens = ?, credits = ?, finished_at = ? where job_id = ? and idx = ? and status = 'pending'", output, tokens, credits, now, job.id, row.idx).changes) {
            throw new RowGone();
          }
          sql.run('update bulk_jobs set rows_completed = rows_completed + 1, credits_used = credits_used + ?, updated_at = ? where id = ?', credits, now, job.id);
        });
      } catch (error) {
        if (error instanceof RowGone) {
          await this.ai.credits.release(hold);
          if (!this.reads.get(JOB, job.id)) this.stopGone(job.id);
          return;
        }
        // Not the provider's failure: calling it again would not mend it, and would pay for another answer.
        failure = error;
        unsettled = true;
        break;
      }
      this.progress(job.id);
      return;
    }
    if (signal.aborted) {
      // Cancelled: the row is not run and its hold goes back. A lost lease keeps the hold for the worker that goes on (same key).
      if (!run.signal.aborted) await this.ai.credits.release(hold);
      return;
    }
    if (unsettled) this.log.error({ err: failure, jobId: job.id, row: row.idx }, 'a bulk row ran but its result and credits could not be committed');
    // A failed commit is the server's (never a ledger's validation error shown as the row's): the row fails, charged nothing.
    const reason = unsettled
      ? 'internal_error: the row ran but its result could not be stored; nothing was charged'
      : isAppError(failure) ? `${failure.code}: ${failure.message}` : 'the model call failed';
    await this.ai.credits.releaseWith(hold, (sql) => this.rowFailed(sql, job.id, row.idx, reason));
    this.progress(job.id);
  }

  /** The job's rows were deleted under it (with its user): no further row runs; the rows in flight give their holds back. */
  private stopGone(id: string): void {
    this.running.get(id)?.abort();
  }

  private rowFailed(sql: { run(sql: string, ...params: unknown[]): { changes: number } }, jobId: string, idx: number, reason: string): void {
    const now = Date.now();
    if (sql.run("update bulk_rows set status = 'failed', error = ?, finished_at = ? where job_id = ? and idx = ? and status = 'pending'", reason, now, jobId, idx).changes) {
      sql.run('update bulk_jobs set rows_failed = rows_failed + 1, updated_at = ? where id = ?', now, jobId);
    }
  }

  /** The finished rows after `after`: up to the first row still pending (unless `skipPending`). */
  private finishedRows(job: JobRow, after: number, limit: number, skipPending = false): { rows: BulkRowView[]; blocked: boolean } {
    const page = this.reads.all<RowRow>('select * from bulk_rows where job_id = ? and idx > ? order by idx limit ?', job.id, after, limit);
    const rows: BulkRowView[] = [];
    let expected = after + 1;
    for (const r of page) {
      if (r.status === 'pending' || (!skipPending && r.idx !== expected)) {
        if (skipPending) continue;
        return { rows, blocked: true };
      }
      rows.push(rowView(r, job.input_index));
      expected = r.idx + 1;
    }
    return { rows, blocked: false };
  }

  /** Resolves at the job's next progress event, or after a second (a change another process made). */
  private nextChange(id: string, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        stop();
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, 1000);
      const stop = this.events.subscribe('bulk.updated', (e) => e.job.id === id && done());
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /** Announces a job's counts at most every PROGRESS_EVERY_MS (trailing, so the last change is always told). */
  private progress(id: string): void {
    if (this.progressTimers.has(id)) return;
    const timer = setTimeout(() => {
      this.progressTimers.delete(id);
      this.announce(id, false);
    }, PROGRESS_EVERY_MS);
    timer.unref();
    this.progressTimers.set(id, timer);
  }

  /** Publishes the job's committed state (`now`: a change of state, told at once). */
  private announce(id: string, now: boolean): void {
    if (now) {
      clearTimeout(this.progressTimers.get(id));
      this.progressTimers.delete(id);
    }
    const row = this.reads.get<JobRow>(JOB, id);
    if (row) this.events.publish('bulk.updated', { companyId: row.company_id, userId: row.user_id, job: view(row) });
  }

  private viewOf(id: string): BulkJobView {
    return view(this.reads.get<JobRow>(JOB, id)!);
  }

  /** The job with `id` if the caller may see it; another company's or another member's is as absent as an unknown one. */
  private find(caller: JobCaller, id: string): JobRow | null {
    const job = UUID_PATTERN.test(id) ? this.reads.get<JobRow>(JOB, id) : undefined;
    return job && canSeeJob(caller, { companyId: job.company_id, userId: job.user_id }) ? job : null;
  }

  private visible(caller: JobCaller, id: string): JobRow {
    const job = this.find(caller, id);
    if (!job) throw new AppError('not_found', 'No bulk job with this id');
    return job;
  }

  /**
   * `bulk.upload_sweep`: removes uploads no job holds that nothing has
   * written for an hour: a server killed while a file arrived, or a job whose
   * user or company was deleted before its rows were read (the row went with
   * them, the file did not). An upload still arriving is written to, so it
   * stays; one waiting for its rows to be read is held by its job. First, a
   * cancelled job lets go of a file its ingest gave up on after the cancel
   * (a cancel that came after finds that itself, `dropUnreadUpload`).
   */
  async sweepUploads(now = Date.now()): Promise<number> {
    for (const { id } of this.reads.all<{ id: string }>("select id from bulk_jobs where status = 'cancelled' and upload_path is not null")) {
      await this.dropUnreadUpload(id);
    }
    let names: string[];
    try {
      names = await fs.promises.readdir(this.uploadDir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw error;
    }
    const held = new Set(this.reads.all<{ upload_path: string }>('select upload_path from bulk_jobs where upload_path is not null').map((r) => r.upload_path));
    let removed = 0;
    for (const name of names) {
      const file = `${this.uploadDir}/${name}`;
      if (!name.endsWith('.upload') || held.has(file)) continue;
      const stat = await fs.promises.stat(file).catch(() => null);
      if (!stat?.isFile() || now - stat.mtimeMs < UPLOAD_SWEEP_SECONDS * 1000) continue;
      await fs.promises.rm(file, { force: true });
      removed++;
    }
    if (removed) this.log.info({ removed }, 'bulk uploads no job holds removed');
    return removed;
  }

  private async dropUpload(job: JobRow): Promise<void> {
    if (job.upload_path) await fs.promises.rm(job.upload_path, { force: true });
  }
}

function checkFields(input: BulkSubmission): { inputColumn: string; promptTemplate: string; outputColumn: string; model: string | null } {
  const issues: ValidationIssue[] = [];
  const inputColumn = (input.inputColumn ?? '').trim();
  if (!inputColumn || textLength(inputColumn) > COLUMN_NAME_MAX) issues.push({ loc: ['body', 'input_column'], msg: `required, 1 to ${COLUMN_NAME_MAX} characters`, type: 'missing' });
  const promptTemplate = input.promptTemplate ?? '';
  if (!promptTemplate.trim() || textLength(promptTemplate) > PROMPT_TEMPLATE_MAX) {
    issues.push({ loc: ['body', 'prompt_template'], msg: `required, 1 to ${PROMPT_TEMPLATE_MAX} characters`, type: 'missing' });
  } else if (!promptTemplate.includes('{text}')) {
    issues.push({ loc: ['body', 'prompt_template'], msg: 'must contain the placeholder {text}, which each row\'s input cell replaces', type: 'value_error' });
  }
  const outputColumn = (input.outputColumn ?? '').trim() || 'AI_Result';
  if (textLength(outputColumn) > COLUMN_NAME_MAX) issues.push({ loc: ['body', 'output_column'], msg: `at most ${COLUMN_NAME_MAX} characters`, type: 'string_length' });
  const model = input.model?.trim() || null;
  if (model && textLength(model) > MODEL_NAME_MAX) issues.push({ loc: ['body', 'model'], msg: `at most ${MODEL_NAME_MAX} characters`, type: 'string_too_long' });
  // Multipart fields, which the REST adapter's JSON check does not see.
  const texts = { input_column: input.inputColumn, prompt_template: input.promptTemplate, output_column: input.outputColumn, model: input.model };
  for (const { path, issue } of refusedText(texts)) issues.push({ loc: ['body', ...path], ...issue });
  if (issues.length) throw AppError.validation(issues);
  return { inputColumn, promptTemplate, outputColumn, model };
}
