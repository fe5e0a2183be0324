import { AppError, errorCatalogEntries, type ErrorCode, type ValidationIssue } from './catalog';

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
}

export function validationIssues(error: ThrownError): ValidationIssue[] {
  const part = partNames[error.validationContext ?? 'body'] ?? 'body';
  return ((error.validation ?? []) as AjvError[]).map((e) => {
    const loc: (string | number)[] = [part];
    for (const segment of e.instancePath.split('/').slice(1)) {
      loc.push(/^\d+$/.test(segment) ? Number(segment) : segment.replace(/~1/g, '/').replace(/~0/g, '~'));
    }
    if (e.keyword === 'required') loc.push(String(e.params.missingProperty));
    if (e.keyword === 'additionalProperties') loc.push(String(e.params.additionalProperty));
    const type = e.keyword === 'type' ? `${String(e.params.type)}_type` : (ajvTypes[e.keyword] ?? e.keyword);
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

