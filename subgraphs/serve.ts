import { ApolloServer, HeaderMap, type ApolloServerOptions, type ApolloServerPlugin, type HTTPGraphQLResponse } from '@apollo/server';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import net from 'node:net';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import {
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
} from '@apollo/server/plugin/disabled';
import { GraphQLError } from 'graphql';
import { runInUnitOfWork } from '../src/db/unit-of-work';
import type { Orm } from '../src/db/orm';
import { stderrLogger, type Logger } from '../src/kernel/logger';
import { requestIdFrom, idempotencyKeyFrom } from '../src/request-id';
import { AppError, isAppError } from '../src/errors/catalog';
import { Budgets, type BudgetHit } from '../src/rate-limit/budgets';
import type { Principal } from '../src/auth/principal';
import type { IdentityApi } from '../src/domains/identity';
import type { AiApi } from '../src/domains/ai';
import type { GraphqlLimitsConfig, TrustProxy } from '../src/kernel/config';
import { clientAddress, proxyTrust } from '../src/kernel/trust-proxy';
import { OperationGate } from './policy/gate';
import { federatedSchema, resolverInstances, subgraphNames, type SubgraphName } from './build-subgraph';
import { buildSubgraphs, subgraphDefinitions } from './supergraph';
import { createContext, ResolverContainer, type GraphQLContext } from './context';
import { onlyQueriesOverGet, toGraphQLError, withoutSuggestions } from './errors';
import { parseJsonBody, refuseContentCoding } from '../src/json-body';

export interface ServeSubgraphOptions {
  host: string;
  /** 0 picks a free port; the returned url carries the real one. */
  port: number;
  orm: Orm;
  budgets: Budgets;
  /** The caps every operation is measured against, and who may introspect (the kernel's `graphql` settings). */
  limits: GraphqlLimitsConfig;
  /** Take the client address from X-Forwarded-For (behind your own proxy or gateway only). */
  trustProxy: TrustProxy;
  /** The largest request body (BODY_LIMIT_BYTES, as on the main server); a larger one is 413 unread. */
  bodyLimitBytes: number;
  /** The booted domains' APIs: the subgraph's own, and identity's (every request is authenticated). */
  domains: Record<string, unknown> & { identity: IdentityApi };
  /** Where unexpected resolver errors are logged (redacted); the kernel's logger, stderr by default. */
  log?: Logger;
}

export interface ServedSubgraph {
  url: string;
  stop(): Promise<void>;
}

type ExecuteArgs = Parameters<ApolloServer<GraphQLContext>['executeHTTPGraphQLRequest']>[0];

/**
 * The HTTP front (./serve.ts's own, see serveHttp) hands every request to executeHTTPGraphQLRequest,
 * so overriding it opens one unit of work around the whole request (credential
 * check, execution, response), as the main app's onRequest hook does, and
 * reads the document before Apollo parses it: one over a cap is refused
 * (400 query_too_complex) exactly as /graphql refuses it.
 */
class UnitOfWorkServer extends ApolloServer<GraphQLContext> {
  constructor(
    private readonly orm: Orm,
    private readonly gate: OperationGate,
    config: ApolloServerOptions<GraphQLContext>,
  ) {
    super(config);
  }

  override executeHTTPGraphQLRequest(request: ExecuteArgs): Promise<HTTPGraphQLResponse> {
    const query = documentText(request.httpGraphQLRequest);
    if (query !== undefined) {
      try {
        this.gate.read(query);
      } catch (error) {
        if (!isAppError(error)) throw error;
        return Promise.resolve(refusalResponse(error));
      }
    }
    return runInUnitOfWork(this.orm, () => super.executeHTTPGraphQLRequest(request));
  }
}

/** The query text of a GraphQL-over-HTTP request (POST body or GET search), if it has one. */
function documentText(request: ExecuteArgs['httpGraphQLRequest']): string | undefined {
  const query = request.method === 'GET' ? new URLSearchParams(request.search).get('query') : (request.body as { query?: unknown } | null)?.query;
  return typeof query === 'string' ? query : undefined;
}

/** A refusal before Apollo runs anything, in the GraphQL response shape /graphql answers it with. */
function refusalResponse(error: AppError): HTTPGraphQLResponse {
  // A refusal is answered, not logged (a 503 server_busy would log a line per refused request).
  const log = { error: () => undefined, warn: () => undefined };
  const formatted = toGraphQLError(new GraphQLError(error.message, { originalError: error }), log);
  return {
    status: error.status,
    headers: new HeaderMap([['content-type', 'application/json; charset=utf-8']]),
    body: { kind: 'complete', string: JSON.stringify({ errors: [formatted.toJSON()] }) },
  };
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
  const bound = await bind(options.host, options.port);
  try {
    return await serveOn(bound, name, definition, options);
  } catch (error) {
    bound.close();
    throw error;
  }
}

