import fs from 'node:fs';
import { once } from 'node:events';
import { pipeline } from 'node:stream/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { path, type RestRoute } from '../route';
import { pageArgs } from '../pagination';
import { AppError } from '../../src/errors/catalog';
import { errorBody } from '../../src/host/problem';
import { PROBLEM_DETAILS_SINCE } from '../../src/version';
import { isAppError } from '../../src/errors/catalog';
import { COLUMN_NAME_MAX, PROMPT_TEMPLATE_MAX, TABLE_MIME, type BulkJobView, type BulkRowView, type TableKind } from '../../src/domains/bulk';
import { MODEL_NAME_MAX } from '../../src/domains/catalog';
import { jobStates } from '../../src/domains/research';
import { jobIdAnswer, jobIdPage } from '../schemas';
import { fieldText, requireMultipart, TEXT_FIELDS_AS_BYTES, uploadFailure } from '../multipart';
import type { Principal } from '../../src/auth/principal';
import { callerOf, sessionCookieOf } from '../../src/host/principal';
import { runInUnitOfWork } from '../../src/db/unit-of-work';
import type { CredentialWatch } from '../../src/host/live-credentials';

const MODULES_KEY = 'Takes only an AI-modules key (Authorization: Bearer sk_live_svc_…) with the bulk scope; any other credential is 401.';
const PLATFORM = "Takes a signed-in user's access token or a company API key (svc_…).";
const COST =
  "Each row costs tokens ÷ 1,000 × the model's credit cost from the catalog, rounded up, under its own credit hold; when credits run out the " +
  'remaining rows fail with CREDIT_EXHAUSTED (or BUDGET_EXHAUSTED) and the job still completes, its counts saying so.';
const FORM =
  'input_column (required: the column whose cell fills the template), prompt_template (required; must contain {text}, else 422), ' +
  'output_column (default AI_Result) and model (optional: a catalog id or family). A column the file lacks is 422 and the body lists the ' +
  'columns found. Rows run BULK_CONCURRENCY at a time, each retried on provider failures (BULK_ROW_ATTEMPTS). Without AI_BASE_URL: 503, ' +
  'nothing kept. Follow it with the status read, the NDJSON rows or the jobProgress GraphQL subscription.';

const FIELDS = ['input_column', 'prompt_template', 'output_column', 'model'] as const;

const jobAccepted = (job: BulkJobView) => ({ job_id: job.id, status: job.status, filename: job.filename, format: job.format });
/** The platform API names a job `id`, as its other bulk and research paths and GraphQL do. */
const platformJobAccepted = (job: BulkJobView) => ({ id: job.id, status: job.status, filename: job.filename, format: job.format });

/**
 * Reads a multipart upload: the `file` part streamed to disk (the limit
 * enforced while it arrives: more is 413 and nothing is kept), the text
 * fields beside it, in any order.
 */
async function readUpload(request: FastifyRequest): Promise<{ path: string; filename: string; fields: Partial<Record<(typeof FIELDS)[number], string>> }> {
  const { bulk, limits } = request.server.domains.bulk;
  requireMultipart(request, 'Send the file as multipart/form-data in a field named "file", with the other fields beside it');
  const target = bulk.uploadPath();
  const fields: Partial<Record<(typeof FIELDS)[number], string>> = {};
  let filename: string | null = null;
  const tooLarge = () => new AppError('payload_too_large', `The file is larger than ${Math.round(limits.maxBytes / 1024 / 1024)} MB, or the form has too many parts`);
  try {
    // A field's limit is in bytes: room for its longest allowed text in UTF-8 (up to four bytes a character).
    for await (const part of request.parts({ ...TEXT_FIELDS_AS_BYTES, limits: { fileSize: limits.maxBytes, files: 1, fields: 8, parts: 9, fieldSize: 4 * PROMPT_TEMPLATE_MAX + 1024 } })) {
      if (part.type === 'file') {
        if (part.fieldname !== 'file') {
          part.file.resume();
          throw AppError.validation([{ loc: ['body', part.fieldname], msg: 'the file goes in a field named "file"', type: 'value_error' }]);
        }
        filename = part.filename || 'upload';
        await pipeline(part.file, fs.createWriteStream(target, { mode: 0o600 }));
        if (part.file.truncated) throw tooLarge();
      } else if ((FIELDS as readonly string[]).includes(part.fieldname)) {
        // Cut short by the limit: refused rather than used as cut (a template would lose its end).
        if (part.valueTruncated) throw AppError.validation([{ loc: ['body', part.fieldname], msg: 'too long', type: 'string_too_long' }]);
        // A field given twice is refused, as a second file is: which one was meant is not ours to guess.
        if (fields[part.fieldname as (typeof FIELDS)[number]] !== undefined) {
          throw AppError.validation([{ loc: ['body', part.fieldname], msg: 'given more than once', type: 'value_error' }]);
        }
        fields[part.fieldname as (typeof FIELDS)[number]] = fieldText(part.fieldname, part.value);
      }
    }
  } catch (error) {
    await fs.promises.rm(target, { force: true });
    throw uploadFailure(error, tooLarge());
  }
  if (filename === null) {
    await fs.promises.rm(target, { force: true });
    throw AppError.validation([{ loc: ['body', 'file'], msg: 'a multipart field named "file" is required', type: 'missing' }]);
  }
  return { path: target, filename, fields };
}

