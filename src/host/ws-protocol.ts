import { getOperationAST, getVariableValues, GraphQLError, Kind, specifiedRules, validate, type DocumentNode, type GraphQLSchema, type SelectionSetNode } from 'graphql';
import { AppError } from '../errors/catalog';
import type { ServerSideLog } from '../errors/server-side-log';
import { anonymous, type Principal } from '../auth/principal';
import { toGraphQLError } from '../../subgraphs/errors';
import type { OperationGate } from '../../subgraphs/policy/gate';

/**
 * The one WebSocket subprotocol /graphql speaks (what graphql-ws clients send). mercurius also
 * serves the legacy subscriptions-transport-ws protocol (`graphql-ws`), whose messages none of
 * the rules below would screen: an upgrade that does not offer this one is refused (400).
 */
export const GRAPHQL_TRANSPORT_WS = 'graphql-transport-ws';

/** Whether an upgrade's Sec-WebSocket-Protocol offers GRAPHQL_TRANSPORT_WS. */
export const offersGraphQLTransportWs = (header: string | undefined): boolean =>
  header !== undefined && header.split(',').some((offered) => offered.trim() === GRAPHQL_TRANSPORT_WS);

/** graphql-transport-ws close codes (the protocol's, as graphql-ws clients read them). */
export const WS_CLOSE = { invalidMessage: 4400, unauthorized: 4401, initTimeout: 4408, duplicateId: 4409, tooManyInits: 4429 } as const;

/**
 * A message payload serialised already (JSON text): one result written to many sockets
 * (./shared-subscriptions.ts). The screen's send writes it as it is.
 */
export class SerializedPayload {
  constructor(readonly json: string) {}
}

/** The part of mercurius' (internal) SubscriptionConnection the screen uses. */
export interface ScreenedConnection {
  socket: { readyState?: number; close(code: number, reason?: string): void; send(data: string, callback: (error?: Error) => void): void };
  handleConnectionClose(): void;
  isReady: boolean;
  /** The connection's context, holding its caller once connection_init was accepted. */
  context?: { principal?: Principal };
  fastify: { gate: OperationGate; graphql: { schema: GraphQLSchema }; log: ServerSideLog };
  sendMessage(type: string, id: string | undefined, payload: unknown): Promise<void>;
  /** Each running subscription's iterator by its id, set once its admission and `subscribe()` are done. */
  subscriptionIters: Map<string, { return?(): unknown }>;
}

/**
 * mercurius knows each operation by an id of the screen's (`<n>:<client's id>`), never by the
 * client's own: a client may use an id again the moment it completed it, while mercurius may
 * still be admitting or ending the first operation of that id.
 */
interface ProtocolState {
  initialised: boolean;
  /** The client's id of each operation running, with mercurius' id of it: a second `subscribe` with one of these is 4409. */
  running: Map<string, string>;
  /** mercurius' id of each operation not yet ended (its last `complete` or `error` not sent), with the client's. */
  clientIds: Map<string, string>;
  sequence: number;
  /** The connection's own send, unfiltered: the screen's answer to a `subscribe` it refuses. */
  send: ScreenedConnection['sendMessage'];
}

const STATE = Symbol('atrium.wsProtocolState');
/** Operations one socket may have running at once (subscriptions, mostly): each holds a listener and a queue. */
export const MAX_OPERATIONS_PER_SOCKET = 100;
const CLIENT_TYPES = new Set(['connection_init', 'ping', 'pong', 'subscribe', 'complete']);

/** Validation answers of subscription documents recently seen, by text (the same few repeat). */
const validated = new Map<string, readonly GraphQLError[]>();
const MAX_VALIDATED = 1000;
const MAX_VALIDATED_TEXT = 16 * 1024;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The graphql-transport-ws rules mercurius leaves out, checked on every
 * message of a socket before mercurius reads it:
 * - a message that is not a JSON object of a client message type, a
 *   `subscribe` without an id or a query: close 4400;
 * - `subscribe` before the connection is acknowledged: close 4401;
 * - a second `connection_init`: close 4429;
 * - `subscribe` with the id of an operation still running: close 4409;
 * - a `subscribe` past MAX_OPERATIONS_PER_SOCKET running: an `error`
 *   message (429 rate_limited), and nothing runs;
 * - every document is read by the gate (token cap, depth, cost) and
 *   validated against the schema as POST /graphql validates it: unknown
 *   fields, a second root field of a subscription or @skip/@include on it,
 *   an operation that cannot be chosen, variables that do not fit the
 *   operation's definitions (a required one missing, a wrong type) get an
 *   `error` message with each issue (400 bad_request), and nothing runs.
 * Answers the message mercurius should handle (a `subscribe` or `complete` under mercurius' id
 * of the operation), or null when nothing of it reaches mercurius.
 */
