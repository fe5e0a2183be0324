import fp from 'fastify-plugin';
import { AppError } from '../errors/catalog';
import { CURRENT_API_VERSION, SUPPORTED_API_VERSIONS } from '../version';

const supported = new Set<string>(SUPPORTED_API_VERSIONS);

/** X-Service-Version and X-Request-Id on every response; X-Service-API-Version pins a version. */
export const apiVersionPlugin = fp(
  async (app) => {
    app.addHook('onRequest', async (request, reply) => {
      reply.header('x-service-version', CURRENT_API_VERSION);
      reply.header('x-request-id', request.id);
      const pinned = request.headers['x-service-api-version'];
      if (pinned === undefined) return;
      const value = Array.isArray(pinned) ? pinned[0] : pinned;
      if (value === undefined || !supported.has(value.trim())) {
        throw new AppError(
          'unsupported_api_version',
          `X-Service-API-Version must be one of ${SUPPORTED_API_VERSIONS.join(', ')}`,
        );
      }
      request.apiVersion = value.trim();
    });
  },
  { name: 'atrium-api-version' },
);
