import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { createClient, type Client } from 'graphql-ws';
import type { FastifyInstance } from 'fastify';
import { call, gql } from './admin-helper';
import { buildWithAi, modulesCast } from './ai-helper';
import { fakeOpenAi } from './fake-ai';
import { makeCsv, multipartForm } from './fixtures/document-files';

/** jobProgress and companyJobProgress over a real graphql-ws socket, on bulk jobs (the fake model only). */

const FIELDS = { input_column: 'review', prompt_template: 'Classify: {text}' };
const QUERY = (id: string) => `subscription { jobProgress(id: "${id}") { kind jobId status bulk { status rowsCompleted rowsFailed totalRows error } } }`;

type Bulk = { status: string; rowsCompleted: number; rowsFailed: number; totalRows: number; error: string | null };
type JobUpdate = { kind: string; jobId: string; status: string; bulk: Bulk | null };

async function listening(t: TestContext, delayMs: number) {
  const fake = await fakeOpenAi(t, () => ({ content: 'ok', delayMs, usage: { prompt: 5, completion: 5 } }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url }, { bulk: { concurrency: 2, rowAttempts: 1, maxRows: 1000, maxConcurrent: 3 } } as never);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as AddressInfo).port;
  const socket = (token: string) => {
    const client = createClient({ url: `ws://127.0.0.1:${port}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${token}` }, retryAttempts: 0, lazy: true });
    t.after(() => client.dispose());
    return client;
  };
  return { app, fake, socket };
}

function submit(app: FastifyInstance, key: string, rows: number) {
  const form = multipartForm(FIELDS, { content: makeCsv([['review'], ...Array.from({ length: rows }, (_, i) => [`r${i}`])]), filename: 'r.csv' });
  return app.inject({ method: 'POST', url: '/v1/bulk/submit', payload: form.payload, headers: { ...form.headers, authorization: `Bearer ${key}` } });
}

/** Follows one subscription: its updates, and how it ended ('complete', an error, or 'open' after `ms`). */
function follow<T>(client: Client, query: string, field: string, ms = 5000) {
  const updates: T[] = [];
  const ended = new Promise<unknown>((resolve) => {
    const timer = setTimeout(() => resolve('open'), ms);
    client.subscribe(
      { query },
      {
        next: (v) => updates.push((v.data as Record<string, T>)[field]!),
        error: (e) => (clearTimeout(timer), resolve(e)),
        complete: () => (clearTimeout(timer), resolve('complete')),
      },
    );
  });
  return { updates, ended };
}

const finishedJob = async (app: FastifyInstance, key: string) => {
  const res = await submit(app, key, 3);
  assert.equal(res.statusCode, 202, res.body);
  const id = res.json().job_id as string;
  await app.kernel.worker.drain();
  for (let i = 0; i < 100 && (await call(app, key, 'GET', `/v1/bulk/status/${id}`)).json().status !== 'completed'; i++) await new Promise((r) => setTimeout(r, 20));
  return id;
};

test('jobProgress of a finished job answers its final state at once and completes', async (t) => {
  const { app, socket } = await listening(t, 0);
  const { keys, tokens } = await modulesCast(app);
  const id = await finishedJob(app, keys.ownerA.key);
  const { updates, ended } = follow<JobUpdate>(socket(tokens.ownerA), QUERY(id), 'jobProgress');
  assert.equal(await ended, 'complete');
  assert.deepEqual(updates, [{ kind: 'bulk', jobId: id, status: 'completed', bulk: { status: 'completed', rowsCompleted: 3, rowsFailed: 0, totalRows: 3, error: null } }]);
});

test("jobProgress subscriptions of finished jobs end, so they do not use up the socket's operation slots", async (t) => {
  const { app, socket } = await listening(t, 0);
  const { keys, tokens } = await modulesCast(app);
  const id = await finishedJob(app, keys.ownerA.key);
  const client = socket(tokens.ownerA);
  // More than MAX_OPERATIONS_PER_SOCKET (100), one after another on one socket.
  for (let i = 0; i < 105; i++) {
    const { updates, ended } = follow<JobUpdate>(client, QUERY(id), 'jobProgress');
    assert.equal(await ended, 'complete', `subscription ${i}`);
    assert.equal(updates.length, 1);
  }
  const health = follow<{ status: string }>(client, '{ health { status } }', 'health');
  assert.equal(await health.ended, 'complete');
  assert.deepEqual(health.updates, [{ status: 'ok' }]);
});