export async function screenMessage(connection: ScreenedConnection, message: Buffer, isBinary: boolean): Promise<Buffer | string | null> {
  const state = stateOf(connection);
  const refuse = (code: number, reason: string) => {
    connection.socket.close(code, reason);
    return null;
  };
  let data: unknown;
  try {
    data = isBinary ? undefined : JSON.parse(message.toString('utf8'));
  } catch {
    data = undefined;
  }
  if (!isObject(data) || typeof data.type !== 'string' || !CLIENT_TYPES.has(data.type)) return refuse(WS_CLOSE.invalidMessage, 'Invalid message received');
  const { type, id, payload } = data;
  if (type === 'connection_init') {
    if (state.initialised) return refuse(WS_CLOSE.tooManyInits, 'Too many initialisation requests');
    if (payload !== undefined && payload !== null && !isObject(payload)) return refuse(WS_CLOSE.invalidMessage, 'Invalid message received');
    state.initialised = true;
    return message;
  }
  if (type === 'complete') {
    if (typeof id !== 'string') return refuse(WS_CLOSE.invalidMessage, 'Invalid message received');
    const operation = state.running.get(id);
    // An operation that ended already (or never was) has nothing to stop.
    if (operation === undefined) return null;
    state.running.delete(id);
    return JSON.stringify({ type, id: operation });
  }
  if (type !== 'subscribe') return message;
  if (
    typeof id !== 'string' ||
    id === '' ||
    !isObject(payload) ||
    typeof payload.query !== 'string' ||
    (payload.operationName !== undefined && payload.operationName !== null && typeof payload.operationName !== 'string') ||
    (payload.variables !== undefined && payload.variables !== null && !isObject(payload.variables))
  ) {
    return refuse(WS_CLOSE.invalidMessage, 'Invalid message received');
  }
  if (!connection.isReady) return refuse(WS_CLOSE.unauthorized, 'Unauthorized');
  if (state.running.has(id)) return refuse(WS_CLOSE.duplicateId, `Subscriber for ${id} already exists`);
  const operationName = typeof payload.operationName === 'string' ? payload.operationName : undefined;
  // Operations the client completed count until they have ended: each holds its listener until then.
  const errors =
    state.clientIds.size >= MAX_OPERATIONS_PER_SOCKET
      ? [refusal(new AppError('rate_limited', `At most ${MAX_OPERATIONS_PER_SOCKET} operations may run at once on one socket; complete one first`))]
      : documentErrors(connection, payload.query, operationName, isObject(payload.variables) ? payload.variables : {});
  if (errors.length) {
    const log = connection.fastify.log;
    const hidden = { hideSchema: !connection.fastify.gate.mayIntrospect(connection.context?.principal ?? anonymous) };
    await state.send('error', id, errors.map((error) => toGraphQLError(error, log, hidden).toJSON()));
    return null;
  }
  const operation = `${++state.sequence}:${id}`;
  state.running.set(id, operation);
  state.clientIds.set(operation, id);
  return JSON.stringify({ ...data, id: operation });
}

/** What is wrong with a document before anything of it runs; empty when mercurius may go on. */
function documentErrors(connection: ScreenedConnection, query: string, operationName: string | undefined, variables: Record<string, unknown>): readonly GraphQLError[] {
  const { gate, graphql } = connection.fastify;
  let read;
  try {
    read = gate.read(query);
  } catch (error) {
    if (error instanceof AppError) return [refusal(error)];
    throw error;
  }
  const operation = operationName ? read.operations.find((o) => o.name === operationName) : read.operations.length === 1 ? read.operations[0] : undefined;
  if (!operation) {
    const detail = operationName ? `The document has no operation named ${operationName}` : 'The document has several operations: name one in operationName';
    return [refusal(new AppError('bad_request', detail))];
  }
  // Mercurius runs subscriptions unvalidated, and answers a query's validation failure without its reasons:
  // every document is validated here, as POST /graphql validates it.
  let errors = validated.get(query);
  if (!errors) {
    errors = validation(graphql.schema, read.document);
    if (query.length <= MAX_VALIDATED_TEXT) {
      if (validated.size >= MAX_VALIDATED) validated.clear();
      validated.set(query, errors);
    }
  }
  if (errors.length) return errors;
  // Variables are coerced by graphql-js when the operation executes, and mercurius sends a subscription's
  // coercion errors as they are (no code): checked here, so they are bad_request like the document's issues.
  const definition = getOperationAST(read.document, operationName);
  if (!definition?.variableDefinitions?.length) return errors;
  const coercion = getVariableValues(graphql.schema, definition.variableDefinitions, variables, { maxErrors: 50 }).errors ?? [];
  // A scalar's own parse error is the client's value, not a server fault: kept only when it is one of the catalog's.
  return coercion.map((error) => (error.originalError instanceof AppError ? error : new GraphQLError(error.message, { nodes: error.nodes })));
}

