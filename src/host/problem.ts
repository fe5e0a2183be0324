import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppError } from '../errors/catalog';
import { PROBLEM_DETAILS_SINCE } from '../version';

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  request_id: string;
  code: string;
  [member: string]: unknown;
}

/** The longest request path a problem echoes: the path is the client's input, up to the header limit (16 KB). */
export const MAX_ECHOED_PATH = 256;

/** The path of a request URL, without its query, cut at MAX_ECHOED_PATH characters. */
export function echoedPath(url: string): string {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  return path.length <= MAX_ECHOED_PATH ? path : `${path.slice(0, MAX_ECHOED_PATH)}…`;
}

export function problemBody(error: AppError, request: FastifyRequest, docsUrl: string): ProblemBody {
  return {
    type: `${docsUrl}/errors/${error.code}`,
    title: error.title,
    status: error.status,
    detail: error.message,
    instance: echoedPath(request.url),
    request_id: String(request.id),
    code: error.code,
    ...error.extra,
  };
}

/** Clients pinned to a version older than RFC 9457 support get `{"detail": ..., "code": ...}` (openapi LegacyError). */
export function wantsLegacyErrors(request: FastifyRequest): boolean {
  const pinned = request.apiVersion;
  return pinned !== undefined && pinned < PROBLEM_DETAILS_SINCE;
}

/** The body of an error for this request: the legacy `{detail, code}` for a client pinned before RFC 9457, else the problem. */
export function errorBody(error: AppError, request: FastifyRequest, docsUrl: string): { legacy: boolean; body: ProblemBody | { detail: unknown; code: string } } {
  if (wantsLegacyErrors(request)) {
    const detail = error.code === 'validation_error' ? error.extra.errors : error.message;
    // `code` is an added optional member (platform-api.md, Versioning 4): without it a pinned
    // client could not tell mfa_required from invalid_credentials at login.
    return { legacy: true, body: { detail, code: error.code } };
  }
  return { legacy: false, body: problemBody(error, request, docsUrl) };
}

export function sendProblem(reply: FastifyReply, error: AppError, docsUrl: string): FastifyReply {
  const request = reply.request;
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
  reply.code(error.status);
  const { legacy, body } = errorBody(error, request, docsUrl);
  return reply.type(legacy ? 'application/json; charset=utf-8' : 'application/problem+json; charset=utf-8').send(body);
}
