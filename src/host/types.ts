import type { Principal, RequestMeta } from '../auth/principal';
import type { AppError } from '../errors/catalog';
import type { KernelConfig } from '../kernel/config';
import type { DomainApis } from '../domains';
import type { Kernel } from '../kernel/kernel';
import type { ResolverContainer } from '../../subgraphs/context';
import type { ServerSummary } from './web/landing';
import type { LiveCredentials } from './live-credentials';

/** Per-route behaviour, declared in the route's `config` and applied by hooks. */
export type AuthKind = 'public' | 'required' | 'optional';
export type { RateLimitClass } from '../rate-limit/budgets';
import type { RateLimitClass } from '../rate-limit/budgets';

export interface Deprecation {
  /** RFC 9745 Deprecation value, e.g. '@1767225600'. */
  deprecation: string;
  /** RFC 8594 Sunset, an HTTP date. */
  sunset: string;
  /** The successor resource, under the API prefix (/admin/invitations): the Link header names it under the prefix the request used. */
  link: string;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The kernel's settings (each domain holds its own). */
    config: KernelConfig;
    kernel: Kernel;
    /** The public API of every domain. */
    domains: DomainApis;
    /** The app's resolver instances, shared by GraphQL and the REST adapter. */
    resolvers: ResolverContainer;
    /** What the landing page and the start-up log say: health, and whether an owner exists yet. */
    serverSummary(): Promise<ServerSummary>;
    /** The watch over every live credential (graphql-ws sockets, streamed responses): each ends once its credential would be refused. */
    liveCredentials: LiveCredentials;
    /** Aborted when the server starts to stop: long-lived responses (streams) end at once rather than hold the close. */
    stopping: AbortSignal;
  }
  interface FastifyRequest {
    principal: Principal;
    meta: RequestMeta;
    /** The version pinned with X-Service-API-Version, if any. */
    apiVersion?: string;
    /** A refusal decided while resolving the caller (403 csrf_rejected), answered after the rate-limit hook spent the budget. */
    refused?: AppError;
  }
  interface FastifyContextConfig {
    auth?: AuthKind;
    rateLimit?: RateLimitClass;
    deprecation?: Deprecation;
    /** `module_key`: the route belongs to the AI modules API, which takes only AI-modules keys (sk_live_svc_…). */
    credential?: 'module_key';
  }
}
