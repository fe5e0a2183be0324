import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import net, { type AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { build, login, seedOwner } from './helper';
import { MAX_OPERATIONS_PER_SOCKET } from '../src/host/ws-protocol';
import { CONNECTION_INIT_WAIT_MS } from '../src/host/ws-message-loop';

/**
 * The graphql-transport-ws rules a client may rely on, spoken raw over a
 * real socket (a graphql-ws client never breaks them, so it cannot test them).
 */

interface Raw {
  send(message: unknown): void;
  sendText(text: string): void;
  messages: { type: string; id?: string; payload?: unknown }[];
  closed: Promise<{ code: number; reason: string }>;
  next(type: string): Promise<{ type: string; id?: string; payload?: unknown }>;
}

async function listening(t: TestContext) {
  const app = await build(t);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  const sockets: WebSocket[] = [];
  t.after(() => sockets.forEach((s) => s.terminate()));

  async function open(): Promise<Raw> {
    const socket = new WebSocket(`ws://127.0.0.1:${port}/graphql`, 'graphql-transport-ws');
    sockets.push(socket);
    const messages: Raw['messages'] = [];
    const waiting: { type: string; resolve: (m: Raw['messages'][number]) => void }[] = [];
    socket.on('message', (data) => {
      const message = JSON.parse(String(data)) as Raw['messages'][number];
      messages.push(message);
      const i = waiting.findIndex((w) => w.type === message.type);
      if (i >= 0) {
        (message as { taken?: true }).taken = true;
        waiting.splice(i, 1)[0]!.resolve(message);
      }
    });
    const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.on('close', (code, reason) => resolve({ code, reason: String(reason) })));
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    return {
      send: (message) => socket.send(JSON.stringify(message)),
      sendText: (text) => socket.send(text),
      messages,
      closed,
      next: (type) =>
        new Promise((resolve) => {
          const seen = messages.find((m) => m.type === type && !(m as { taken?: true }).taken);
          if (seen) {
            (seen as { taken?: true }).taken = true;
            return resolve(seen);
          }
          waiting.push({ type, resolve });
        }),
    };
  }

  async function acknowledged(): Promise<Raw> {
    const raw = await open();
    raw.send({ type: 'connection_init', payload: { authorization: `Bearer ${access_token}` } });
    await raw.next('connection_ack');
    return raw;
  }
  return { app, open, acknowledged };
}

test('graphql-transport-ws: a message that is not one closes 4400; subscribe before the ack 4401; a second init 4429; a running id reused 4409', async (t) => {
  const { open, acknowledged } = await listening(t);

  for (const bad of ['not json', 'null', '[]', '{"type":"unknown"}', '{"id":"1"}']) {
    const raw = await open();
    raw.sendText(bad);
    assert.deepEqual(await raw.closed, { code: 4400, reason: 'Invalid message received' }, bad);
  }
  const noId = await acknowledged();
  noId.send({ type: 'subscribe', payload: { query: '{ health { status } }' } });
  assert.equal((await noId.closed).code, 4400);
  const noPayload = await acknowledged();
  noPayload.send({ type: 'subscribe', id: '1' });
  assert.equal((await noPayload.closed).code, 4400);

  const badName = await acknowledged();
  badName.send({ type: 'subscribe', id: '1', payload: { query: '{ me { role } }', operationName: 5 } });
  assert.equal((await badName.closed).code, 4400);

  const early = await open();
  early.send({ type: 'subscribe', id: '1', payload: { query: 'subscription { auditEvents { action } }' } });
  assert.deepEqual(await early.closed, { code: 4401, reason: 'Unauthorized' });

  const twice = await acknowledged();
  twice.send({ type: 'connection_init', payload: {} });
  assert.deepEqual(await twice.closed, { code: 4429, reason: 'Too many initialisation requests' });

  const duplicate = await acknowledged();
  duplicate.send({ type: 'subscribe', id: 'audit', payload: { query: 'subscription { auditEvents { action } }' } });
  duplicate.send({ type: 'subscribe', id: 'audit', payload: { query: 'subscription { auditEvents { action } }' } });
  assert.deepEqual(await duplicate.closed, { code: 4409, reason: 'Subscriber for audit already exists' });

  // A completed id may be used again; so may the id of a finished query.
  const reuse = await acknowledged();
  reuse.send({ type: 'subscribe', id: 'q', payload: { query: '{ health { status } }' } });
  await reuse.next('complete');
  reuse.send({ type: 'subscribe', id: 'q', payload: { query: '{ health { status } }' } });
  await reuse.next('complete');
  reuse.send({ type: 'subscribe', id: 's', payload: { query: 'subscription { auditEvents { action } }' } });
  reuse.send({ type: 'complete', id: 's' });
  reuse.send({ type: 'subscribe', id: 's', payload: { query: 'subscription { auditEvents { action } }' } });
  reuse.send({ type: 'subscribe', id: 'after', payload: { query: '{ health { status } }' } });
  while ((await reuse.next('next')).id !== 'after');
  assert.equal(reuse.messages.some((m) => m.type === 'error'), false, JSON.stringify(reuse.messages));
  assert.equal(reuse.messages.filter((m) => m.type === 'complete' && m.id === 'q').length, 2);
});

