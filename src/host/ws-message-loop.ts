import { createRequire } from 'node:module';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { runInUnitOfWork } from '../db/unit-of-work';
import { screenMessage, WS_CLOSE, type ScreenedConnection } from './ws-protocol';

/** The part of mercurius' (internal) SubscriptionConnection the replacement loop uses. */
interface SubscriptionConnection {
  socket: {
    on(event: 'message', listener: (message: Buffer, isBinary: boolean) => void): unknown;
    once(event: 'close', listener: () => void): unknown;
    close(code: number, reason: string): void;
  };
  /** Set by mercurius once connection_init was accepted. */
  isReady: boolean;
  fastify: FastifyInstance;
  /** The connection's context; `request` is the upgrade request. */
  context: { request?: { log: FastifyBaseLogger } };
  handleMessage(message: Buffer | string, isBinary: boolean): Promise<void>;
  handleConnectionClose(): void;
  handleConnection(): Promise<void>;
}

const load = createRequire(__filename);

/**
 * How long a socket may stay open without an accepted `connection_init`
 * (graphql-ws' own default): past it, close 4408. Without it a socket that
 * never says anything stayed open for good, each one holding a descriptor
 * and its address's anonymous budget.
 */
export const CONNECTION_INIT_WAIT_MS = 3_000;
const REPLACED = Symbol('atrium.lighterSocketMessageLoop');

/**
 * mercurius reads each graphql-ws socket with `for await (… of
 * events.on(socket, 'message'))`, and every `events.on` iterator allocates
 * two 2,048-slot queues: 32 KB of heap per open socket, more than half of
 * what a subscriber cost (57 of 58 KB measured with 2,000 sockets; 22 KB
 * after). This replaces that loop with a listener that handles the
 * socket's messages one after another, as the loop did (a `connection_init`
 * is settled before the `subscribe` sent right behind it), and closes the
 * connection on a failed message, as the loop did. Each message runs in a
 * unit of work of its own (src/db/unit-of-work.ts): a listener runs in no
 * async context of the upgrade request, and without one a mutation's
 * changes and its audit entry would land in separate forks (the changes
 * lost). Each message is first screened for the graphql-transport-ws rules
 * mercurius leaves out (./ws-protocol.ts). What mercurius logs of the
 * connection goes to the upgrade request's logger, under its request id.
 *
 * The replacement is applied only to the method it was written against:
 * another mercurius version keeps its own loop (correct, only heavier), and
 * test/ws-message-loop.test.ts fails so that the upgrade looks again.
 * Answers whether the lighter loop is in place.
 */
export function lighterSocketMessageLoop(): boolean {
  const Connection = load('mercurius/lib/subscription-connection') as { prototype: SubscriptionConnection & { [REPLACED]?: true } };
  const proto = Connection.prototype;
  if (proto[REPLACED]) return true;
  if (!proto.handleConnection.toString().includes("on(this.socket, 'message')")) return false;
  proto.handleConnection = function (this: SubscriptionConnection): Promise<void> {
    const orm = this.fastify.kernel.orm;
    // mercurius writes the connection's lines (a refused subscription's among them) to `this.fastify.log`:
    // the upgrade request's logger instead, so they carry its request id as the request's other lines do.
    const request = this.context.request;
    if (request) this.fastify = Object.create(this.fastify, { log: { value: request.log } }) as FastifyInstance;
    const initWait = setTimeout(() => {
      if (!this.isReady) this.socket.close(WS_CLOSE.initTimeout, 'Connection initialisation timeout');
    }, CONNECTION_INIT_WAIT_MS);
    this.socket.once('close', () => clearTimeout(initWait));
    let turn = Promise.resolve();
    this.socket.on('message', (message, isBinary) => {
      turn = turn
        .then(async () => {
          const screened = await screenMessage(this as unknown as ScreenedConnection, message, isBinary);
          if (screened !== null) await runInUnitOfWork(orm, () => this.handleMessage(screened, isBinary));
        })
        .catch((error: unknown) => {
          this.fastify.log.error(error);
          this.handleConnectionClose();
        });
    });
    return turn;
  };
  proto[REPLACED] = true;
  return true;
}
