import { ApolloServer, type ApolloServerOptions, type HTTPGraphQLResponse } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import {
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
} from '@apollo/server/plugin/disabled';
import { GraphQLError } from 'graphql';
import { runInUnitOfWork } from '../src/db/unit-of-work';
import type { Orm } from '../src/db/orm';
import { requestIdFrom } from '../src/request-id';
import type { IdentityApi } from '../src/domains/identity';
import { federatedSchema, resolverInstances, subgraphNames, type SubgraphName } from './build-subgraph';
import { buildSubgraphs, subgraphDefinitions } from './supergraph';
import { createContext, ResolverContainer, type GraphQLContext } from './context';
import { toGraphQLError } from './errors';

export interface ServeSubgraphOptions {
  host: string;
  /** 0 picks a free port; the returned url carries the real one. */
  port: number;
  orm: Orm;
  /** The booted domains' APIs: the subgraph's own, and identity's (every request is authenticated). */
  domains: Record<string, unknown> & { identity: IdentityApi };
}

export interface ServedSubgraph {
  url: string;
  stop(): Promise<void>;
}

/**
 * startStandaloneServer hands every HTTP request to executeHTTPGraphQLRequest,
 * so overriding it opens one unit of work around the whole request (credential
 * check, execution, response), as the main app's onRequest hook does.
 */
class UnitOfWorkServer extends ApolloServer<GraphQLContext> {
  constructor(
    private readonly orm: Orm,
    config: ApolloServerOptions<GraphQLContext>,
  ) {
    super(config);
  }

  override executeHTTPGraphQLRequest(
    request: Parameters<ApolloServer<GraphQLContext>['executeHTTPGraphQLRequest']>[0],
  ): Promise<HTTPGraphQLResponse> {
    return runInUnitOfWork(this.orm, () => super.executeHTTPGraphQLRequest(request));
  }
}

export function isSubgraphName(name: string): name is SubgraphName {
  return (subgraphNames as readonly string[]).includes(name);
}

export function subgraphDefinition(name: SubgraphName) {
  const definition = subgraphDefinitions.find((s) => s.name === name);
  if (!definition) throw new Error(`Unknown subgraph "${name}"`);
  return definition;
}

/**
 * Serves one subgraph alone (`_service`, `_entities` and its own fields) with
 * @apollo/server, for a federation gateway. The caller owns the domains and
 * closes them after `stop()`.
 */
export async function serveSubgraph(name: SubgraphName, options: ServeSubgraphOptions): Promise<ServedSubgraph> {
  const definition = subgraphDefinition(name);
  const subgraph = (await buildSubgraphs()).find((s) => s.name === name)!;
  const container = new ResolverContainer(resolverInstances([definition], options.domains));
  const access = options.domains.identity.access;
  const log = { error: (obj: object, msg: string) => console.error(msg, obj) };

  const server = new UnitOfWorkServer(options.orm, {
    schema: federatedSchema(subgraph),
    introspection: true,
    // No HTML sandbox (it loads from a CDN); no ftv1 resolver timings for any caller who asks.
    plugins: [ApolloServerPluginLandingPageDisabled(), ApolloServerPluginInlineTraceDisabled()],
    // The same error shape as /graphql: the catalog code in extensions.code.
    formatError: (formatted, error) => (error instanceof GraphQLError ? toGraphQLError(error, log).toJSON() : formatted),
  });

  const { url } = await startStandaloneServer(server, {
    listen: { host: options.host, port: options.port },
    context: async ({ req }) => {
      const ip = req.socket.remoteAddress ?? '';
      const meta = { requestId: requestIdFrom(req.headers['x-request-id']), ip, userAgent: req.headers['user-agent'] ?? null };
      const principal = await access.bearer(req.headers.authorization, ip);
      return createContext(container, principal, meta);
    },
  });

  return { url, stop: () => server.stop() };
}
