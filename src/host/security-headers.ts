import helmet, { type HelmetOptions } from 'helmet';
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Helmet's headers for an API. They never vary by request, so helmet runs once
 * at start-up and every response gets the recorded set in one call; running
 * helmet per request (as @fastify/helmet does) halved throughput in bench/.
 */
export function securityHeaders(options: HelmetOptions): Record<string, string> {
  const headers: Record<string, string> = {};
  const response = {
    setHeader: (name: string, value: string | number) => void (headers[name.toLowerCase()] = String(value)),
    removeHeader: (name: string) => void delete headers[name.toLowerCase()],
    getHeader: (name: string) => headers[name.toLowerCase()],
  };
  let failure: unknown;
  helmet(options)({} as IncomingMessage, response as unknown as ServerResponse, (error?: unknown) => (failure = error));
  if (failure) throw failure;
  return headers;
}

/**
 * The set OWASP's REST Security Cheat Sheet asks of an API. Headers that only
 * steer legacy browser features on HTML pages (X-XSS-Protection,
 * X-Download-Options, X-DNS-Prefetch-Control, X-Permitted-Cross-Domain-Policies,
 * Origin-Agent-Cluster, COOP) say nothing about a JSON body, and every header
 * costs on every response. Pages (/docs, /graphiql) set their own CSP.
 */
export function apiSecurityHeaders(): Record<string, string> {
  const headers = securityHeaders({
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
    crossOriginResourcePolicy: { policy: 'same-site' },
    crossOriginOpenerPolicy: false,
    originAgentCluster: false,
    xDnsPrefetchControl: false,
    xDownloadOptions: false,
    xPermittedCrossDomainPolicies: false,
    xXssProtection: false,
    xFrameOptions: { action: 'deny' },
  });
  // Answers carry credentials and per-caller data: no shared cache may keep them.
  headers['cache-control'] = 'no-store';
  return headers;
}
