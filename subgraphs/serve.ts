import { ApolloServer, type ApolloServerOptions, type HTTPGraphQLResponse } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import {
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
} from '@apollo/server/plugin/disabled';
import { GraphQLError } from 'graphql';
import { inContext, type Services } from '../src/services';
import type { Orm } from '../src/db/orm';
import { requestIdFrom } from '../src/request-id';
import { resolvePrincipal } from '../src/host/principal';
import { toGraphQLError } from '../src/host/graphql';
import { federatedSchema, subgraphNames, type SubgraphName } from './build-subgraph';
import { buildSubgraphs } from './supergraph';
import { createContext, type GraphQLContext } from './context';

export interface ServeSubgraphOptions {
  host: string;
  /** 0 picks a free port; the returned url carries the real one. */
  port: number;
  services: Services;
}

export interface ServedSubgraph {
  url: string;
  stop(): Promise<void>;
}

/** Same rule as the main app's genReqId. */

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
    return inContext(this.orm, () => super.executeHTTPGraphQLRequest(request));
  }
}

export function isSubgraphName(name: string): name is SubgraphName {
  return (subgraphNames as readonly string[]).includes(name);
}

/**
 * Serves one subgraph alone (`_service`, `_entities` and its own fields) with
 * @apollo/server, for a federation gateway. The caller owns `services` and
 * closes them after `stop()`.
 */
export async function serveSubgraph(name: SubgraphName, options: ServeSubgraphOptions): Promise<ServedSubgraph> {
  const { services } = options;
  const subgraph = (await buildSubgraphs()).find((s) => s.name === name);
  if (!subgraph) throw new Error(`Unknown subgraph "${name}"`);
  const log = { error: (obj: object, msg: string) => console.error(msg, obj) };

  const server = new UnitOfWorkServer(services.orm, {
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
      const given = req.headers['x-request-id'];
      const meta = {
        requestId: requestIdFrom(given),
        ip: req.socket.remoteAddress ?? '',
        userAgent: req.headers['user-agent'] ?? null,
      };
      const principal = await resolvePrincipal(services, req.headers.authorization);
      return createContext(services, principal, meta);
    },
  });

  return { url, stop: () => server.stop() };
}