function validation(schema: GraphQLSchema, document: DocumentNode): readonly GraphQLError[] {
  // The spec's Single Root Field rule: a subscription's root field is never left to @skip or @include
  // (graphql-js 16 evaluates them while validating, and throws on a variable).
  for (const definition of document.definitions) {
    if (definition.kind === Kind.OPERATION_DEFINITION && definition.operation === 'subscription' && conditionalRoot(document, definition.selectionSet, new Set())) {
      return [refusal(new AppError('bad_request', 'A subscription may not put @skip or @include on its root field'))];
    }
  }
  try {
    return validate(schema, document, specifiedRules, { maxErrors: 100 });
  } catch (error) {
    return [refusal(new AppError('bad_request', (error as Error).message))];
  }
}

/** Whether a root selection (through inline fragments and fragment spreads) carries @skip or @include. */
function conditionalRoot(document: DocumentNode, set: SelectionSetNode, seen: Set<string>): boolean {
  for (const selection of set.selections) {
    if (selection.directives?.some((d) => d.name.value === 'skip' || d.name.value === 'include')) return true;
    if (selection.kind === Kind.INLINE_FRAGMENT && conditionalRoot(document, selection.selectionSet, seen)) return true;
    if (selection.kind === Kind.FRAGMENT_SPREAD && !seen.has(selection.name.value)) {
      seen.add(selection.name.value);
      const fragment = document.definitions.find((d) => d.kind === Kind.FRAGMENT_DEFINITION && d.name.value === selection.name.value);
      if (fragment?.kind === Kind.FRAGMENT_DEFINITION && conditionalRoot(document, fragment.selectionSet, seen)) return true;
    }
  }
  return false;
}

/** What mercurius' sendMessage does, with the payload's JSON as it is: a failed write closes the connection. */
function sendSerialized(connection: ScreenedConnection, type: string, id: string, payload: SerializedPayload): Promise<void> {
  return new Promise((resolve) => {
    const failed = () => {
      connection.handleConnectionClose();
      resolve();
    };
    try {
      connection.socket.send(`{"type":${JSON.stringify(type)},"id":${JSON.stringify(id)},"payload":${payload.json}}`, (error) => (error ? failed() : resolve()));
    } catch {
      failed();
    }
  });
}

const refusal = (error: AppError) => new GraphQLError(error.message, { originalError: error });

function stateOf(connection: ScreenedConnection): ProtocolState {
  const holder = connection as ScreenedConnection & { [STATE]?: ProtocolState };
  let state = holder[STATE];
  if (!state) {
    const send = connection.sendMessage.bind(connection);
    const fresh: ProtocolState = { initialised: false, running: new Map(), clientIds: new Map(), sequence: 0, send };
    // The client completed it, and it has not ended yet: its client id no longer names it.
    const stoppedByClient = (operation: string) => {
      const id = fresh.clientIds.get(operation);
      return id !== undefined && fresh.running.get(id) !== operation;
    };
    connection.sendMessage = (type, operation, payload) => {
      if (operation === undefined) return send(type, operation, payload);
      const id = fresh.clientIds.get(operation);
      const stopped = stoppedByClient(operation);
      if (type === 'complete' || type === 'error') {
        // Its last message: the operation has ended, and its id may be used again (one the client completed is free already).
        fresh.clientIds.delete(operation);
        if (!stopped && id !== undefined) fresh.running.delete(id);
      }
      // The client completed it: its `complete` needs no answer, and no result of it is sent, a query's
      // included (graphql-transport-ws).
      if (id === undefined || stopped) return Promise.resolve();
      if (payload instanceof SerializedPayload) return sendSerialized(connection, type, id, payload);
      // A `complete` carries no payload in graphql-transport-ws (mercurius sends `null`).
      return send(type, id, type === 'complete' ? undefined : payload);
    };
    // A client may complete a subscription while mercurius still admits it: its iterator, set only once
    // `subscribe()` answered, would then run (and hold its listener) until the socket closed. Ended at once.
    const iterators = connection.subscriptionIters;
    const set = iterators.set.bind(iterators);
    iterators.set = (operation, iterator) => {
      if (stoppedByClient(operation)) void iterator.return?.();
      return set(operation, iterator);
    };
    holder[STATE] = state = fresh;
  }
  return state;
}
