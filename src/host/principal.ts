import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import { anonymous, type Principal } from '../auth/principal';
import { AppError, isAppError } from '../errors/catalog';
import type { Services } from '../services';
import { readCookie, SESSION_COOKIE } from '../auth/cookies';
import { resolveCookiePrincipal, trustedOrigins } from './cookie-auth';
import { applyIpAllowlist, cachedIpAllowlist } from './security-policy';

const BEARER = /^Bearer[ ]+(\S+)\s*$/i;

/** Resolves a Bearer credential once; a refused credential is kept so the 401 can say why. */
export async function resolvePrincipal(services: Services, authorization: string | undefined): Promise<Principal> {
  if (!authorization) return anonymous;
  const match = BEARER.exec(authorization);
  if (!match) {
    return { kind: 'anonymous', credentialError: new AppError('token_invalid', 'Use "Authorization: Bearer <token>"') };
  }
  try {
    return await services.auth.authenticate(match[1]!);
  } catch (error) {
    if (isAppError(error)) return { kind: 'anonymous', credentialError: error };
    throw error;
  }
}

/**
 * A request's principal from memory alone (no credential, or a cached
 * credential under a cached policy, IP allow-list applied); undefined when
 * resolving it needs I/O. Most requests of a signed-in client take this path.
 */
function cachedBearerPrincipal(services: Services, authorization: string | undefined, ip: string): Principal | undefined {
  if (!authorization) return anonymous;
  const match = BEARER.exec(authorization);
  const principal = match ? services.auth.cachedPrincipal(match[1]!) : undefined;
  return principal && cachedIpAllowlist(services, principal, ip);
}

function clientMeta(request: FastifyRequest) {
  const userAgent = request.headers['user-agent'];
  return { requestId: String(request.id), ip: request.ip, userAgent: userAgent ?? null };
}

export const principalPlugin = fp(
  async (app) => {
    app.decorateRequest('principal', null as never);
    app.decorateRequest('meta', null as never);
    const origins = trustedOrigins(app.services.config);
    // Callback-style with a synchronous fast path: this runs on every request.
    app.addHook('onRequest', (request, _reply, done) => {
      request.meta = clientMeta(request);
      // A Bearer header wins; without one, the browser session cookie (CSRF-checked) is the credential.
      const authorization = request.headers.authorization;
      const cookie = authorization ? undefined : readCookie(request.headers.cookie, SESSION_COOKIE);
      const cached = cookie === undefined ? cachedBearerPrincipal(app.services, authorization, request.ip) : undefined;
      if (cached) {
        request.principal = cached;
        return done();
      }
      request.principal = anonymous;
      const resolving =
        cookie === undefined
          ? resolvePrincipal(app.services, authorization)
          : resolveCookiePrincipal(app.services, request, cookie, origins);
      resolving
        // The company's IP allow-list applies as soon as the credential is known.
        .then((principal) => applyIpAllowlist(app.services, principal, request.ip))
        .then((principal) => {
          request.principal = principal;
          done();
        }, done);
    });
    // Routes that need a credential refuse before the body is validated.
    app.addHook('onRoute', (route) => {
      if (route.config?.auth !== 'required') return;
      const check = (request: FastifyRequest, _reply: unknown, done: (error?: Error) => void) => {
        const p = request.principal;
        if (p.kind === 'anonymous') return done(p.credentialError ?? new AppError('unauthenticated', 'A Bearer credential is required'));
        done();
      };
      route.preValidation = [check, ...(route.preValidation ? [route.preValidation].flat() : [])];
    });
  },
  { name: 'atrium-principal', dependencies: ['atrium-unit-of-work'] },
);
