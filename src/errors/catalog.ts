/**
 * The error catalog. Each code has an HTTP status and a title; GraphQL errors
 * carry the code in `extensions.code` and REST problems in `type`. Tests
 * assert codes, never messages.
 *
 * The kernel's own codes are below. A domain adds its codes in its
 * `errors.ts` with `defineErrors`, which registers them and, by declaration
 * merging on `ErrorCodes`, types them; the domain list (src/domains/index.ts)
 * assembles the whole catalog.
 */
export interface ErrorEntry {
  status: number;
  title: string;
}

export const kernelErrors = {
  bad_request: { status: 400, title: 'Bad request' },
  malformed_json: { status: 400, title: 'Malformed JSON body' },
  unsupported_api_version: { status: 400, title: 'Unsupported API version' },
  query_too_complex: { status: 400, title: 'Query too complex' },
  unauthenticated: { status: 401, title: 'Authentication required' },
  token_invalid: { status: 401, title: 'Token invalid' },
  token_expired: { status: 401, title: 'Token expired' },
  forbidden: { status: 403, title: 'Forbidden' },
  insufficient_scope: { status: 403, title: 'Insufficient scope' },
  csrf_rejected: { status: 403, title: 'Cross-site request rejected' },
  introspection_disabled: { status: 403, title: 'Introspection disabled' },
  not_found: { status: 404, title: 'Not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  request_timeout: { status: 408, title: 'Request timeout' },
  conflict: { status: 409, title: 'Conflict' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  uri_too_long: { status: 414, title: 'URI too long' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  validation_error: { status: 422, title: 'Validation error' },
  rate_limited: { status: 429, title: 'Too many requests' },
  request_header_fields_too_large: { status: 431, title: 'Request header fields too large' },
  internal_error: { status: 500, title: 'Internal server error' },
  server_busy: { status: 503, title: 'Server busy' },
} as const satisfies Record<string, ErrorEntry>;

/**
 * Every error code, kernel and domain. Domains extend it from their
 * `errors.ts`: `declare module '../../errors/catalog' { interface ErrorCodes extends Record<keyof typeof myErrors, ErrorEntry> {} }`.
 */
export interface ErrorCodes extends Record<keyof typeof kernelErrors, ErrorEntry> {}

export type ErrorCode = keyof ErrorCodes & string;

const registry = new Map<string, ErrorEntry>(Object.entries(kernelErrors));

/**
 * Registers a domain's codes (called once, when its `errors.ts` loads) and
 * returns them. A code already taken by another entry is a programming error.
 */
export function defineErrors<T extends Record<string, ErrorEntry>>(entries: T): T {
  for (const [code, entry] of Object.entries(entries)) {
    const known = registry.get(code);
    if (known && (known.status !== entry.status || known.title !== entry.title)) {
      throw new Error(`Error code "${code}" is defined twice`);
    }
    registry.set(code, entry);
  }
  return entries;
}

/** The status and title of a code; undefined for a code no domain defined. */
export function errorEntry(code: string): ErrorEntry | undefined {
  return registry.get(code);
}

/** Every registered code with its entry, kernel codes first. */
export function errorCatalogEntries(): [string, ErrorEntry][] {
  return [...registry.entries()];
}

/**
 * One failed check on an input: the HTTPValidationError item shape. A
 * service writes `loc` as a REST request carries the input: its part (body,
 * query, path), then the member path in the documented names. The GraphQL
 * layer adds `path`, the same place among the root field's arguments
 * (subgraphs/errors.ts). Each transport answers its own as the issue's `loc`
 * and never the other's.
 */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
  path?: (string | number)[];
}

/** The issue of a null where a member takes none: an optional member left out keeps its value, but null is no value it takes. */
export const NULL_ISSUE = { msg: 'must not be null', type: 'none_not_allowed' } as const;

/** The issues of a validation error; undefined for any other error. */
export function validationIssues(error: AppError): ValidationIssue[] | undefined {
  const issues = error.code === 'validation_error' ? error.extra.errors : undefined;
  return Array.isArray(issues) ? (issues as ValidationIssue[]) : undefined;
}

/** The members of every problem body (src/host/problem.ts): a code's extra members go beside them, never over them. */
const PROBLEM_MEMBERS = ['type', 'title', 'status', 'detail', 'instance', 'request_id', 'code'] as const;

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly title: string;
  /** Extra problem members, e.g. validation `errors`. */
  readonly extra: Record<string, unknown>;
  /** Headers the transport should add to the error response. */
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    detail?: string,
    options: { extra?: Record<string, unknown>; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    const entry = registry.get(code);
    if (!entry) throw new Error(`Unknown error code "${code}": define it in a domain's errors.ts`);
    super(detail ?? entry.title, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = entry.status;
    this.title = entry.title;
    this.extra = options.extra ?? {};
    for (const member of PROBLEM_MEMBERS) {
      if (member in this.extra) throw new Error(`AppError ${code}: extra member "${member}" would replace the problem's own`);
    }
    this.headers = entry.status === 401 ? { 'www-authenticate': challenge(code), ...options.headers } : (options.headers ?? {});
  }

  static validation(issues: ValidationIssue[], detail = 'The request failed validation'): AppError {
    return new AppError('validation_error', detail, { extra: { errors: issues } });
  }
}

/**
 * The challenge every 401 carries (RFC 9110 §11.6.1: a 401 names a scheme
 * that would be accepted): a Bearer credential, and for a token that was
 * presented and refused, why (RFC 6750 §3).
 */
function challenge(code: ErrorCode): string {
  return code === 'token_invalid' || code === 'token_expired' ? 'Bearer realm="atrium", error="invalid_token"' : 'Bearer realm="atrium"';
}

export function isAppError(error: unknown): error is AppError {
  return error instanceof AppError;
}