test('a subscription document is validated before anything runs: unknown fields, two root fields, an unchosen operation are errors (bad_request), and the socket stays usable', async (t) => {
  const { acknowledged } = await listening(t);
  const raw = await acknowledged();
  const cases: [string, string | undefined, RegExp][] = [
    ['subscription { auditEvents { nope } }', undefined, /Cannot query field "nope"/],
    ['subscription { creditsChanged(bogus: 1) { available } }', undefined, /Unknown argument "bogus"/],
    ['subscription { companyJobProgress { kind } auditEvents { id action } }', undefined, /must select only one top level field/],
    ['subscription A { auditEvents { action } } subscription B { auditEvents { id } }', undefined, /several operations: name one in operationName/],
    ['subscription A { auditEvents { action } }', 'Missing', /no operation named Missing/],
    // The spec's Single Root Field rule (graphql-js threw on the variable, and the socket closed).
    ['subscription($s: Boolean!) { companyJobProgress @include(if: $s) { kind } }', undefined, /may not put @skip or @include on its root field/],
    ['subscription { auditEvents @skip(if: true) { action } }', undefined, /may not put @skip or @include on its root field/],
    ['subscription { ...Root } fragment Root on Subscription { auditEvents @include(if: false) { action } }', undefined, /may not put @skip or @include/],
    // A query's validation failure names its reason, as POST /graphql does (mercurius said only "Graphql validation error").
    ['{ me { rol } }', undefined, /Cannot query field "rol"/],
  ];
  let n = 0;
  for (const [query, operationName, message] of cases) {
    const id = `bad-${n++}`;
    raw.send({ type: 'subscribe', id, payload: { query, variables: { s: true }, ...(operationName ? { operationName } : {}) } });
    const error = await raw.next('error');
    assert.equal(error.id, id);
    const errors = error.payload as { message: string; extensions: { code: string; http: { status: number } } }[];
    assert.match(errors[0]!.message, message, query);
    assert.equal(errors[0]!.extensions.code, 'bad_request');
    assert.equal(errors[0]!.extensions.http.status, 400);
  }
  // Still open, and a valid operation runs.
  raw.send({ type: 'subscribe', id: 'ok', payload: { query: '{ health { status } }' } });
  const ok = await raw.next('next');
  assert.equal(ok.id, 'ok');
  assert.deepEqual(ok.payload, { data: { health: { status: 'ok' } } });
});

