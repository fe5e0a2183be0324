import { randomUUID } from 'node:crypto';
import fp from 'fastify-plugin';
import mercurius, { type MercuriusContext } from 'mercurius';
import { GraphQLError, type ExecutionResult, type GraphQLSchema } from 'graphql';
import { MapperKind, mapSchema } from '@graphql-tools/utils';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors/catalog';
import { toAppError } from '../errors/to-app-error';
import type { ServerSideLog } from '../errors/server-side-log';
import { sendProblem } from './problem';
import { lazyChild } from './lazy-logger';
import { anonymous, type Principal, type RequestMeta } from '../auth/principal';
import type { AccessService } from '../domains/identity';
import { createContext, Loaders, type GraphQLContext, type TransportHooks } from '../../subgraphs/context';
import { onlyQueriesOverGet, toGraphQLError } from '../../subgraphs/errors';
import type { Supergraph } from '../../subgraphs/supergraph';
import { OperationGate, type AdmittedOperation } from '../../subgraphs/policy/gate';
import type { MeasuredDocument, Variables } from '../../subgraphs/policy/limits';
import type { ScheduledRun } from '../../subgraphs/policy/scheduler';
import type { BudgetHit } from '../rate-limit/budgets';
import { socketCookiePrincipal, trustedOrigins } from './cookie-auth';
import { setRateLimitHeaders } from './rate-limit';
import { isPromise } from '../is-promise';
import { lighterSocketMessageLoop } from './ws-message-loop';
import { sharedSubscriptionResults } from './shared-subscriptions';
import { GRAPHQL_TRANSPORT_WS, offersGraphQLTransportWs } from './ws-protocol';
import { LiveCredentials, type CredentialEvent, type CredentialWatch } from './live-credentials';

/**
 * The request meta of one socket operation (mercurius copies the connection's
 * context per operation): an id of its own under the connection's, since
 * services derive idempotency keys from it and every operation of a socket
 * is a new request (three grants on one socket are three grants).
 */
function socketOperationMeta(meta: RequestMeta): RequestMeta {
  return { ...meta, requestId: `${meta.requestId}/${randomUUID()}` };
}

interface HttpOperation {
  query: string;
  operationName?: string | null;
  variables: Variables;
}

/** The GraphQL-over-HTTP operations of a request: GET's query string, or the (possibly batched) body. */
function httpOperations(request: FastifyRequest): HttpOperation[] {
  const source = request.method === 'GET' ? request.query : request.body;
  const operations = Array.isArray(source) ? source : [source];
  const found: HttpOperation[] = [];
  for (const operation of operations) {
    const { query, operationName, variables } = (operation ?? {}) as { query?: unknown; operationName?: unknown; variables?: unknown };
    if (typeof query !== 'string') continue;
    found.push({
      query,
      operationName: typeof operationName === 'string' ? operationName : null,
      variables: requestVariables(variables),
    });
  }
  return found;
}

/** Variables as sent: an object, or over GET its JSON text (anything else is the executor's to refuse). */
function requestVariables(variables: unknown): Variables {
  if (typeof variables === 'string') {
    try {
      variables = JSON.parse(variables);
    } catch {
      return null;
    }
  }
  return variables !== null && typeof variables === 'object' && !Array.isArray(variables) ? (variables as Record<string, unknown>) : null;
}

/**
 * The operation a socket message runs. The hooks do not see its operationName: a
 * document of several operations is held to the heaviest, with every root field of all.
 */
function socketOperation(gate: OperationGate, read: MeasuredDocument, variables: Variables): AdmittedOperation & { cost: number } | undefined {
  const [only, ...more] = read.operations;
  if (!only) return undefined;
  if (more.length === 0) return gate.operation(read, null, variables);
  // By the operation itself, not its name: a subscription's text is read before validation, and
  // a second anonymous operation (which the validator refuses later) has no name to look it up by.
  return {
    rootFields: read.operations.flatMap((o) => o.rootFields),
    introspection: read.operations.some((o) => o.introspection),
    cost: Math.max(...read.operations.map((o) => gate.meter.costWith(read, o, variables))),
  };
}

