import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuthKind, Deprecation, RateLimitClass } from '../src/host/types';

export type JsonSchema = Record<string, unknown>;
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** A REST route that runs a GraphQL operation on the served schema. */
export interface GraphQLMapping {
  document: string;
  variables?: (request: FastifyRequest) => Record<string, unknown>;
  /** Maps the operation's `data` to the documented (snake_case) body. */
  result: (data: Record<string, unknown>) => unknown;
}

/**
 * One documented path. Exactly one of `graphql` (the default: same resolvers as
 * GraphQL) or `raw` (routes carrying raw bytes, calling core services) is set.
 */
export interface RestRoute {
  method: HttpMethod;
  /** Documented path relative to the prefix, e.g. /auth/login. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  /**
   * The spec does not show this path (its "not shown" parts are ours to
   * design); it is documented in the OpenAPI document like any other.
   */
  extension?: true;
  /**
   * The body is the page envelope `{ items, page, per_page, total }`; the
   * adapter adds its Link header (first, prev, next, last). See pagination.ts.
   */
  paginated?: true;
  auth: AuthKind;
  rateLimit?: RateLimitClass;
  deprecation?: Deprecation;
  /** Success status; 204 sends no body. */
  status: number;
  request?: { body?: JsonSchema; querystring?: JsonSchema; params?: JsonSchema };
  /** The success body's schema (omit for 204 and redirects). */
  response?: JsonSchema;
  /** Route-specific problem responses for the OpenAPI document: status to description. */
  problems?: Record<number, string>;
  graphql?: GraphQLMapping;
  raw?: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
}

export const API_PREFIXES = ['/v1', '/api/v1'] as const;