function submitter(kinds: readonly TableKind[], answer: (job: BulkJobView) => unknown) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    request.server.domains.bulk.bulk.admit(request.principal);
    const upload = await readUpload(request);
    const job = await request.server.domains.bulk.bulk.submit(
      request.principal,
      { path: upload.path, filename: upload.filename, inputColumn: upload.fields.input_column, promptTemplate: upload.fields.prompt_template, outputColumn: upload.fields.output_column, model: upload.fields.model },
      kinds,
    );
    return reply.code(202).send(answer(job));
  };
}

/**
 * Content-Disposition of a download whatever its name holds: an ASCII
 * fallback and the exact name in UTF-8 (RFC 6266, RFC 8187). A raw name
 * with other characters would make node refuse the header after the reply
 * was taken over, and the client would wait for ever.
 */
function attachment(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  let exact: string;
  try {
    exact = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  } catch {
    return `attachment; filename="${fallback}"`;
  }
  return `attachment; filename="${fallback}"; filename*=UTF-8''${exact}`;
}

function download(param: string) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const id = (request.params as Record<string, string>)[param]!;
    const file = await request.server.domains.bulk.bulk.download(request.principal, id);
    const raw = reply.raw;
    reply.hijack();
    raw.writeHead(200, {
      ...(reply.getHeaders() as Record<string, string>),
      'content-type': file.mime,
      'content-disposition': attachment(file.filename),
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    });
    try {
      await file.write(raw);
    } catch (error) {
      request.log.error({ err: error }, 'bulk download failed');
      raw.destroy();
      return;
    }
    raw.end();
  };
}

const rowLine = (row: BulkRowView) =>
  `${JSON.stringify({ row: row.row, status: row.status, input: row.input, output: row.output, error: row.error, tokens: row.tokens, credits_used: row.creditsUsed })}\n`;

/**
 * The caller of a request again, as the principal hook resolves it (a Bearer
 * header, else the session cookie), in a unit of work of its own: asked
 * from an event published by another request.
 */
async function callerAgain(request: FastifyRequest): Promise<Principal> {
  return runInUnitOfWork(request.server.kernel.orm, async () => callerOf(request.server.domains.identity.access, request, sessionCookieOf(request)));
}

/**
 * GET /bulk/jobs/{id}/rows: NDJSON, in row order, following a running job until it ends; ?after=N resumes after row N.
 * A stream is a live credential as a graphql-ws socket is: it ends, with a last
 * {error} line, once its credential would be refused (session or key revoked,
 * token expired, security policy) or its caller may no longer read the job (access
 * changed: judged again), and when the server stops (503, resume with ?after).
 */