export function sessionCookieClearing(name: string, secure: boolean): string {
  return `${name}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

/** What a resolver may do to the HTTP reply of its request (GraphQL over HTTP and REST). */
export function replyTransport(reply: FastifyReply, secureCookies: boolean): TransportHooks {
  return { clearCookie: (name) => reply.header('set-cookie', sessionCookieClearing(name, secureCookies)) };
}

/**
 * The served schema, with one transport concern woven in: an error raised
 * while a subscription starts (say `forbidden`) reaches the socket through
 * mercurius' own error path, which keeps only the message, not the
 * errorFormatter: give it the catalog extensions before it gets there.
 */
function servedSchema(schema: GraphQLSchema, log: ServerSideLog): GraphQLSchema {
  return mapSchema(schema, {
    [MapperKind.SUBSCRIPTION_ROOT_FIELD]: (field) => {
      const subscribe = field.subscribe;
      if (!subscribe) return field;
      return {
        ...field,
        subscribe: async (...args: Parameters<typeof subscribe>) => {
          try {
            return await subscribe(...args);
          } catch (error) {
            if (error instanceof GraphQLError) throw error;
            const original = error instanceof Error ? error : new Error(String(error));
            throw toGraphQLError(new GraphQLError(original.message, { originalError: original }), log);
          }
        },
      };
    },
  });
}

/** The context of a socket operation: the connection's, with the accepted socket (set by onConnect). */
type SocketContext = GraphQLContext & { live?: LiveSocket };

/** The part of a ws socket a refused or revoked connection needs. */
interface ClosableSocket {
  protocol?: string;
  readyState?: number;
  close(code: number, reason: string): void;
  once(event: 'close', listener: () => void): void;
}

/**
 * An accepted socket: closed (4401) the moment the credential it was opened
 * with stops being valid (its session revoked, its user's access changed,
 * its API key revoked: the reason names it), or with the refusal a recheck
 * found (see LiveCredentials). The client reconnects and is judged afresh.
 */
interface LiveSocket {
  socket: ClosableSocket;
  watch: CredentialWatch;
}

/** Closes a socket that may run nothing more: 4401 when its credential no longer holds (revoked, a token expired, a key too old), else 4403 with the reason. */
function closeRefused(socket: ClosableSocket, refusal: AppError, event?: CredentialEvent): void {
  const credentialEnded = event !== undefined || refusal.code === 'token_expired' || refusal.code === 'token_invalid';
  if (socket.readyState === 1) socket.close(credentialEnded ? 4401 : 4403, event ?? refusal.code);
}

export const graphqlPlugin = fp<{ supergraph: Supergraph }>(
  async (app, { supergraph }) => {
    const { events } = app.kernel;
    const access: AccessService = app.domains.identity.access;
    const container = app.resolvers;
    const secureCookies = app.config.publicUrl.startsWith('https://');
    const origins = trustedOrigins(app.config);

    const { account } = app.domains.ai;
    const gate = new OperationGate(supergraph.schema, access, app.kernel.budgets, app.config.graphql, (principal, units) => account.admitDaily(principal, units));
    app.decorate('gate', gate);

    // Every accepted socket, judged again each SOCKET_RECHECK_MS (and before each of its operations),
    // with the streamed responses (the bulk rows): one watch over every live credential.
    const liveCredentials = new LiveCredentials(events, access, app.log, app.config.socketReauthenticateSeconds);
    app.decorate('liveCredentials', liveCredentials);
    app.addHook('onClose', async () => liveCredentials.close());

    // GraphQL over HTTP is read and admitted by the policy layer before mercurius
    // runs anything: a document that is not GraphQL or passes a cap is a 400, a
    // spent budget a 429, neither having run anything; a caller who owes MFA
    // enrolment runs as anonymous unless every root field allows it.
    // Synchronous while the document is known (the hot path).
    const admitOperations = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => {
      const operations = httpOperations(request);
      const show = (hit: BudgetHit) => setRateLimitHeaders(reply, hit);
      let index = 0;
      const next = (principal: Principal): void => {
        while (index < operations.length) {
          const { query, operationName, variables } = operations[index++]!;
          let admitted: Principal | Promise<Principal>;
          try {
            const read = gate.read(query);
            const operation = gate.operation(read, operationName, variables);
            if (!operation) throw noOperation(read.operations.length, operationName);
            if (operation.kind === 'subscription') {
              throw new AppError('bad_request', 'A subscription needs a WebSocket (graphql-transport-ws) on /graphql, not an HTTP request');
            }
            admitted = gate.admit(operation, principal, request.ip, { spend: true, enrollment: true, show });
            // Batches are refused by mercurius: one operation per request, one turn, waited for here.
            const run = gate.scheduler.schedule(operation.cost);
            if (run) {
              request.graphqlRun = run;
              if (run.granted) {
                const admittedNow = admitted;
                admitted = run.granted.then(() => admittedNow);
              }
            }
          } catch (error) {
            return done(error as Error);
          }
          if (isPromise(admitted)) return void admitted.then(next, done);
          principal = admitted;
        }
        request.principal = principal;
        done();
      };
      next(request.principal);
    };
    /**
     * No operation to run: refused here, in graphql-js' words, on GET as on POST (mercurius' check
     * that a GET runs only queries reads the operation before anything validates that there is one).
     */
    const noOperation = (operations: number, operationName: unknown): AppError => {
      if (typeof operationName === 'string' && operationName) {
        const name = operationName.length > 100 ? `${operationName.slice(0, 100)}…` : operationName;
        return new AppError('bad_request', `Unknown operation named "${name}".`);
      }
      return new AppError('bad_request', operations ? 'Must provide operation name if query contains multiple operations.' : 'Must provide an operation.');
    };
    app.addHook('onRoute', (route) => {
      if (route.url !== '/graphql') return;
      route.preHandler = [...(route.preHandler ? [route.preHandler].flat() : []), admitOperations];
      // On the request, before the body is parsed: a body fastify cannot parse at all (no Content-Type, multipart)
      // would otherwise be refused by the parser with the REST surface's wording, which names file uploads.
      if ([route.method].flat().includes('POST')) route.onRequest = [...(route.onRequest ? [route.onRequest].flat() : []), jsonBodiesOnly];
      if (route.wsHandler) route.onRequest = [...(route.onRequest ? [route.onRequest].flat() : []), graphqlTransportWsOnly];
    });

    /** A WebSocket upgrade speaks graphql-transport-ws, the one subprotocol the socket rules are written for (./ws-protocol.ts). */
    const graphqlTransportWsOnly = (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
      if (!request.ws || offersGraphQLTransportWs(request.headers['sec-websocket-protocol'])) return done();
      done(new AppError('bad_request', `A WebSocket to /graphql speaks ${GRAPHQL_TRANSPORT_WS}: offer it in Sec-WebSocket-Protocol (the legacy graphql-ws protocol is not served)`));
    };

    /**
     * A POST /graphql body is JSON, as every REST body is: mercurius also parses application/graphql
     * (a bare document) and fastify text/plain, which would answer a 400 where REST answers 415.
     */
    const jsonBodiesOnly = (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
      if (request.headers['content-type']?.split(';', 1)[0]!.trim().toLowerCase() === 'application/json') return done();
      done(new AppError('unsupported_media_type', 'POST /graphql takes a JSON body (application/json)'));
    };

    /** Errors of an operation, GraphQL-shaped, with the HTTP status a refusal before execution deserves. */
    const errorFormatter = (execution: ExecutionResult, context: MercuriusContext) => {
      // A socket operation has no request logger of its own: its request id goes on the line all the same
      // (a child built only if a line is written: most errors are the client's and log nothing).
      const meta = (context as Partial<GraphQLContext>).meta;
      const log = context.reply?.log ?? (meta ? lazyChild(app.log, { reqId: meta.requestId }) : app.log);
      // The operation's caller (a socket's from its connection), else the request's; unknown is anonymous.
      const caller = (context as Partial<GraphQLContext>).principal ?? context.reply?.request.principal ?? anonymous;
      const hidden = { hideSchema: !gate.mayIntrospect(caller) };
      let statusCode = 200;
      const errors: GraphQLError[] = [];
      for (const error of execution.errors ?? []) {
        const nested = (error.originalError as { errors?: unknown[] } | undefined)?.errors;
        if ((error.originalError as { code?: string } | undefined)?.code === 'MER_ERR_METHOD_NOT_ALLOWED') {
          // A mutation over GET: 405 per GraphQL-over-HTTP, as REST answers a wrong method.
          statusCode = 405;
          context.reply?.header('allow', 'GET, POST');
          errors.push(toGraphQLError(new GraphQLError('Only queries may be sent with GET; use POST', {
            originalError: onlyQueriesOverGet(),
          }), log));
          continue;
        }
        if (Array.isArray(nested)) {
          // Mercurius wraps document validation failures; they are the client's to fix.
          statusCode = 400;
          for (const inner of nested) {
            errors.push(toGraphQLError(new GraphQLError((inner as Error).message), log, hidden));
          }
          continue;
        }
        const formatted = toGraphQLError(error, log, hidden);
        const { headers } = formatted.extensions.http as { headers?: Record<string, string> };
        if (headers && context.reply) context.reply.headers(headers);
        // Refused before execution (rate limit, unsupported version, bad body): the
        // HTTP status says so, as REST's does. Resolver errors keep 200 with partial data.
        if (execution.data === undefined) statusCode = Math.max(statusCode, (formatted.extensions.http as { status: number }).status);
        errors.push(formatted);
      }
      return { statusCode, response: { data: execution.data ?? null, errors } };
    };

    // 32 KB less heap per open socket, and one execution of an event for all its subscribers (see the functions).
    lighterSocketMessageLoop();
    sharedSubscriptionResults();
    await app.register(mercurius, {
      schema: servedSchema(supergraph.schema, app.log),
      path: '/graphql',
      graphiql: false,
      jit: 1,
      // The policy layer measured the document already (depth, aliases, root
      // fields, cost); the token cap here also bounds mercurius' own parse of
      // socket operations.
      graphql: { parseOptions: { maxTokens: app.config.graphql.maxTokens } },
      routes: true,
      context: (request: FastifyRequest, reply: FastifyReply): GraphQLContext =>
        createContext(container, request.principal, request.meta, replyTransport(reply, secureCookies), request.graphqlRun),
      subscription: {
        // Queries and mutations work over the socket too, not only subscriptions.
        fullWsTransport: true,
        // A socket lives long: its loaders batch but remember nothing, or a row
        // remembered by one operation would be served stale to the next.
        context: (_socket, request: FastifyRequest) => ({
          container,
          meta: request.meta,
          principal: anonymous,
          loaders: new Loaders({ remember: false }),
          viaSocket: true,
          // A browser's service_token cookie on the upgrade request (from a trusted Origin).
          cookiePrincipal: socketCookiePrincipal(request, origins),
        }),
        // The credential travels in connectionParams: { authorization: "Bearer …" }, or, without
        // one, is the browser session cookie of the upgrade request.
        // A refused connection_init closes the socket with 4403, as graphql-transport-ws
        // prescribes (mercurius' `connection_error` message is not part of that protocol,
        // and its close without a code reads as a network drop that clients retry).
        // Mercurius calls onConnect as a method of the connection, which holds the socket.
        onConnect: async function (
          this: { socket?: ClosableSocket; context?: { cookiePrincipal?: Principal; meta?: { ip: string } } } | undefined,
          { payload }: { payload?: Record<string, unknown> },
        ) {
          const raw = payload?.authorization ?? payload?.Authorization;
          const ip = this?.context?.meta?.ip ?? '';
          // The company's security policy (IP allow-list, MFA enrolment) applies to sockets too.
          const resolved = typeof raw === 'string' && raw !== '' ? await access.bearer(raw, ip) : (this?.context?.cookiePrincipal ?? anonymous);
          const principal = await access.socket(resolved);
          const socket = this?.socket;
          if (principal.kind !== 'anonymous' && principal.kind !== 'module_key') {
            if (!socket) return { principal };
            const watch = liveCredentials.watch({
              principal,
              ip,
              expiresAt: typeof raw === 'string' ? access.expiresAt(raw) : null,
              end: (refusal, event) => closeRefused(socket, refusal, event),
            });
            socket.once('close', () => watch.stop());
            const live: LiveSocket = { socket, watch };
            return { principal, live };
          }
          if (socket?.readyState === 1) {
            socket.close(4403, (principal.kind === 'anonymous' && principal.credentialError?.code) || 'unauthenticated');
          }
          return false;
        },
      },
      errorFormatter,
      // An error before an operation runs (a hook's refusal): GraphQL's shape for an operation, a
      // problem for a WebSocket upgrade, which is a refusal of HTTP like any other and carries no operation.
      errorHandler: (error: Error, request: FastifyRequest, reply: FastifyReply) => {
        if (request.ws) {
          sendProblem(reply, toAppError(error), app.config.docsUrl);
          return;
        }
        const asGraphQL = error instanceof GraphQLError ? error : new GraphQLError(error.message, { originalError: error, extensions: (error as { extensions?: Record<string, unknown> }).extensions });
        const { statusCode, response } = errorFormatter({ errors: [asGraphQL] }, { reply, app } as unknown as MercuriusContext);
        reply.code(statusCode).send(response);
      },
    });

    // A socket operation has no HTTP request to admit it: it is read and admitted by the same
    // gate in mercurius' hooks, before anything of it runs (a query or mutation once parsed
    // within the token cap and validated, a subscription from its text), and a heavier one
    // waits for its turn. A refusal reaches the client as the operation's error message.
    const socketRefusal = (error: unknown, ctx: SocketContext) =>
      error instanceof AppError ? toGraphQLError(new GraphQLError(error.message, { originalError: error }), lazyChild(app.log, { reqId: ctx.meta.requestId })) : error;
    /**
     * What an HTTP request gets before its operation runs, for a socket operation: its credential
     * and company judged again (a refusal closes the socket), and one unit of the caller's request
     * budget spent (each socket operation is a request of its own; 429 when spent).
     */
    const admitSocketRequest = async (ctx: SocketContext) => {
      if (ctx.live) {
        const refusal = await ctx.live.watch.rejudge();
        if (refusal) {
          closeRefused(ctx.live.socket, refusal);
          throw refusal;
        }
      }
      app.rateLimit('default', ctx.principal, ctx.meta.ip);
    };
    // A heavier operation also runs interpreted: compiling it (graphql-jit, up to hundreds of
    // milliseconds for a large document) would hold the event loop longer than it saves, and a
    // client could make it compile document after document. Mercurius compiles only what no
    // hook changed, so the hook hands the same document back as "changed".
    app.graphql.addHook('preExecution', async (_schema, document, context, variables) => {
      const ctx = context as unknown as SocketContext;
      if (!ctx.viaSocket) return ctx.run ? { document } : undefined; // admitted by its HTTP request already
      ctx.meta = socketOperationMeta(ctx.meta);
      try {
        await admitSocketRequest(ctx);
        const operation = socketOperation(gate, gate.readDocument(document), variables);
        if (!operation) return;
        gate.admit(operation, ctx.principal, ctx.meta.ip, { spend: true, enrollment: false });
        const run = gate.scheduler.schedule(operation.cost);
        if (!run) return undefined;
        ctx.run = run;
        await run.granted;
        return { document };
      } catch (error) {
        throw socketRefusal(error, ctx);
      }
    });
    app.graphql.addHook('preSubscriptionParsing', async (_schema, source, context) => {
      const ctx = context as unknown as SocketContext;
      ctx.meta = socketOperationMeta(ctx.meta);
      try {
        await admitSocketRequest(ctx);
        // A subscription's work is per event, not up front: admitted, not scheduled.
        const operation = socketOperation(gate, gate.read(source), undefined);
        if (operation) gate.admit(operation, ctx.principal, ctx.meta.ip, { spend: true, enrollment: false });
      } catch (error) {
        throw socketRefusal(error, ctx);
      }
    });
  },
  { name: 'atrium-graphql', dependencies: ['atrium-rate-limit'] },
);

declare module 'fastify' {
  interface FastifyRequest {
    /** The turn of a heavier GraphQL operation (subgraphs/policy/scheduler.ts); unset for light ones. */
    graphqlRun?: ScheduledRun;
  }
  interface FastifyInstance {
    /** The policy layer's per-operation gate (GraphQL over HTTP and the REST adapter). */
    gate: OperationGate;
  }
}