/**
 * Binds the address first, so that a refusal (a busy or privileged port) is
 * this promise's rejection with the system error (its code, address and
 * port): Apollo's standalone server has no 'error' listener on its own
 * socket, and the same failure there is an uncaught exception.
 */
function bind(host: string, port: number): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen({ host, port }, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

async function serveOn(
  bound: net.Server,
  name: SubgraphName,
  definition: ReturnType<typeof subgraphDefinition>,
  options: ServeSubgraphOptions,
): Promise<ServedSubgraph> {
  const subgraph = (await buildSubgraphs()).find((s) => s.name === name)!;
  const container = new ResolverContainer(resolverInstances([definition], options.domains));
  const access = options.domains.identity.access;
  const schema = federatedSchema(subgraph);
  // The policies are read from the built subgraph, whose fields carry them (the federated schema is rebuilt from SDL).
  // The modules subgraph counts its keys' daily requests as the main server does (booted with the ai domain).
  const account = (options.domains.ai as Pick<AiApi, 'account'> | undefined)?.account;
  const gate = new OperationGate(subgraph.schema, access, options.budgets, options.limits, account && ((principal, units) => account.admitDaily(principal, units)));
  const logger = options.log ?? stderrLogger();
  const log = {
    error: (obj: object, msg: string) => logger.error(obj as Record<string, unknown>, msg),
    warn: (obj: object, msg: string) => logger.warn(obj as Record<string, unknown>, msg),
  };
  /**
   * The budget each request spent, shown in its response headers as the main server does. Keyed by
   * the context's `meta`: @apollo/server hands the plugins a shallow copy of the context, not the one built.
   */
  const spent = new WeakMap<GraphQLContext['meta'], BudgetHit[]>();

  // The policy layer, as over /graphql: the request's budget when it arrives, then the
  // operation's stricter budgets and the MFA-enrolment rule once the document is known.
  const policy: ApolloServerPlugin<GraphQLContext> = {
    async requestDidStart() {
      return {
        async didResolveOperation({ document, request, contextValue }) {
          const hits = spent.get(contextValue.meta) ?? [];
          try {
            // Read already (executeHTTPGraphQLRequest); the cost is checked with the request's variables.
            const operation = gate.operation(gate.readDocument(document), request.operationName, request.variables);
            if (!operation) throw new AppError('bad_request', 'The document has several operations: name one in operationName');
            if (operation.kind === 'subscription') {
              throw new AppError('bad_request', "A subgraph serves no subscriptions: subscribe over a WebSocket (graphql-transport-ws) on the main server's /graphql");
            }
            const admitted: Principal = await gate.admit(operation, contextValue.principal, contextValue.meta.ip, {
              spend: true,
              enrollment: true,
              show: (hit) => hits.push(hit),
            });
            contextValue.principal = admitted;
            contextValue.run = gate.scheduler.schedule(operation.cost);
            await contextValue.run?.granted;
          } catch (error) {
            throw httpError(error);
          }
        },
        // graphql-js' "Did you mean …" hints name the schema: cut for a caller who may not introspect,
        // before formatError shapes the errors (which sees no context).
        async didEncounterErrors({ errors, contextValue }) {
          if (gate.mayIntrospect(contextValue.principal)) return;
          for (const error of errors) if (!isAppError(error.originalError)) error.message = withoutSuggestions(error.message);
        },
        async willSendResponse({ response, contextValue }) {
          for (const hit of spent.get(contextValue.meta) ?? []) {
            for (const [name, value] of Object.entries(Budgets.headers(hit))) response.http.headers.set(name, value);
          }
        },
      };
    },
  };

  const server = new UnitOfWorkServer(options.orm, gate, {
    schema,
    // Every setting is the gate's to decide, as on /graphql: Apollo's own refusal of 'off' would be a 400, not 403 introspection_disabled.
    introspection: true,
    parseOptions: { maxTokens: options.limits.maxTokens },
    // No HTML sandbox (it loads from a CDN); no ftv1 resolver timings for any caller who asks.
    plugins: [ApolloServerPluginLandingPageDisabled(), ApolloServerPluginInlineTraceDisabled(), policy],
    // The same error shape as /graphql: the catalog code in extensions.code.
    formatError: (formatted, error) => {
      if (!(error instanceof GraphQLError)) return formatted;
      // Apollo refuses a mutation over GET itself (405, Allow: POST), before any plugin runs: /graphql's error for it.
      if ((error.extensions.http as { status?: number } | undefined)?.status === 405) {
        return toGraphQLError(new GraphQLError(error.message, { originalError: onlyQueriesOverGet() }), log).toJSON();
      }
      return toGraphQLError(error, log).toJSON();
    },
  });

  const trust = proxyTrust(options.trustProxy);
  const context = async (req: IncomingMessage): Promise<GraphQLContext> => {
    const ip = clientAddress(req.socket.remoteAddress ?? '', req.headers['x-forwarded-for'], trust);
    const idempotencyKey = req.headers['idempotency-key'];
    const meta = {
      requestId: requestIdFrom(req.headers['x-request-id']),
      ip,
      userAgent: req.headers['user-agent'] ?? null,
      ...(idempotencyKey === undefined ? {} : { idempotencyKey: idempotencyKeyFrom(idempotencyKey) }),
    };
    const principal = await access.bearer(req.headers.authorization, ip);
    const hit = options.budgets.hit('default', principal, ip);
    if (!hit.allowed) throw httpError(Budgets.refusal(hit), hit);
    const created = createContext(container, principal, meta);
    spent.set(created.meta, [hit]);
    return created;
  };
  const httpServer = http.createServer((req, res) => void serveHttp(server, req, res, options.bodyLimitBytes, context, log));
  server.addPlugin(ApolloServerPluginDrainHttpServer({ httpServer }));
  await server.start();
  // server.listen(handle) serves a socket bound already (node's documented form).
  await new Promise<void>((resolve) => httpServer.listen(bound, resolve));
  return { url: urlOf(bound), stop: () => server.stop() };
}

/**
 * One HTTP request to the subgraph: the body read within BODY_LIMIT_BYTES
 * (a larger one is 413 before it is read, as on the main server; Apollo's own
 * standalone server reads up to 50 MB), JSON parsed, then Apollo's handling.
 * A gateway calls from its own host, so no CORS headers are sent.
 */
async function serveHttp(
  server: ApolloServer<GraphQLContext>,
  req: IncomingMessage,
  res: ServerResponse,
  limit: number,
  context: (req: IncomingMessage) => Promise<GraphQLContext>,
  log: { error: (obj: object, msg: string) => void },
): Promise<void> {
  try {
    const body = await readJsonBody(req, limit);
    const headers = new HeaderMap();
    for (const [key, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
    }
    const url = req.url ?? '/';
    const response = await server.executeHTTPGraphQLRequest({
      httpGraphQLRequest: { method: (req.method ?? 'GET').toUpperCase(), headers, search: url.includes('?') ? url.slice(url.indexOf('?')) : '', body },
      context: () => context(req),
    });
    for (const [key, value] of response.headers) res.setHeader(key, value);
    res.statusCode = response.status ?? 200;
    if (response.body.kind === 'complete') {
      res.end(response.body.string);
      return;
    }
    for await (const chunk of response.body.asyncIterator) res.write(chunk);
    res.end();
  } catch (error) {
    const refusal = isAppError(error) ? error : new AppError('internal_error', 'An unexpected error occurred');
    if (!isAppError(error)) log.error({ err: error }, 'subgraph request failed');
    if (res.headersSent) return void res.destroy();
    const answer = refusalResponse(refusal);
    // A body left unread (too large) is not drained: the connection closes after the answer.
    if (!req.complete) res.setHeader('connection', 'close');
    for (const [key, value] of answer.headers) res.setHeader(key, value);
    res.statusCode = answer.status!;
    res.end(answer.body.kind === 'complete' ? answer.body.string : '');
  }
}

/** The request's JSON body (undefined when it is not JSON: Apollo refuses that), at most `limit` bytes, read as the main server reads it. */
async function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  const tooLarge = () => new AppError('payload_too_large', `The request body is larger than the server accepts (${limit} bytes)`);
  refuseContentCoding(req.headers);
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw tooLarge();
    chunks.push(chunk);
  }
  const contentType = req.headers['content-type'];
  if (String(contentType ?? '').split(';', 1)[0]!.trim().toLowerCase() !== 'application/json' || size === 0) return undefined;
  return parseJsonBody(Buffer.concat(chunks, size), contentType);
}

/** The subgraph's URL, as a gateway configures it. */
function urlOf(bound: net.Server): string {
  const address = bound.address() as net.AddressInfo;
  const host = address.address === '' || address.address === '::' || address.address === '0.0.0.0' ? 'localhost' : address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}/`;
}

/**
 * A refusal before execution, in the form @apollo/server answers with its
 * HTTP status and headers (a HeaderMap in extensions.http), keeping the
 * catalog error as the original for formatError.
 */
function httpError(error: unknown, hit?: BudgetHit): unknown {
  if (!isAppError(error)) return error;
  const appError: AppError = error;
  const headers = new HeaderMap(Object.entries({ ...(hit ? Budgets.headers(hit) : {}), ...appError.headers }));
  return new GraphQLError(appError.message, {
    originalError: appError,
    extensions: { code: appError.code, http: { status: appError.status, headers } },
  });
}
