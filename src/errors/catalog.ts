/**
 * The one error catalog. Each code has an HTTP status and a title; GraphQL
 * errors carry the code in `extensions.code` and REST problems in `type`.
 * Tests assert codes, never messages.
 */
export const errorCatalog = {
  bad_request: { status: 400, title: 'Bad request' },
  malformed_json: { status: 400, title: 'Malformed JSON body' },
  unsupported_api_version: { status: 400, title: 'Unsupported API version' },
  redirect_uri_not_allowed: { status: 400, title: 'redirect_uri not allowed' },
  sso_state_invalid: { status: 400, title: 'Single sign-on state invalid' },
  password_reset_token_invalid: { status: 400, title: 'Password reset link invalid or expired' },
  email_change_token_invalid: { status: 400, title: 'Email confirmation link invalid or expired' },
  invitation_invalid: { status: 400, title: 'Invitation link invalid, used, revoked or expired' },
  unauthenticated: { status: 401, title: 'Authentication required' },
  invalid_credentials: { status: 401, title: 'Invalid credentials' },
  token_invalid: { status: 401, title: 'Token invalid' },
  token_expired: { status: 401, title: 'Token expired' },
  sso_failed: { status: 401, title: 'Single sign-on failed' },
  mfa_required: { status: 401, title: 'MFA code required' },
  mfa_invalid: { status: 401, title: 'MFA code invalid' },
  forbidden: { status: 403, title: 'Forbidden' },
  step_up_required: { status: 403, title: 'Recent authentication required' },
  csrf_rejected: { status: 403, title: 'Cross-site request rejected' },
  mfa_enrollment_required: { status: 403, title: 'MFA enrolment required' },
  ip_not_allowed: { status: 403, title: 'IP address not allowed' },
  sso_email_unverified: { status: 403, title: 'Email not verified by the identity provider' },
  sso_account_not_found: { status: 403, title: 'No account for this sign-in' },
  not_found: { status: 404, title: 'Not found' },
  model_not_found: { status: 404, title: 'Model not found' },
  sso_provider_not_configured: { status: 404, title: 'Identity provider not configured' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  conflict: { status: 409, title: 'Conflict' },
  email_taken: { status: 409, title: 'Email address already in use' },
  api_key_limit_reached: { status: 409, title: 'API key limit reached' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  validation_error: { status: 422, title: 'Validation error' },
  model_blocked: { status: 422, title: 'Model blocked' },
  rate_limited: { status: 429, title: 'Too many requests' },
  account_locked: { status: 429, title: 'Sign-in temporarily locked' },
  internal_error: { status: 500, title: 'Internal server error' },
  sso_provider_unavailable: { status: 502, title: 'Identity provider unavailable' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof errorCatalog;

/** One failed check on an input: the HTTPValidationError item shape. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

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
    const entry = errorCatalog[code];
    super(detail ?? entry.title, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = entry.status;
    this.title = entry.title;
    this.extra = options.extra ?? {};
    this.headers = options.headers ?? {};
  }

  static validation(issues: ValidationIssue[], detail = 'The request failed validation'): AppError {
    return new AppError('validation_error', detail, { extra: { errors: issues } });
  }
}

export function isAppError(error: unknown): error is AppError {
  return error instanceof AppError;
}
