import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { build, login, seedOwner } from './helper';
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
  socket.send('not json');
  socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } }));
  socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: '{ me { user { email } } }' } }));
  await done;

  assert.deepEqual(
    received.map((m) => m.type),
    ['error', 'connection_ack', 'next', 'complete'],
  );
  assert.deepEqual(received[2], { id: '1', type: 'next', payload: { data: { me: { user: { email: owner.email } } } } });
});
