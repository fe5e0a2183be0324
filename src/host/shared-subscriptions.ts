import { createRequire } from 'node:module';
import { createSourceEventStream, execute, getOperationAST, Kind, type DocumentNode, type ExecutionResult, type GraphQLSchema } from 'graphql';
import type { FastifyBaseLogger } from 'fastify';
import { sharesResults } from '../../subgraphs/shared-results';
import { SerializedPayload } from './ws-protocol';

interface SubscriptionArgs {
  document: DocumentNode;
  query: unknown;
  context: Record<string, unknown> & { request: { headers: Record<string, unknown> } };
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
  id: string;
}

/** The part of mercurius' (internal) SubscriptionConnection the shared path uses. */
interface SubscriptionConnection {
  socket: { readyState: number };
  fastify: { graphql: { schema: GraphQLSchema }; log: FastifyBaseLogger } & Record<symbol, unknown>;
  /** The connection's options: its hooks among them. */
  context: Record<string, unknown>;
  queryDepthLimit?: number;
  headers: Record<string, unknown>;
  resolverContext: unknown;
  protocolMessageTypes: { GQL_DATA: string; GQL_COMPLETE: string };
  subscriptionIters: Map<string, { return?(): unknown }>;
  errorFormatter(execution: ExecutionResult, context: unknown): { response: unknown };
  sendMessage(type: string, id: string, payload: unknown): Promise<void>;
  handleGQLComplete(id: string): void;
  _executeSubscription(args: SubscriptionArgs): Promise<void>;
}

const load = createRequire(__filename);
const REPLACED = Symbol('atrium.sharedSubscriptionResults');
const OPEN = 1;

/**
 * One execution and one serialisation of an event per operation, shared by
 * every subscriber of a field declared `@SharedResults()`
 * (subgraphs/shared-results.ts). mercurius runs graphql-js' `subscribe` per
 * subscriber, so each event was executed, serialised and its promises and
 * objects collected once per socket: with 10,000 dashboards of the company's
 * jobs, about 70 µs of one core per subscriber and event against the 25 µs
 * the socket write itself costs (bench/README.md). Here the subscriber's
 * source stream is made as graphql-js makes it (`createSourceEventStream`:
 * the field's own `subscribe` decides which events reach this subscriber),
 * each event is executed once per operation (document, operation name,
 * variables) and the result's JSON is kept with the event, and each socket
 * only writes it under its operation's id. An event whose execution has
 * errors is executed and formatted per subscriber, as before.
 *
 * Everything else of mercurius' method is kept: the preSubscriptionParsing
 * hook (Atrium's admission of the operation), the connection's headers, the
 * checks for a socket closed meanwhile, the complete at the end. A
 * connection configured with what the shared path leaves out (a query depth
 * limit, other subscription hooks, mercurius loaders) and every other field
 * keep mercurius' own method. Applied only to the method it was written
 * against: test/shared-subscriptions.test.ts fails on another mercurius so
 * that an upgrade looks again. Answers whether the shared path is in place.
 */
