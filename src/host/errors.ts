import fp from 'fastify-plugin';
import FindMyWay from 'find-my-way';
import { AppError } from '../errors/catalog';
import { toAppError } from '../errors/to-app-error';
import { sendProblem } from './problem';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/**
 * One place maps every error to RFC 9457: route errors, hook errors, 404s and
 * 405s. Unknown errors are logged with the request id and masked.
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
      if (appError.status >= 500) request.log.error({ err: error }, 'unhandled error');
      return sendProblem(reply, appError, docsUrl);
    });

    app.setNotFoundHandler((request, reply) => {
      const path = request.url.split('?')[0]!;
      const allowed = METHODS.filter((m) => paths.find(m, path) !== null);
      // A route of this very method called callNotFound(): its resource is absent, a 404.
      if (allowed.length > 0 && !(allowed as readonly string[]).includes(request.method)) {
        reply.header('allow', allowed.join(', '));
        return sendProblem(reply, new AppError('method_not_allowed', `${request.method} is not allowed on ${path}`), docsUrl);
      }
      return sendProblem(reply, new AppError('not_found', `No route ${request.method} ${path}`), docsUrl);
    });
  },
  { name: 'atrium-errors' },
);
