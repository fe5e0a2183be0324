import { AppError, errorCatalogEntries, NULL_ISSUE, type ErrorCode, type ValidationIssue } from './catalog';
import { NUL_ISSUE, SURROGATE_ISSUE } from './refused-text';

/**
 * The shape of what frameworks throw: fastify's and Ajv's validation and
 * body errors, or any error with an HTTP status. Matched structurally, so the
 * kernel names no transport.
 */
interface ThrownError {
  code?: string;
  message?: string;
  statusCode?: number;
  validation?: unknown[];
  validationContext?: string;
}

/** The issue of a member a request part does not take, as validation answers it (and the REST adapter, for a query it checks itself). */
export const UNKNOWN_FIELD = { msg: 'unknown field', type: 'extra_forbidden' } as const;

/** Ajv keywords, named the way HTTPValidationError items name them. */
const ajvTypes: Record<string, string> = {
  required: 'missing',
  additionalProperties: UNKNOWN_FIELD.type,
  minLength: 'string_too_short',
  maxLength: 'string_too_long',
  minimum: 'greater_than_equal',
  maximum: 'less_than_equal',
  format: 'value_error.format',
  enum: 'enum',
  pattern: 'string_pattern_mismatch',
  minItems: 'too_short',
  maxItems: 'too_long',
};

const partNames: Record<string, string> = { querystring: 'query', params: 'path', body: 'body', headers: 'header' };

interface AjvError {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
  /** The value that failed (a body's validator is verbose). */
  data?: unknown;
}

/** The types of the issues of text the server cannot keep (./refused-text.ts), which the REST adapter reports among Ajv's. */
const UNKEEPABLE_TEXT: ReadonlySet<string> = new Set([NUL_ISSUE.type, SURROGATE_ISSUE.type]);

/** The msg and type of a wrong type: `string_type`, also where null is allowed (`type: ["string", "null"]`), which the msg says. */
function typeIssue(expected: unknown): { msg: string; type: string } {
  const named = Array.isArray(expected) ? expected.map(String) : String(expected).split(',');
  const types = named.filter((t) => t !== 'null');
  return { msg: `must be ${types.join(' or ')}${types.length < named.length ? ' or null' : ''}`, type: `${types.join('_or_')}_type` };
}

/**
 * What an enum issue says: the allowed values, worded as the services word
 * theirs. An optional member's null is left out: it means "not given", which
 * some services refuse for the member all the same.
 */
function enumMsg(allowed: unknown): string {
  if (!Array.isArray(allowed)) return 'must be one of the allowed values';
  return `must be one of ${allowed.filter((v) => v !== null).map(String).join(', ')}`;
}

export function validationIssues(error: ThrownError): ValidationIssue[] {
  const part = partNames[error.validationContext ?? 'body'] ?? 'body';
  const errors = (error.validation ?? []) as AjvError[];
  // A value outside an enum is one issue, the enum's (it lists what is allowed), though Ajv also reports its
  // wrong type, or any other keyword it fails, at the same place; text the server cannot keep (NUL, a lone
  // surrogate) is refused as such everywhere, so its issue is that place's one issue instead.
  const onlyIssue = new Map<string, AjvError>();
  for (const e of errors) if (e.keyword === 'enum') onlyIssue.set(e.instancePath, e);
  for (const e of errors) if (UNKEEPABLE_TEXT.has(e.keyword) && onlyIssue.has(e.instancePath)) onlyIssue.set(e.instancePath, e);
  return errors
    .filter((e) => (onlyIssue.get(e.instancePath) ?? e) === e)
    .map((e) => {
      const loc: (string | number)[] = [part];
      for (const segment of e.instancePath.split('/').slice(1)) {
        loc.push(/^\d+$/.test(segment) ? Number(segment) : segment.replace(/~1/g, '/').replace(/~0/g, '~'));
      }
      if (e.keyword === 'required') loc.push(String(e.params.missingProperty));
      if (e.keyword === 'additionalProperties') loc.push(String(e.params.additionalProperty));
      // A null where the member takes none is worded as the services word it, whatever type the member has.
      if (e.keyword === 'type') return { loc, ...(e.data === null ? NULL_ISSUE : typeIssue(e.params.type)) };
      const type = ajvTypes[e.keyword] ?? e.keyword;
      if (e.keyword === 'enum') return { loc, msg: enumMsg(e.params.allowedValues), type };
      const msg = e.keyword === 'additionalProperties' ? UNKNOWN_FIELD.msg : (e.message ?? 'invalid');
      return { loc, msg, type };
    });
}

/** Turns anything thrown while serving a request into an AppError. Unknown errors are masked. */
export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  const e = error as ThrownError | undefined;
  if (e?.validation) return AppError.validation(validationIssues(e));
  switch (e?.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('unsupported_media_type', 'Send the body as application/json, or as multipart/form-data where an endpoint takes a file');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('payload_too_large', 'The request body is larger than the server accepts');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('malformed_json', 'The body is empty but Content-Type says JSON');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AppError('malformed_json', 'The body is not valid JSON');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('bad_request', 'Content-Length does not match the body');
  }
  // secure-json-parse errors surface as 400 SyntaxErrors.
  if (e?.statusCode === 400 && (e instanceof SyntaxError || /JSON/i.test(e.message ?? ''))) {
    return new AppError('malformed_json', 'The body is not valid JSON');
  }
  const status = e?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const byStatus = errorCatalogEntries().find(([, entry]) => entry.status === status)?.[0] as ErrorCode | undefined;
    return new AppError(byStatus ?? 'bad_request', e?.message);
  }
  return new AppError('internal_error', 'An unexpected error occurred; quote the request id when reporting it', {
    cause: error,
  });
}

