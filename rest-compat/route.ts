import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RestHints } from '../subgraphs/rest';
import type { AuthKind, Deprecation, RateLimitClass } from '../src/host/types';
import type { JsonSchema } from './shapes';

export type { JsonSchema } from './shapes';
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** Where an argument of the route's field comes from. */
export type ArgSource =
  | { in: 'path' | 'query'; name: string; hints?: RestHints }
  | { in: 'body'; name: string; hints?: RestHints }
  | { in: 'body' | 'query'; whole: true };

/** A path parameter (`:name` in the route's path). */
export const path = (name: string, hints?: RestHints): ArgSource => ({ in: 'path', name, hints });
/** A query parameter; its default is the argument's. */
export const query = (name: string, hints?: RestHints): ArgSource => ({ in: 'query', name, hints });
/** One member of the JSON body. */
export const member = (name: string, hints?: RestHints): ArgSource => ({ in: 'body', name, hints });
/** The whole JSON body, as the argument's input type (snake_case members). */
export const body = (): ArgSource => ({ in: 'body', whole: true });
/** The whole query string, as the argument's input type (for a GET that a link or beacon can send). */
export const queryObject = (): ArgSource => ({ in: 'query', whole: true });

/** What documents a route in OpenAPI. */
interface RouteDocs {
  method: HttpMethod;
  /** Documented path relative to the prefix, e.g. /auth/login; parameters as `:name`. */
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
  deprecation?: Deprecation;
  /**
   * `module_key`: a path of the AI modules API (ai-modules-api.md), which
   * takes only a user's AI-modules key (sk_live_svc_…): any other credential
   * is 401, before anything else runs.
   */
  credential?: 'module_key';
  /** Success status; 204 sends no body. */
  status: number;
  /**
   * Route-specific problem responses for the OpenAPI document: status to
   * description. What the host answers for any route of its shape (401, 403
   * of the enrolment gate and CSRF, 400, 413-415, 429...) is added by openapi.ts.
   */
  problems?: Record<number, string>;
  /** The spec's name of the success body's schema (of its items, for a list): written once under components.schemas. */
  responseName?: string;
}

/**
 * A route that runs one root field of the served schema, so REST and GraphQL
 * share resolvers, rules, errors and the policy layer. The route declares
 * only what REST adds: the path, how path, query and body map to the field's
 * arguments, and docs. Its credential requirement and budget are the field's
 * policy; the selection, the snake_case body and both JSON schemas are
 * derived from the GraphQL types (./shapes.ts).
 */
export interface GraphQLRoute extends RouteDocs {
  /** The root field it runs: a query, or a mutation for routes that change state. */
  field: string;
  args?: Record<string, ArgSource>;
  /** What a body schema says beyond the types: its title, and keywords for the object or its members. */
  bodyHints?: { title?: string; description?: string; minProperties?: number; required?: string[]; properties?: Record<string, RestHints> };
  /**
   * The body is the page envelope `{ items, page, per_page, total }`; the
   * adapter adds its Link header (first, prev, next, last). See pagination.ts.
   */
  paginated?: true;
  /** A selection of the field's type, only where the documented REST body shows less than the type. */
  select?: string;
  /** Only where the documented REST body differs from the field's type: how it is built from the derived one. */
  answer?: { body: (derived: never) => unknown; schema: (derived: JsonSchema) => JsonSchema };
}

/**
 * A route that carries what GraphQL cannot (redirects, cookies of a browser
 * sign-in): it calls the domain services directly and declares its own schemas.
 */
export interface RawRoute extends RouteDocs {
  auth: AuthKind;
  rateLimit?: RateLimitClass;
  request?: { body?: JsonSchema; querystring?: JsonSchema; params?: JsonSchema };
  /** The success body's schema (omit for redirects). */
  response?: JsonSchema;
  /** The success body by media type, where it is not JSON alone (a download, a stream); `response` is then only fastify's. */
  content?: Record<string, JsonSchema>;
  raw: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
  /** Takes multipart/form-data (a file upload) of this form; every other route refuses it (415). */
  multipart?: JsonSchema;
}

export type RestRoute = GraphQLRoute | RawRoute;

export const isRawRoute = (route: RestRoute): route is RawRoute => 'raw' in route;

export const API_PREFIXES = ['/v1', '/api/v1'] as const;
