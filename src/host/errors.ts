import fp from 'fastify-plugin';
import FindMyWay from 'find-my-way';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { anonymous } from '../auth/principal';
import { AppError } from '../errors/catalog';
import { toAppError } from '../errors/to-app-error';
import { logServerSide } from '../errors/server-side-log';
import { requestIdFrom } from '../request-id';
import { fixedResponseHeaders, stampResponse } from './api-version';
import { echoedPath, sendProblem } from './problem';
import { clientAddress, type ProxyTrust } from '../kernel/trust-proxy';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** The router refuses a longer path parameter (414) before routing; find-my-way's default. */
export const MAX_PARAM_LENGTH = 100;

/**
 * One place maps every error to RFC 9457: route errors, hook errors, 404s and
 * 405s. Unknown errors are logged with the request id and masked. Errors
 * raised before routing are `frameworkErrors` and `clientErrorHandler` below.
 */
export const errorsPlugin = fp(
  async (app) => {
    const { docsUrl } = app.config;
    // A second router that knows every path, to tell 405 from 404.
    const paths = FindMyWay({ ignoreTrailingSlash: false });
    app.addHook('onRoute', (route) => {
      // Catch-all routes (the CORS preflight `OPTIONS *`) match every path: they
      // would turn every unknown path into a 405.
      if (route.url === '*' || route.url === '/*') return;
      for (const method of [route.method].flat()) {
        if ((METHODS as readonly string[]).includes(method)) {
          paths.on(method as (typeof METHODS)[number], route.url, () => undefined);
        }
      }
    });

    app.setErrorHandler((error, request, reply) => {
      const appError = toAppError(error);
      if (appError.status >= 500) logServerSide(request.log, error, appError);
      return sendProblem(reply, appError, docsUrl);
    });

    app.setNotFoundHandler((request, reply) => {
      const path = request.url.split('?')[0]!;
      const allowed = METHODS.filter((m) => paths.find(m, path) !== null);
      // A route of this very method called callNotFound(): its resource is absent, a 404.
      if (allowed.length > 0 && !(allowed as readonly string[]).includes(request.method)) {
        reply.header('allow', allowed.join(', '));
        return sendProblem(reply, new AppError('method_not_allowed', `${request.method} is not allowed on ${echoedPath(path)}`), docsUrl);
      }
      return sendProblem(reply, new AppError('not_found', `No route ${request.method} ${echoedPath(path)}`), docsUrl);
    });
  },
  { name: 'atrium-errors' },
);

/**
 * fastify's `frameworkErrors`: a path that does not decode (`%ff`, a lone
 * `%`), a path parameter over the router's limit, a failed async constraint.
 * These requests never reach the hooks, so the problem is stamped and the
 * anonymous budget of the client's address spent here. Nothing of the path
 * but its first characters (`instance`) is echoed. `trust` is the server's
 * own proxy trust: the request built for a framework error never trusts a
 * proxy, so its address is derived here as fastify derives request.ip.
 */
export const frameworkErrors = (trust: ProxyTrust | false) => (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
  const app = request.server;
  stampResponse(request, reply);
  let problem: AppError;
  if (error.code === 'FST_ERR_BAD_URL') {
    problem = new AppError('bad_request', 'The request path is not a valid URL: each % must start a percent-encoded UTF-8 byte');
  } else if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    problem = new AppError('uri_too_long', `A path parameter is longer than ${MAX_PARAM_LENGTH} characters`);
  } else {
    problem = toAppError(error);
    if (problem.status >= 500) logServerSide(request.log, error, problem);
  }
  try {
    app.rateLimit('default', anonymous, clientAddress(request.socket.remoteAddress ?? '', request.headers['x-forwarded-for'], trust), reply);
  } catch (refusal) {
    problem = toAppError(refusal);
  }
  sendProblem(reply, problem, app.config.docsUrl);
};

/** The llhttp error codes worth naming in a 400's detail (fixed strings, never the client's bytes). */
const PARSER_CODE = /^HPE_[A-Z_]{1,40}$/;

function clientErrorProblem(code: string | undefined): AppError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new AppError('request_header_fields_too_large', 'The request line and headers are larger than the server accepts');
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new AppError('payload_too_large', 'The chunk extensions are larger than the server accepts');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new AppError('request_timeout', 'The request was not received in time');
    default:
      return new AppError('bad_request', `The request is not valid HTTP/1.1${code && PARSER_CODE.test(code) ? ` (${code})` : ''}`);
  }
}

/** Sockets already answered: the parser reports its error again for every further chunk the client sends. */
const answered = new WeakSet<Duplex>();

/**
 * fastify's `clientErrorHandler`: what node's HTTP parser refuses (oversize
 * request line or headers, a DEL in a header value, a request that is not
 * HTTP, a request that took too long) never becomes a request. It gets a
 * problem with a fresh request id and `connection: close`, without
 * `instance` (the path may be what overflowed), written on the socket, which
 * is then closed. Like node, nothing is written after a response has begun.
 */
export function clientErrorHandler(this: FastifyInstance, error: Error & { code?: string }, socket: Duplex): void {
  // A reset connection has nobody to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed || answered.has(socket)) return;
  answered.add(socket);
  const problem = clientErrorProblem(error.code);
  const requestId = requestIdFrom(undefined);
  this.log.info({ reqId: requestId, status: problem.status, code: error.code }, 'client error');
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  if (!socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify({
    type: `${this.config.docsUrl}/errors/${problem.code}`,
    title: problem.title,
    status: problem.status,
    detail: problem.message,
    request_id: requestId,
    code: problem.code,
  });
  const headers = {
    ...fixedResponseHeaders,
    'x-request-id': requestId,
    'content-type': 'application/problem+json; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    connection: 'close',
  };
  let head = `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}\r\n`;
  for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
  socket.end(`${head}\r\n${body}`, () => socket.destroy());
}
