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
  return { app, open, acknowledged, email: owner.email };
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

test('an upgrade refused before it is accepted (429) is answered with a problem and has its socket closed by the server, not left open', async (t) => {
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
        resolve(String(chunk));
        socket.destroy();
      });
      socket.write(
        'GET /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
          'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n',
      );
    });
  assert.match(await upgrade(), /^HTTP\/1\.1 101 /);
  for (let i = 0; i < 5; i++) {
    const refused = await upgrade();
    assert.match(refused, /^HTTP\/1\.1 429 /);
    // A refusal of HTTP like any other: RFC 9457, not an operation's GraphQL-shaped errors.
    assert.match(refused, /\r\ncontent-type: application\/problem\+json/i);
    assert.match(refused, /"code":"rate_limited"/);
    assert.doesNotMatch(refused, /"errors"/);
  }
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

test("a client's complete gets no answer: nothing more of the operation is sent, and a complete carries no payload", async (t) => {
  const { acknowledged } = await listening(t);
  const raw = await acknowledged();
  raw.send({ type: 'subscribe', id: 's', payload: { query: 'subscription { auditEvents { action } }' } });
  raw.send({ type: 'complete', id: 's' });
  // The id is free again at once, and the new operation under it gets its own answer and complete.
  raw.send({ type: 'subscribe', id: 's', payload: { query: '{ health { status } }' } });
  assert.equal((await raw.next('next')).id, 's');
  assert.equal((await raw.next('complete')).id, 's');
  raw.send({ type: 'subscribe', id: 'after', payload: { query: '{ health { status } }' } });
  const done = await raw.next('complete');
  assert.equal(done.id, 'after');
  assert.equal('payload' in done, false);
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.deepEqual(
    raw.messages.filter((m) => m.id === 's').map((m) => m.type),
    ['next', 'complete'],
    JSON.stringify(raw.messages),
  );
});

test('an upgrade that does not offer graphql-transport-ws (the legacy graphql-ws protocol, or none) is refused 400 with a problem; offered among others it is chosen', async (t) => {
  const { app } = await listening(t);
  const { port } = app.server.address() as AddressInfo;
  const refusal = (protocols: string[]) =>
    new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
      const socket = protocols.length ? new WebSocket(`ws://127.0.0.1:${port}/graphql`, protocols) : new WebSocket(`ws://127.0.0.1:${port}/graphql`);
      socket.once('open', () => reject(new Error(`accepted ${socket.protocol}`)));
      socket.once('error', () => undefined);
      socket.once('unexpected-response', (_request, response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += String(chunk)));
        response.on('end', () => resolve({ status: response.statusCode!, type: String(response.headers['content-type']), body }));
      });
    });
  for (const protocols of [['graphql-ws'], [], ['graphql-ws', 'something-else']]) {
    const refused = await refusal(protocols);
    assert.equal(refused.status, 400, JSON.stringify(protocols));
    assert.match(refused.type, /^application\/problem\+json/);
    assert.equal(JSON.parse(refused.body).code, 'bad_request');
    assert.match(JSON.parse(refused.body).detail, /graphql-transport-ws/);
  }
  const both = new WebSocket(`ws://127.0.0.1:${port}/graphql`, ['graphql-ws', 'graphql-transport-ws']);
  t.after(() => both.terminate());
  await new Promise((resolve, reject) => both.once('open', resolve).once('error', reject));
  assert.equal(both.protocol, 'graphql-transport-ws');
});

test('a stopping server closes its sockets with 1001 Going Away, acknowledged or not', async (t) => {
  const { app, open, acknowledged } = await listening(t);
  const ready = await acknowledged();
  ready.send({ type: 'subscribe', id: 's', payload: { query: 'subscription { auditEvents { action } }' } });
  const silent = await open();
  await app.close();
  assert.deepEqual(await ready.closed, { code: 1001, reason: 'The server is shutting down' });
  assert.deepEqual(await silent.closed, { code: 1001, reason: 'The server is shutting down' });
});

test('a subscription the client completes while it is still being admitted ends at once: it lets go of its listener and sends nothing', async (t) => {
  const { app, acknowledged, email } = await listening(t);
  const auditListeners = () => (app.kernel.events as unknown as { emitter: { listenerCount(topic: string): number } }).emitter.listenerCount('audit.recorded');
  const raw = await acknowledged();
  // As a UI that mounts and unmounts a view at once: subscribe, complete, and the same id again.
  for (let i = 0; i < 20; i++) {
    raw.send({ type: 'subscribe', id: 's', payload: { query: 'subscription { auditEvents { action } }' } });
    raw.send({ type: 'complete', id: 's' });
  }
  raw.send({ type: 'subscribe', id: 'q', payload: { query: '{ health { status } }' } });
  await raw.next('complete');
  await new Promise((resolve) => setTimeout(resolve, 300));
  // Each lived on (a listener on the bus, events sent under a finished id) until the socket closed.
  assert.equal(auditListeners(), 0);
  await login(app, email);
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.deepEqual(raw.messages.filter((m) => m.id === 's'), []);
  // And the socket's operations are free again: one more subscription attaches.
  raw.send({ type: 'subscribe', id: 'live', payload: { query: 'subscription { auditEvents { action } }' } });
  const deadline = Date.now() + 3000;
  while (auditListeners() !== 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(auditListeners(), 1);
});
