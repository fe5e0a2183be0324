import type { AppError } from './catalog';

/** The two levels a server-side answer is logged at. */
export interface ServerSideLog {
  error(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** How much of a cause's text one log line keeps (a provider's own error message, say). */
const CAUSE_MAX = 500;

/**
 * A 5xx answer in the log, whatever transport answered it (REST, GraphQL over
 * HTTP or a socket): an unexpected failure (internal_error) as an error with
 * its stack; a condition the server names (503 ai_provider_not_configured,
 * 502 from a provider, 504) as one warning with the cause's own words (the
 * provider's error message, the connection's refusal), which the client's
 * answer leaves out and an operator needs to act on.
 */
export function logServerSide(log: ServerSideLog, error: unknown, problem: AppError): void {
  if (problem.code === 'internal_error') return log.error({ err: error }, 'unhandled error');
  const cause = causeText(problem.cause);
  log.warn({ code: problem.code, status: problem.status, detail: problem.message, ...(cause ? { cause } : {}) }, 'answered with a server-side problem');
}

/** The messages of a cause and of its own causes (a fetch failure's ECONNREFUSED), a few deep. */
function causeText(cause: unknown): string | undefined {
  const parts: string[] = [];
  for (let depth = 0; cause instanceof Error && depth < 3; depth++, cause = cause.cause) {
    if (cause.message && !parts.includes(cause.message)) parts.push(cause.message);
  }
  return parts.length ? parts.join(': ').slice(0, CAUSE_MAX) : undefined;
}
