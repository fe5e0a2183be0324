import fp from 'fastify-plugin';
import { AppError } from '../errors/catalog';
import { CURRENT_API_VERSION, SUPPORTED_API_VERSIONS } from '../version';

const supported = new Set<string>(SUPPORTED_API_VERSIONS);

/** X-Service-Version and X-Request-Id on every response; X-Service-API-Version pins a version. */
export const apiVersionPlugin = fp(
  async (app) => {
    const refused = new WeakSet<object>();
    app.addHook('onRequest', async (request, reply) => {
      reply.header('x-service-version', CURRENT_API_VERSION);
      reply.header('x-request-id', request.id);
      const pinned = request.headers['x-service-api-version'];
      if (pinned === undefined) return;
      const value = Array.isArray(pinned) ? pinned[0] : pinned;
      if (value === undefined || !supported.has(value.trim())) {
        refused.add(request);
        return;
      }
      request.apiVersion = value.trim();
    });
    // Replies sent by an earlier onRequest hook (the CORS preflight) never reached ours.
    app.addHook('onSend', async (request, reply) => {
      if (!reply.hasHeader('x-service-version')) reply.header('x-service-version', CURRENT_API_VERSION);
      if (!reply.hasHeader('x-request-id')) reply.header('x-request-id', request.id);
    });
    // Refused only after the remaining onRequest hooks ran, so the answer still
    // carries the rate-limit headers every response has (and counts against the budget).
    app.addHook('preParsing', async (request) => {
      if (refused.has(request)) {
        throw new AppError(
          'unsupported_api_version',
          `X-Service-API-Version must be one of ${SUPPORTED_API_VERSIONS.join(', ')}`,
        );
      }
    });
  },
  { name: 'atrium-api-version' },
);