async function rows(request: FastifyRequest, reply: FastifyReply) {
  const { id } = request.params as { id: string };
  const after = (request.query as { after?: number }).after ?? 0;
  const app = request.server;
  const bulk = app.domains.bulk.bulk;
  // Access first, so a refusal is still a problem document; then the headers go out at once, rows or not.
  await bulk.get(request.principal, id);
  const stop = new AbortController();
  let sent = after;
  // Why the stream ends before the job does: its last line.
  let ending: (() => AppError) | undefined;
  const endWith = (problem: () => AppError) => {
    if (stop.signal.aborted) return;
    ending = problem;
    stop.abort();
  };
  const stopping = () => endWith(() => new AppError('server_busy', `The server is stopping; resume with ?after=${sent}`));
  let watch: CredentialWatch | undefined;
  const watchCredential = (principal: Principal) => {
    if (principal.kind !== 'user' && principal.kind !== 'api_key') return;
    watch = app.liveCredentials.watch({
      principal,
      ip: request.ip,
      expiresAt: app.domains.identity.access.expiresAt(request.headers.authorization),
      end: (refusal, event) => {
        if (event !== 'credential_changed') return endWith(() => refusal);
        // The user's access changed (role, email, status): judged afresh, as a new request would be, on this job too.
        callerAgain(request)
          .then(async (caller) => {
            if (caller.kind === 'anonymous') throw caller.credentialError ?? new AppError('unauthenticated', 'A Bearer credential is required');
            await bulk.get(caller, id);
            if (!stop.signal.aborted) watchCredential(caller);
          })
          .catch((error: unknown) => endWith(() => (isAppError(error) ? error : refusal)));
      },
    });
  };
  const iterator = bulk.follow(request.principal, id, after, stop.signal);
  const raw = reply.raw;
  reply.hijack();
  raw.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string>),
    'content-type': 'application/x-ndjson; charset=utf-8',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
  });
  raw.on('close', () => stop.abort());
  watchCredential(request.principal);
  app.stopping.addEventListener('abort', stopping, { once: true });
  if (app.stopping.aborted) stopping();
  try {
    raw.flushHeaders();
    for await (const row of iterator) {
      // Not one row more once the stream is to end (a revoked credential).
      if (stop.signal.aborted) break;
      if (!raw.write(rowLine(row))) await once(raw, 'drain', { signal: stop.signal });
      sent = row.row;
    }
  } catch (error) {
    if (!stop.signal.aborted) {
      const problem = isAppError(error) ? error : new AppError('internal_error', 'The rows could not be read');
      if (!isAppError(error)) request.log.error({ err: error }, 'bulk rows stream failed');
      ending = () => problem;
    }
  } finally {
    stop.abort();
    watch?.stop();
    app.stopping.removeEventListener('abort', stopping);
    if (ending && !raw.destroyed) raw.write(`${JSON.stringify({ error: errorBody(ending(), request, app.config.docsUrl).body })}\n`);
    raw.end();
  }
}

const acceptedProperties = { status: { type: 'string', enum: [...jobStates] }, filename: { type: 'string' }, format: { type: 'string', enum: ['csv', 'xlsx'] } };
const acceptedSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['job_id', 'status', 'filename', 'format'],
  properties: { job_id: { type: 'string', format: 'uuid' }, ...acceptedProperties },
};
const platformAcceptedSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'status', 'filename', 'format'],
  properties: { id: { type: 'string', format: 'uuid' }, ...acceptedProperties },
};
/** A result file is in its input's format (TABLE_MIME), whichever door the job came in by. */
const resultFile = {
  [TABLE_MIME.csv.split(';')[0]!]: { type: 'string', description: 'The result as CSV (UTF-8), when the input was CSV' },
  [TABLE_MIME.xlsx]: { type: 'string', format: 'binary', description: 'The result as an Excel workbook, when the input was .xlsx' },
};
const fileResponse = { type: 'string', format: 'binary', description: 'CSV (text/csv) or .xlsx, as the input was' };

/** The multipart form of a submission, as readUpload and the service read it. */
function bulkForm(file: string) {
  return {
    type: 'object',
    required: ['file', 'input_column', 'prompt_template'],
    properties: {
      file: { type: 'string', format: 'binary', description: file },
      input_column: { type: 'string', minLength: 1, maxLength: COLUMN_NAME_MAX, description: "The column whose cell fills {text} in each row's prompt" },
      prompt_template: {
        type: 'string',
        minLength: 1,
        maxLength: PROMPT_TEMPLATE_MAX,
        description: "The prompt of each row; must contain the placeholder {text}, which the row's input cell replaces",
      },
      output_column: {
        type: 'string',
        maxLength: COLUMN_NAME_MAX,
        default: 'AI_Result',
        description: 'The result column the file gains (beside it <output_column>_error); a column the file already has is 422',
      },
      model: { type: 'string', maxLength: MODEL_NAME_MAX, description: 'A catalog model id or a model family (default: the configured default model)' },
    },
  };
}

