import fp from 'fastify-plugin';
import type { FastifyReply } from 'fastify';
import type { Principal } from '../auth/principal';
import { AppError } from '../errors/catalog';
import type { RateLimitDecision } from '../rate-limit/rate-limiter';
import type { RateLimitClass } from './types';

/**
 * Per credential for authenticated callers, per IP otherwise; /auth/* and the
 * public feedback collector have their own stricter per-IP budgets. Every
 * response carries X-RateLimit-* and the IETF RateLimit-Policy / RateLimit pair.
 */
export const rateLimitPlugin = fp(
  async (app) => {
    const config = app.config.rateLimit;
    const limiter = app.kernel.rateLimits;
    const known: RateLimitClass[] = ['default', 'auth', 'feedback'];

    app.addHook('onRoute', (route) => {
      const cls = route.config?.rateLimit;
      if (cls !== undefined && !known.includes(cls)) throw new Error(`Unknown rate-limit class "${cls}" on ${route.url}`);
    });

    app.decorate('rateLimit', (cls: RateLimitClass, principal: Principal, ip: string, reply?: FastifyReply) => {
      let key: string;
      let limit: number;
      if (cls === 'auth' || cls === 'feedback') {
        key = `${cls}:${ip}`;
        limit = config[cls];
      } else if (principal.kind === 'user') {
        key = `u:${principal.userId}`;
        limit = config.authenticated;
      } else if (principal.kind === 'api_key') {
        key = `k:${principal.keyId}`;
        limit = config.authenticated;
      } else {
        key = `ip:${ip}`;
        limit = config.anonymous;
      }
      const decision = limiter.hit(key, limit);
      if (reply) setHeaders(reply, cls, decision, config.windowSeconds);
      if (!decision.allowed) {
        const retryAfter = Math.max(1, decision.resetAt - Math.floor(Date.now() / 1000));
        throw new AppError('rate_limited', `Rate limit of ${limit} requests per ${config.windowSeconds}s exceeded`, {
          headers: { 'retry-after': String(retryAfter) },
        });
      }
    });

    app.addHook('onRequest', (request, reply, done) => {
      try {
        app.rateLimit(request.routeOptions.config?.rateLimit ?? 'default', request.principal, request.ip, reply);
      } catch (error) {
        return done(error as Error);
      }
      done();
    });
  },
  { name: 'atrium-rate-limit', dependencies: ['atrium-principal'] },
);

function setHeaders(reply: FastifyReply, cls: RateLimitClass, d: RateLimitDecision, window: number) {
  const resetIn = Math.max(0, d.resetAt - Math.floor(Date.now() / 1000));
  reply.header('x-ratelimit-limit', d.limit);
  reply.header('x-ratelimit-remaining', d.remaining);
  reply.header('x-ratelimit-reset', d.resetAt);
  reply.header('ratelimit-policy', `"${cls}";q=${d.limit};w=${window}`);
  reply.header('ratelimit', `"${cls}";r=${d.remaining};t=${resetIn}`);
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Counts one request against a budget (headers on `reply`); throws `rate_limited` when spent. */
    rateLimit(cls: RateLimitClass, principal: Principal, ip: string, reply?: FastifyReply): void;
  }
}
