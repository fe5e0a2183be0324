import fp from 'fastify-plugin';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors/catalog';
import { CURRENT_API_VERSION, SUPPORTED_API_VERSIONS } from '../version';
import { apiSecurityHeaders } from './security-headers';

const supported = new Set<string>(SUPPORTED_API_VERSIONS);

/** The headers every response carries whatever it answers: X-Service-Version (of an unpinned request) and the security headers (computed once). */
export const fixedResponseHeaders: Readonly<Record<string, string>> = Object.freeze({
  'x-service-version': CURRENT_API_VERSION,
  ...apiSecurityHeaders(),
});

/** Puts the fixed headers and X-Request-Id on the reply and reads the version the client pins, which X-Service-Version then names. */
export function stampResponse(request: FastifyRequest, reply: FastifyReply): void {
  reply.headers(fixedResponseHeaders);
  reply.header('x-request-id', request.id);
  const pinned = request.headers['x-service-api-version'];
  if (pinned !== undefined) {
    const value = (Array.isArray(pinned) ? pinned[0] : pinned)?.trim();
    if (value !== undefined && supported.has(value)) {
      request.apiVersion = value;
      // The version served is the pinned one (its error bodies included), so that is what the header names.
      if (value !== CURRENT_API_VERSION) reply.header('x-service-version', value);
    }
  }
}

/**
 * The headers of every response: X-Service-Version, X-Request-Id and the
 * security headers, and the version a client pins with X-Service-API-Version.
 * Registered before every other plugin so even replies sent early (CORS
 * preflights, 429s) carry the headers and the pinned error format.
 */
export const serviceHeadersPlugin = fp(
  async (app) => {
    app.addHook('onRequest', (request, reply, done) => {
      stampResponse(request, reply);
      done();
    });
  },
  { name: 'atrium-service-headers' },
);

/**
 * Refuses an unknown pinned version. Registered after rate limiting, so the
 * refusal still carries the rate-limit headers and counts against the budget.
 */
export const apiVersionPlugin = fp(
  async (app) => {
    app.addHook('onRequest', (request, _reply, done) => {
      if (request.apiVersion === undefined && request.headers['x-service-api-version'] !== undefined) {
        return done(
          new AppError('unsupported_api_version', `X-Service-API-Version must be one of ${SUPPORTED_API_VERSIONS.join(', ')}`),
        );
      }
      done();
    });
  },
  { name: 'atrium-api-version', dependencies: ['atrium-rate-limit'] },
);