export const bulkRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/bulk/submit',
    operationId: 'submitBulkJob',
    summary: 'Submit a bulk job',
    description:
      `multipart/form-data: file (.xlsx or CSV, up to UPLOAD_MAX_MB, 50 MB; the type is decided by the content, and a file that is neither is 415), ${FORM} ` +
      `${COST} Answers 202 with job_id. ${MODULES_KEY}`,
    tag: 'AI modules: bulk',
    credential: 'module_key',
    auth: 'required',
    status: 202,
    problems: {
      403: 'insufficient_scope: the key lacks the bulk scope',
      404: 'model_not_found',
      413: 'The file is too large',
      415: 'Not .xlsx or CSV',
      422: 'A missing field, a template without {text}, a column the file lacks, or model_blocked',
      429: 'job_limit_reached',
      503: 'ai_provider_not_configured',
    },
    response: acceptedSchema,
    multipart: bulkForm('The table: .xlsx or CSV (decided by its content), up to UPLOAD_MAX_MB'),
    raw: submitter(['csv', 'xlsx'], jobAccepted),
  },
  {
    method: 'GET',
    path: '/bulk/download/:job_id',
    operationId: 'downloadBulkResult',
    summary: 'Download a bulk result',
    description:
      'The result file in the input\'s format (xlsx in, xlsx out; CSV in, CSV out), streamed: the input\'s columns, the output column and ' +
      '<output_column>_error for failed rows. Text a spreadsheet would run as a formula is prefixed with an apostrophe: in a CSV every text cell (the input\'s own and the column names included), in a workbook what the model wrote (a workbook\'s text cells are never formulas). ' +
      `Before the job completes (or is cancelled) it is 409 job_not_finished, with the job's state in \`job_status\`, as it is for the moment a job ` +
      'cancelled before its file was read takes to read its rows (then each is marked not processed); a job that failed as a whole ' +
      `(an unreadable file) has no result and is 409 job_failed, its error in \`detail\`. ${MODULES_KEY}`,
    tag: 'AI modules: bulk',
    credential: 'module_key',
    auth: 'required',
    status: 200,
    problems: { 403: 'insufficient_scope: the key lacks the bulk scope', 404: 'No bulk job of yours with this id', 409: 'job_not_finished; job_failed' },
    request: { params: { type: 'object', required: ['job_id'], properties: { job_id: { type: 'string', format: 'uuid' } } } },
    response: fileResponse,
    content: resultFile,
    raw: download('job_id'),
  },
  {
    method: 'GET',
    path: '/bulk/status/:job_id',
    operationId: 'getBulkStatusWithKey',
    summary: 'Bulk job status',
    description: `status (queued, running, completed, failed, cancelled), total_rows, rows_completed, rows_failed, rows_cancelled (a cancelled job's rows that will never run: the three add up to total_rows), credits_used and timestamps. ${MODULES_KEY}`,
    tag: 'AI modules: bulk',
    extension: true,
    credential: 'module_key',
    status: 200,
    problems: { 403: 'insufficient_scope: the key lacks the bulk scope', 404: 'No bulk job of yours with this id' },
    field: 'bulkJob',
    args: { id: path('job_id') },
    answer: jobIdAnswer,
  },
  {
    method: 'GET',
    path: '/bulk/list',
    operationId: 'listBulkJobsWithKey',
    summary: 'Your bulk jobs',
    description: `Your bulk jobs, newest first, paged. ${MODULES_KEY}`,
    tag: 'AI modules: bulk',
    extension: true,
    credential: 'module_key',
    status: 200,
    problems: { 403: 'insufficient_scope: the key lacks the bulk scope' },
    field: 'bulkJobs',
    args: pageArgs(),
    paginated: true,
    answer: jobIdPage,
  },
  {
    method: 'POST',
    path: '/bulk/cancel/:job_id',
    operationId: 'cancelBulkJobWithKey',
    summary: 'Cancel a bulk job',
    description: `Stops a queued or running job: rows not yet sent stay unprocessed, cost nothing and are counted in rows_cancelled. A finished job is 409 job_finished. ${MODULES_KEY}`,
    tag: 'AI modules: bulk',
    extension: true,
    credential: 'module_key',
    status: 200,
    problems: { 403: 'insufficient_scope: the key lacks the bulk scope', 404: 'No bulk job of yours with this id', 409: 'job_finished' },
    field: 'cancelBulkJob',
    args: { id: path('job_id') },
    answer: jobIdAnswer,
  },
  {
    method: 'POST',
    path: '/bulk/jobs',
    operationId: 'createBulkJob',
    summary: 'Create a bulk job from a CSV',
    description: `multipart/form-data: file (CSV, up to UPLOAD_MAX_MB; anything else is 415), ${FORM} ${COST} Answers 202 with the job's id, status, filename and format. ${PLATFORM}`,
    tag: 'Research and bulk jobs',
    auth: 'required',
    status: 202,
    problems: {
      404: 'model_not_found',
      413: 'The file is too large',
      415: 'Not CSV',
      422: 'A missing field, a template without {text}, a column the file lacks, or model_blocked',
      429: 'job_limit_reached',
      503: 'ai_provider_not_configured',
    },
    response: platformAcceptedSchema,
    multipart: bulkForm('The table: CSV (decided by its content), up to UPLOAD_MAX_MB'),
    raw: submitter(['csv'], platformJobAccepted),
  },
  {
    method: 'GET',
    path: '/bulk/jobs',
    operationId: 'listBulkJobs',
    summary: 'Your bulk jobs',
    description: `Your bulk jobs (a company key's: those company keys submitted), newest first, paged. ${PLATFORM}`,
    tag: 'Research and bulk jobs',
    extension: true,
    status: 200,
    field: 'bulkJobs',
    args: pageArgs(),
    paginated: true,
  },
  {
    method: 'GET',
    path: '/bulk/jobs/:id',
    operationId: 'getBulkJob',
    summary: 'A bulk job',
    description: `status, counts (a cancelled job's rows that will never run in rows_cancelled) and timestamps. Another company's id is 404; a member sees their own jobs, an admin or a company key the company's. ${PLATFORM}`,
    tag: 'Research and bulk jobs',
    extension: true,
    status: 200,
    problems: { 404: 'No bulk job with this id' },
    field: 'bulkJob',
    args: { id: path('id') },
  },
  {
    method: 'GET',
    path: '/bulk/jobs/:id/rows',
    operationId: 'streamBulkRows',
    summary: 'Stream processed rows',
    description:
      'NDJSON (application/x-ndjson), one object per processed row in row order: row, status (completed or failed), input, output, error, ' +
      'tokens, credits_used. While the job runs the stream follows it, each row once it and the rows before it are done, and ends when the ' +
      'job ends. ?after=N resumes after row N. It ends early, with a last line {error: <problem details>}, once its credential would be refused ' +
      '(401 token_invalid: session or key revoked; token_expired; 403 for the security policy), when its caller may no longer read the job ' +
      `(404 not_found after an access change) and when the server stops (503 server_busy: resume with ?after=N). ${PLATFORM}`,
    tag: 'Research and bulk jobs',
    auth: 'required',
    status: 200,
    problems: { 404: 'No bulk job with this id' },
    request: {
      params: { type: 'object', required: ['id'], properties: { id: { type: 'string', format: 'uuid' } } },
      querystring: { type: 'object', additionalProperties: false, properties: { after: { type: 'integer', minimum: 0, maximum: 2147483647, default: 0, description: 'Resume after this row' } } },
    },
    response: { type: 'string', description: 'NDJSON lines' },
    content: {
      'application/x-ndjson': {
        type: 'string',
        description:
          'One JSON object a line: {row, status, input, output, error, tokens, credits_used}; a failure after the stream began, a credential or access that ended, ' +
          `or a server that stops is a last line {error: <problem details>} (a LegacyError for a client pinned before ${PROBLEM_DETAILS_SINCE})`,
      },
    },
    raw: rows,
  },
  {
    method: 'GET',
    path: '/bulk/jobs/:id/download',
    operationId: 'downloadBulkJob',
    summary: 'Download a bulk result',
    description:
      'The result file, as GET /bulk/download/{job_id} answers it: CSV, or .xlsx for a job submitted as .xlsx through the AI modules API. ' +
      `Before the job completes it is 409 job_not_finished; a job that failed as a whole is 409 job_failed. ${PLATFORM}`,
    tag: 'Research and bulk jobs',
    extension: true,
    auth: 'required',
    status: 200,
    problems: { 404: 'No bulk job with this id', 409: 'job_not_finished; job_failed' },
    request: { params: { type: 'object', required: ['id'], properties: { id: { type: 'string', format: 'uuid' } } } },
    response: fileResponse,
    content: resultFile,
    raw: download('id'),
  },
  {
    method: 'POST',
    path: '/bulk/jobs/:id/cancel',
    operationId: 'cancelBulkJob',
    summary: 'Cancel a bulk job',
    description: `Stops a queued or running job: the rows not yet sent are counted in rows_cancelled; a finished job is 409 job_finished. ${PLATFORM}`,
    tag: 'Research and bulk jobs',
    extension: true,
    status: 200,
    problems: { 404: 'No bulk job with this id', 409: 'job_finished' },
    field: 'cancelBulkJob',
    args: { id: path('id') },
  },
];
