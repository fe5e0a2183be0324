import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import type { FastifyInstance } from 'fastify';
import { build, login, seedOwner } from './helper';
import { cast, sql } from './admin-helper';
import { lighterSocketMessageLoop } from '../src/host/ws-message-loop';

test('the lighter socket message loop is in place on the pinned mercurius (an upgrade must look again)', () => {
  assert.equal(lighterSocketMessageLoop(), true);
});

test('socket messages are handled one after another: a subscribe sent right behind connection_init runs after it', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;

  const socket = new WebSocket(`ws://127.0.0.1:${port}/graphql`, 'graphql-transport-ws');
  t.after(() => socket.close());
  const received: { type: string; id?: string; payload?: unknown }[] = [];
  const done = new Promise<void>((resolve, reject) => {
    socket.on('message', (data) => {
      const message = JSON.parse(String(data)) as { type: string; id?: string };
      received.push(message);
      if (message.id === '1' && (message.type === 'complete' || message.type === 'error')) resolve();
    });
    socket.on('close', () => resolve());
    socket.on('error', reject);
  });
  await new Promise((resolve) => socket.once('open', resolve));
  // Both in the same tick: the init's credential check is asynchronous, and the
  // subscribe must wait for it rather than meet a connection not yet established.
  socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } }));
  socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: '{ me { user { email } } }' } }));
  await done;

  assert.deepEqual(
    received.map((m) => m.type),
    ['connection_ack', 'next', 'complete'],
  );
  assert.deepEqual(received[1], { id: '1', type: 'next', payload: { data: { me: { user: { email: owner.email } } } } });
});

/** A signed-in graphql-transport-ws socket that runs operations one at a time and answers each one's data. */
async function socketRunner(t: TestContext, app: FastifyInstance, token: string) {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const socket = new WebSocket(`ws://127.0.0.1:${port}/graphql`, 'graphql-transport-ws');
  t.after(() => socket.close());
  const waiting = new Map<string, (message: { type: string; payload?: { data?: unknown; errors?: unknown } }) => void>();
  socket.on('message', (data) => {
    const message = JSON.parse(String(data)) as { type: string; id?: string };
    if (message.id && message.type === 'next') waiting.get(message.id)?.(message);
  });
  await new Promise((resolve) => socket.once('open', resolve));
  const acked = new Promise((resolve) => socket.once('message', resolve));
  socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } }));
  await acked;
  let next = 0;
  return (query: string) =>
    new Promise<{ data?: unknown; errors?: unknown }>((resolve) => {
      const id = String(++next);
      waiting.set(id, (message) => resolve(message.payload ?? {}));
      socket.send(JSON.stringify({ id, type: 'subscribe', payload: { query } }));
    });
}

test('a mutation over the socket is stored with its audit entry (each message runs in a unit of work of its own)', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const run = await socketRunner(t, app, c.tokens.ownerA);
  const audits = async () => (await sql<{ n: number }>(app, "select count(*) as n from audit_events where action = 'api_key.created'"))[0]!.n;
  const before = await audits();
  const created = await run('mutation { createApiKey(input: { name: "ws-key" }) { key } }');
  assert.equal(created.errors, undefined, JSON.stringify(created));
  const rows = await sql<{ n: number }>(app, "select count(*) as n from api_keys where name = 'ws-key'");
  assert.equal(rows[0]!.n, 1);
  assert.equal(await audits(), before + 1);
});

test('three credit grants on one socket are three grants: each socket operation is a request of its own', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const run = await socketRunner(t, app, c.tokens.superadmin);
  for (const credits of [100, 250, 7]) {
    const res = await run(`mutation { grantCredits(companyId: "${c.b.companyId}", input: { credits: ${credits}, reason: "ws ${credits}" }) { granted } }`);
    assert.equal(res.errors, undefined, JSON.stringify(res));
  }
  assert.equal(app.domains.billing.ledger.balance(c.b.companyId).granted, 357);
});
