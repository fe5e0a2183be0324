import fp from 'fastify-plugin';
import type { FastifyReply } from 'fastify';
import type { Principal } from '../auth/principal';
import { Budgets, rateLimitClasses, type BudgetHit, type RateLimitClass } from '../rate-limit/budgets';

/**
 * Every HTTP request spends one budget: its route's class (a REST route takes
 * it from the GraphQL field it runs), else `default`: per credential for
 * authenticated callers, per IP otherwise. Every response carries
 * X-RateLimit-* and the IETF RateLimit-Policy / RateLimit pair.
 */
export const rateLimitPlugin = fp(
  async (app) => {
    const budgets = app.kernel.budgets;

    app.addHook('onRoute', (route) => {
      const cls = route.config?.rateLimit;
      if (cls !== undefined && !rateLimitClasses.includes(cls)) throw new Error(`Unknown rate-limit class "${cls}" on ${route.url}`);
    });

    app.decorate('rateLimit', (cls: RateLimitClass, principal: Principal, ip: string, reply?: FastifyReply) => {
      const hit = budgets.hit(cls, principal, ip);
      if (reply) setRateLimitHeaders(reply, hit);
      if (!hit.allowed) throw Budgets.refusal(hit);
    });

    app.addHook('onRequest', (request, reply, done) => {
      try {
        app.rateLimit(request.routeOptions.config?.rateLimit ?? 'default', request.principal, request.ip, reply);
      } catch (error) {
        return done(error as Error);
      }
      // A refusal found while resolving the caller (a cross-site cookie request) waits for the budget's headers.
      done(request.refused);
    });
  },
  { name: 'atrium-rate-limit', dependencies: ['atrium-principal'] },
);

/** Set one by one: building Budgets.headers' object on every request costs more. */
export function setRateLimitHeaders(reply: FastifyReply, hit: BudgetHit) {
  const resetIn = Math.max(0, hit.resetAt - Math.floor(Date.now() / 1000));
  reply.header('x-ratelimit-limit', hit.limit);
  reply.header('x-ratelimit-remaining', hit.remaining);
  reply.header('x-ratelimit-reset', hit.resetAt);
  reply.header('ratelimit-policy', `"${hit.cls}";q=${hit.limit};w=${hit.windowSeconds}`);
  reply.header('ratelimit', `"${hit.cls}";r=${hit.remaining};t=${resetIn}`);
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Counts one request against a budget (headers on `reply`); throws `rate_limited` when spent. */
    rateLimit(cls: RateLimitClass, principal: Principal, ip: string, reply?: FastifyReply): void;
  }
}