test('variables that do not fit the operation (a required one missing, a wrong type) are an error with bad_request on the socket, for a subscription as for a query, and nothing runs', async (t) => {
  const { acknowledged } = await listening(t);
  const raw = await acknowledged();
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['subscription($id: ID!) { jobProgress(id: $id) { jobId } }', {}, /Variable "\$id" of required type "ID!" was not provided/],
    ['subscription($id: ID!) { jobProgress(id: $id) { jobId } }', { id: null }, /Variable "\$id" of non-null type "ID!" must not be null/],
    ['subscription($id: ID!) { jobProgress(id: $id) { jobId } }', { id: { a: 1 } }, /Variable "\$id" got invalid value/],
    ['query($page: Int!) { researchJobs(page: $page) { total } }', {}, /Variable "\$page" of required type "Int!" was not provided/],
  ];
  let n = 0;
  for (const [query, variables, message] of cases) {
    const id = `var-${n++}`;
    raw.send({ type: 'subscribe', id, payload: { query, variables } });
    const error = await raw.next('error');
    assert.equal(error.id, id);
    const errors = error.payload as { message: string; extensions?: { code: string; http: { status: number } } }[];
    assert.match(errors[0]!.message, message, query);
    assert.equal(errors[0]!.extensions?.code, 'bad_request', JSON.stringify(errors));
    assert.equal(errors[0]!.extensions?.http.status, 400);
  }
  // The socket stays usable.
  raw.send({ type: 'subscribe', id: 'ok', payload: { query: '{ health { status } }' } });
  assert.equal((await raw.next('next')).id, 'ok');
});

test(`a socket runs at most ${MAX_OPERATIONS_PER_SOCKET} operations at once: one more is an error (rate_limited), and completing one frees a place`, async (t) => {
  const { acknowledged } = await listening(t);
  const raw = await acknowledged();
  for (let i = 0; i < MAX_OPERATIONS_PER_SOCKET; i++) raw.send({ type: 'subscribe', id: `s${i}`, payload: { query: 'subscription { auditEvents { action } }' } });
  raw.send({ type: 'subscribe', id: 'one-more', payload: { query: 'subscription { auditEvents { action } }' } });
  const refused = await raw.next('error');
  assert.equal(refused.id, 'one-more');
  assert.equal((refused.payload as { extensions: { code: string } }[])[0]!.extensions.code, 'rate_limited');
  raw.send({ type: 'complete', id: 's0' });
  raw.send({ type: 'subscribe', id: 'now', payload: { query: '{ health { status } }' } });
  const now = await raw.next('next');
  assert.equal(now.id, 'now');
});

test('an upgrade refused before it is accepted (429) has its socket closed by the server, not left open', async (t) => {
  const app = await build(t, { rateLimit: { windowSeconds: 60, authenticated: 1000, moduleKey: 1000, anonymous: 1, auth: 1000, feedback: 1000 } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  // The server's side of every upgrade, to see whether it is closed (and to close what is not, so the app can).
  const serverSides: net.Socket[] = [];
  app.server.on('upgrade', (_request: unknown, socket: net.Socket) => serverSides.push(socket));
  // As a WebSocket client does on a refusal: read the status line, then drop the connection.
  const upgrade = () =>
    new Promise<string>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('data', (chunk) => {
        resolve(String(chunk).split('\r\n')[0]!);
        socket.destroy();
      });
      socket.write(
        'GET /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
          'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n',
      );
    });
  assert.match(await upgrade(), / 101 /);
  for (let i = 0; i < 5; i++) assert.match(await upgrade(), / 429 /);
  // Left open (CLOSE-WAIT), each held a file descriptor for good and kept the server from closing on SIGTERM.
  const deadline = Date.now() + 3000;
  while (serverSides.slice(1).some((socket) => !socket.destroyed) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  const refusedClosed = serverSides.slice(1).map((socket) => socket.destroyed);
  // Whatever is still open is closed here, before the app's own close (which would wait for it).
  serverSides.forEach((socket) => socket.destroy());
  assert.equal(serverSides.length, 6);
  assert.deepEqual(refusedClosed, [true, true, true, true, true]);
});

test(`a socket that sends no connection_init is closed 4408 after ${CONNECTION_INIT_WAIT_MS} ms; an acknowledged one stays open`, async (t) => {
  const { open, acknowledged } = await listening(t);
  const started = Date.now();
  const silent = await open();
  const ready = await acknowledged();
  assert.deepEqual(await silent.closed, { code: 4408, reason: 'Connection initialisation timeout' });
  const waited = Date.now() - started;
  assert.ok(waited >= CONNECTION_INIT_WAIT_MS - 100 && waited < CONNECTION_INIT_WAIT_MS + 2000, `closed after ${waited} ms`);
  await new Promise((resolve) => setTimeout(resolve, 500));
  ready.send({ type: 'ping' });
  await ready.next('pong');
});