export function sharedSubscriptionResults(): boolean {
  const Connection = load('mercurius/lib/subscription-connection') as { prototype: SubscriptionConnection & { [REPLACED]?: true } };
  const proto = Connection.prototype;
  if (proto[REPLACED]) return true;
  const original = proto._executeSubscription;
  const source = original.toString();
  if (!source.includes('const subIter = await subscribe({') || !source.includes('for await (const value of subIter)')) return false;
  const { preSubscriptionParsingHandler } = load('mercurius/lib/handlers') as {
    preSubscriptionParsingHandler(request: { schema: GraphQLSchema; source: string; context: unknown; id: string }): Promise<void>;
  };
  const { kSubscriptionFactory } = load('mercurius/lib/symbols') as { kSubscriptionFactory: symbol };

  proto._executeSubscription = async function (this: SubscriptionConnection, args: SubscriptionArgs): Promise<void> {
    const schema = this.fastify.graphql.schema;
    const hooks = this.context;
    if (
      typeof args.query !== 'string' ||
      !sharedRootField(schema, args.document, args.operationName) ||
      this.queryDepthLimit ||
      hooks.preSubscriptionExecution != null ||
      hooks.onSubscriptionResolution != null ||
      this.fastify[kSubscriptionFactory]
    ) {
      return original.call(this, args);
    }
    const { document, query, context, id } = args;
    const variables = args.variables ?? undefined;
    const operationName = args.operationName ?? undefined;
    this.resolverContext = context;
    if (hooks.preSubscriptionParsing != null) await preSubscriptionParsingHandler({ schema, source: query, context, id });
    for (const [key, value] of Object.entries(this.headers)) {
      // As mercurius: a header of connection_init never overrides the upgrade request's own.
      if (context.request.headers[key] === undefined) context.request.headers[key] = value;
    }
    const contextValue = { ...context, id, reply: { request: context.request } };
    const stream = await createSourceEventStream({ schema, document, rootValue: {}, contextValue, variableValues: variables, operationName });
    if (!(Symbol.asyncIterator in stream)) {
      this.fastify.log.error(stream.errors);
      throw stream.errors![0];
    }
    const events = stream[Symbol.asyncIterator]();
    // Closed while subscribing: handleConnectionClose() ran before the stream could be known.
    if (this.socket.readyState !== OPEN) {
      void events.return?.();
      return;
    }
    this.subscriptionIters.set(id, events);
    const operation = `${operationName ?? ''}\n${JSON.stringify(variables ?? null)}\n${query}`;
    const run = (event: unknown) => execute({ schema, document, rootValue: event, contextValue, variableValues: variables, operationName });
    try {
      for (let next = await events.next(); !next.done; next = await events.next()) {
        const shared = await sharedResult(next.value, operation, run);
        if (shared) await this.sendMessage(this.protocolMessageTypes.GQL_DATA, id, shared);
        else await this.sendMessage(this.protocolMessageTypes.GQL_DATA, id, this.errorFormatter(await run(next.value), this.context).response);
      }
    } catch (error) {
      // As a `for await` would: the source lets go.
      void events.return?.();
      throw error;
    }
    await this.sendMessage(this.protocolMessageTypes.GQL_COMPLETE, id, null);
    this.handleGQLComplete(id);
  };
  proto[REPLACED] = true;
  return true;
}

/** Whether the operation's one root field is a subscription field declared `@SharedResults()`. */
function sharedRootField(schema: GraphQLSchema, document: DocumentNode, operationName: string | null | undefined): boolean {
  const operation = getOperationAST(document, operationName);
  const selections = operation?.selectionSet.selections;
  // A root field behind a fragment keeps mercurius' path: rare, and nothing is lost.
  if (operation?.operation !== 'subscription' || selections?.length !== 1 || selections[0]!.kind !== Kind.FIELD) return false;
  const field = schema.getSubscriptionType()?.getFields()[selections[0]!.name.value];
  return field !== undefined && sharesResults(field);
}

/** Each event's serialised result by operation, while the event lives (its subscribers' queues hold it). */
const results = new WeakMap<object, Map<string, Promise<SerializedPayload | null>>>();

/** The event's result for `operation`, serialised, executed by its first subscriber; null when it has errors. */
function sharedResult(event: unknown, operation: string, run: (event: unknown) => ExecutionResult | Promise<ExecutionResult>): Promise<SerializedPayload | null> {
  if (typeof event !== 'object' || event === null) return serialised(run(event));
  let byOperation = results.get(event);
  if (!byOperation) results.set(event, (byOperation = new Map()));
  let result = byOperation.get(operation);
  if (!result) byOperation.set(operation, (result = serialised(run(event))));
  return result;
}

async function serialised(execution: ExecutionResult | Promise<ExecutionResult>): Promise<SerializedPayload | null> {
  const result = await execution;
  // An error is formatted for each subscriber (what it shows may depend on who asks).
  return result.errors?.length ? null : new SerializedPayload(JSON.stringify(result));
}