test("jobProgress of a running job sends its current state first, then each change, and completes after the final state; another member's job is not_found", async (t) => {
  const { app, socket } = await listening(t, 40);
  const { keys, tokens } = await modulesCast(app);
  const res = await submit(app, keys.ownerA.key, 40);
  assert.equal(res.statusCode, 202, res.body);
  const id = res.json().job_id as string;
  for (let i = 0; i < 200; i++) {
    const row = (await gql(app, tokens.ownerA, `{ bulkJob(id: "${id}") { rowsCompleted } }`)).data as { bulkJob: { rowsCompleted: number } };
    if (row.bulkJob.rowsCompleted >= 6) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const { updates, ended } = follow<JobUpdate>(socket(tokens.ownerA), QUERY(id), 'jobProgress', 20_000);
  // The first message comes at once, with the counts so far (not at the next change).
  for (let i = 0; i < 50 && !updates.length; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(updates.length >= 1, true, 'no current state within 500 ms');
  assert.equal(updates[0]!.status, 'running');
  assert.ok(updates[0]!.bulk!.rowsCompleted >= 6, JSON.stringify(updates[0]));
  assert.equal(await ended, 'complete');
  const counts = updates.map((u) => u.bulk!.rowsCompleted);
  assert.deepEqual(counts, [...counts].sort((a, b) => a - b), 'counts never go back');
  // The last rows' count may be told while running and again as completed: two states, one count.
  const states = updates.map((u) => `${u.status} ${u.bulk!.rowsCompleted}`);
  assert.equal(new Set(states).size, states.length, `no state told twice: ${states.join(', ')}`);
  assert.equal(updates.at(-1)!.status, 'completed');
  assert.equal(updates.at(-1)!.bulk!.rowsCompleted, 40);
  // A member may not follow the owner's job: not_found, as for a query.
  const refused = follow<JobUpdate>(socket(tokens.memberA), QUERY(id), 'jobProgress');
  assert.match(JSON.stringify(await refused.ended), /not_found/);
  assert.deepEqual(refused.updates, []);
});

test('jobProgress loses no change committed while its current state is read, and drops an event older than that state', async (t) => {
  const { app, socket } = await listening(t, 0);
  const { a, keys, tokens } = await modulesCast(app);
  const id = await finishedJob(app, keys.ownerA.key);
  const service = app.domains.bulk.bulk;
  const get = service.get.bind(service);
  // While the current state (completed) is read, two events arrive: a stale one (running, 1 row) and the same state again.
  service.get = async (principal, jobId) => {
    const view = await get(principal, jobId);
    app.kernel.events.publish('bulk.updated', { companyId: a.companyId, userId: a.userId, job: { ...view, status: 'running', rowsCompleted: 1 } });
    app.kernel.events.publish('bulk.updated', { companyId: a.companyId, userId: a.userId, job: view });
    return { ...view, status: 'running', rowsCompleted: 2 };
  };
  t.after(() => (service.get = get));
  const { updates, ended } = follow<JobUpdate>(socket(tokens.ownerA), QUERY(id), 'jobProgress');
  assert.equal(await ended, 'complete');
  // The state read (2 rows), then the later one published meanwhile (completed); the stale one is dropped.
  assert.deepEqual(updates.map((u) => [u.status, u.bulk!.rowsCompleted]), [['running', 2], ['completed', 3]]);
});

test("deleting a user with a running bulk job: companyJobProgress and jobProgress end it as cancelled, the error naming the deletion", async (t) => {
  const { app, fake, socket } = await listening(t, 100);
  const { memberA, tokens, keys } = await modulesCast(app);
  const company = follow<JobUpdate>(socket(tokens.ownerA), 'subscription { companyJobProgress { kind jobId status bulk { status rowsCompleted rowsFailed totalRows error } } }', 'companyJobProgress', 30_000);
  await new Promise((r) => setTimeout(r, 200));
  const res = await submit(app, keys.memberA.key, 30);
  assert.equal(res.statusCode, 202, res.body);
  const id = res.json().job_id as string;
  for (let i = 0; i < 200 && fake.seen.length < 3; i++) await new Promise((r) => setTimeout(r, 20));
  const one = follow<JobUpdate>(socket(tokens.ownerA), QUERY(id), 'jobProgress', 10_000);
  for (let i = 0; i < 50 && !one.updates.length; i++) await new Promise((r) => setTimeout(r, 10));
  const deleted = await call(app, tokens.ownerA, 'DELETE', `/v1/admin/users/${memberA.userId}`);
  assert.equal(deleted.statusCode, 204, deleted.body);
  assert.equal(await one.ended, 'complete');
  assert.equal(one.updates.at(-1)!.status, 'cancelled');
  assert.match(one.updates.at(-1)!.bulk!.error!, /user was deleted/);
  await app.kernel.worker.drain();
  await new Promise((r) => setTimeout(r, 400));
  const last = company.updates.filter((u) => u.jobId === id).at(-1)!;
  assert.equal(last.status, 'cancelled');
  assert.equal(last.bulk!.status, 'cancelled');
  assert.match(last.bulk!.error!, /user was deleted/);
  assert.equal((await call(app, keys.ownerA.key, 'GET', `/v1/bulk/status/${id}`)).statusCode, 404);
});
