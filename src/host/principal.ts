import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import { anonymous, type Principal } from '../auth/principal';
import { AppError, isAppError } from '../errors/catalog';
import type { Services } from '../services';
import { readCookie, SESSION_COOKIE } from '../auth/cookies';
import { resolveCookiePrincipal, trustedOrigins } from './cookie-auth';

/** Resolves a Bearer credential once; a refused credential is kept so the 401 can say why. */
export async function resolvePrincipal(services: Services, authorization: string | undefined): Promise<Principal> {
  if (!authorization) return anonymous;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization);
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

function clientMeta(request: FastifyRequest) {
  const userAgent = request.headers['user-agent'];
  return { requestId: String(request.id), ip: request.ip, userAgent: userAgent ?? null };
}

export const principalPlugin = fp(
  async (app) => {
    app.decorateRequest('principal', null as never);
    app.decorateRequest('meta', null as never);
    const origins = trustedOrigins(app.services.config);
    app.addHook('onRequest', async (request) => {
      request.meta = clientMeta(request);
      // A Bearer header wins; without one, the browser session cookie (CSRF-checked) is the credential.
      const authorization = request.headers.authorization;
      const cookie = authorization ? undefined : readCookie(request.headers.cookie, SESSION_COOKIE);
      request.principal = anonymous;
      request.principal =
        cookie === undefined
          ? await resolvePrincipal(app.services, authorization)
          : await resolveCookiePrincipal(app.services, request, cookie, origins);
    });
    // Routes that need a credential refuse before the body is validated.
    app.addHook('onRoute', (route) => {
      if (route.config?.auth !== 'required') return;
      const check = async (request: FastifyRequest) => {
        const p = request.principal;
        if (p.kind === 'anonymous') {
          throw p.credentialError ?? new AppError('unauthenticated', 'A Bearer credential is required');
        }
      };
      route.preValidation = [check, ...(route.preValidation ? [route.preValidation].flat() : [])];
    });
  },
  { name: 'atrium-principal', dependencies: ['atrium-unit-of-work'] },
);
