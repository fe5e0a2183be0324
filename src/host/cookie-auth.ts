import type { FastifyRequest } from 'fastify';
import type { Principal } from '../auth/principal';
import { AppError } from '../errors/catalog';
import type { KernelConfig } from '../kernel/config';
import { readCookie, SESSION_COOKIE } from '../auth/cookies';

/** Methods that change state: a cookie-authenticated one must prove it comes from an allowed origin. */
export const UNSAFE_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

function originOf(value: string): string | undefined {
  try {
    const origin = new URL(value).origin;
    return origin === 'null' ? undefined : origin;
  } catch {
    return undefined;
  }
}

/** PUBLIC_URL's origin and every CORS_ORIGINS entry: the pages allowed to act with the cookie. */
export function trustedOrigins(config: Pick<KernelConfig, 'publicUrl' | 'corsOrigins'>): Set<string> {
  const origins = new Set<string>();
  for (const value of [config.publicUrl, ...config.corsOrigins]) {
    const origin = originOf(value);
    if (origin) origins.add(origin);
  }
  return origins;
}

/** The origin a browser says the request comes from: `Origin`, else the `Referer`'s origin. */
export function requestOrigin(headers: FastifyRequest['headers']): string | undefined {
  const origin = headers.origin;
  if (typeof origin === 'string' && origin !== '') return originOf(origin);
  const referer = headers.referer;
  if (typeof referer === 'string' && referer !== '') return originOf(referer);
  return undefined;
}

export function isTrustedOrigin(headers: FastifyRequest['headers'], trusted: Set<string>): boolean {
  const origin = requestOrigin(headers);
  return origin !== undefined && trusted.has(origin);
}

/**
 * The refusal of the `service_token` cookie as the credential (there was no
 * Authorization header), if any. Browsers attach cookies to cross-site
 * requests, so a state-changing request must carry an Origin (or Referer) of
 * PUBLIC_URL or a CORS origin, else 403 `csrf_rejected`, decided before the
 * cookie is even looked up. SameSite=Lax is the first line; this is the second.
 */
export function csrfRefusal(request: Pick<FastifyRequest, 'method' | 'headers'>, trusted: Set<string>): AppError | undefined {
  if (!UNSAFE_METHODS.has(request.method) || isTrustedOrigin(request.headers, trusted)) return undefined;
  return new AppError('csrf_rejected', 'A cookie-authenticated request that changes state must come from an allowed origin (Origin or Referer header)');
}

/**
 * The browser session of a WebSocket upgrade request, for a graphql-ws
 * connection without an `authorization` connection parameter. Browsers send
 * cookies on cross-site WebSocket handshakes too, so the handshake's Origin
 * must be trusted (cross-site WebSocket hijacking).
 */
export function socketCookiePrincipal(request: FastifyRequest, trusted: Set<string>): Principal | undefined {
  if (request.headers.authorization) return undefined;
  if (readCookie(request.headers.cookie, SESSION_COOKIE) === undefined) return undefined;
  if (!isTrustedOrigin(request.headers, trusted)) return undefined;
  return request.principal?.kind === 'user' ? request.principal : undefined;
}
