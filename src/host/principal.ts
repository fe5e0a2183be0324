import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import { anonymous, type Principal } from '../auth/principal';
import { AppError } from '../errors/catalog';
import { readCookie, SESSION_COOKIE } from '../auth/cookies';
import { csrfRefusal, trustedOrigins } from './cookie-auth';
import { idempotencyKeyFrom } from '../request-id';
import { moduleKeyOutsideModules, requireModuleKey } from '../auth/policy';
import { isPromise } from '../is-promise';
import type { AccessService } from '../domains/identity';

function moduleKeyRequired(principal: Principal): Error {
  try {
    requireModuleKey(principal);
  } catch (error) {
    return error as Error;
  }
  return new AppError('unauthenticated', 'An AI-modules key is required');
}

function clientMeta(request: FastifyRequest) {
  const userAgent = request.headers['user-agent'];
  const idempotencyKey = request.headers['idempotency-key'];
  return {
    requestId: String(request.id),
    ip: request.ip,
    userAgent: userAgent ?? null,
    ...(idempotencyKey === undefined ? {} : { idempotencyKey: idempotencyKeyFrom(idempotencyKey) }),
  };
}

/** The session cookie of a request without an Authorization header (a Bearer header wins over it). */
export function sessionCookieOf(request: FastifyRequest): string | undefined {
  return request.headers.authorization ? undefined : readCookie(request.headers.cookie, SESSION_COOKIE);
}

/**
 * The caller the request's credential names (identity's access service: the
 * credential, then the company's IP allow-list), synchronously when memory
 * alone can tell. `cookie` is `sessionCookieOf(request)` (passed in: the hook has read it already).
 */
export function callerOf(access: AccessService, request: FastifyRequest, cookie: string | undefined): Principal | Promise<Principal> {
  return cookie === undefined ? access.bearer(request.headers.authorization, request.ip) : access.cookie(cookie, request.ip);
}

/**
 * Resolves the caller once per request (identity's access service: the
 * credential, then the company's IP allow-list), synchronously when memory
 * alone can tell. A Bearer header wins; without one, the browser session
 * cookie (CSRF-checked) is the credential.
 */
export const principalPlugin = fp(
  async (app) => {
    app.decorateRequest('principal', null as never);
    app.decorateRequest('meta', null as never);
    app.decorateRequest('refused', undefined);
    const access = app.domains.identity.access;
    const origins = trustedOrigins(app.config);
    // Callback-style with a synchronous fast path: this runs on every request.
    app.addHook('onRequest', (request, _reply, done) => {
      request.meta = clientMeta(request);
      const cookie = sessionCookieOf(request);
      const refused = cookie === undefined ? undefined : csrfRefusal(request, origins);
      if (refused) {
        // Answered by the rate-limit hook once the request has spent its budget, so it carries the headers every answer does.
        request.principal = anonymous;
        request.refused = refused;
        return done();
      }
      const resolved = callerOf(access, request, cookie);
      if (!isPromise(resolved)) {
        request.principal = resolved;
        return done();
      }
      request.principal = anonymous;
      resolved.then((principal) => {
        request.principal = principal;
        done();
      }, done);
    });
    // Routes that need a credential refuse before the body is validated.
    // The AI modules API takes only AI-modules keys, and nothing else takes them.
    app.addHook('onRoute', (route) => {
      if (route.config?.auth !== 'required') return;
      const modulesApi = route.config.credential === 'module_key';
      const check = (request: FastifyRequest, _reply: unknown, done: (error?: Error) => void) => {
        const p = request.principal;
        if (modulesApi) {
          if (p.kind !== 'module_key') return done(moduleKeyRequired(p));
          return done();
        }
        if (p.kind === 'anonymous') return done(p.credentialError ?? new AppError('unauthenticated', 'A Bearer credential is required'));
        if (p.kind === 'module_key') return done(moduleKeyOutsideModules());
        done();
      };
      route.preValidation = [check, ...(route.preValidation ? [route.preValidation].flat() : [])];
    });
  },
  { name: 'atrium-principal', dependencies: ['atrium-unit-of-work'] },
);
