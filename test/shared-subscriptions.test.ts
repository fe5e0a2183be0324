import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { createClient } from 'graphql-ws';
import { buildWithAi, modulesCast } from './ai-helper';
import { build, login, seedOwner } from './helper';
import { fakeOpenAi } from './fake-ai';
import { makeCsv, multipartForm } from './fixtures/document-files';
import { sharedSubscriptionResults } from '../src/host/shared-subscriptions';
import { JobsResolver } from '../subgraphs/modules/jobs.resolver';
import { CreditsResolver } from '../subgraphs/billing/credits.resolver';
import { cast } from './admin-helper';
import { inContext } from '../src/boot';

/** companyJobProgress and jobProgress are @SharedResults: one execution of an event per operation, whoever subscribed. */

/**
 * Counts the calls of a resolver method until the test ends: each execution of a
 * subscription field runs its resolver once, on mercurius' path and on the shared one alike.
 */
function countCalls(t: TestContext, prototype: object, method: string): () => number {
  const proto = prototype as Record<string, (...args: unknown[]) => unknown>;
  const original = proto[method]!;
  let calls = 0;
  proto[method] = function (this: unknown, ...args: unknown[]) {
    calls++;
    return original.apply(this, args);
  };
  t.after(() => (proto[method] = original));
  return () => calls;
}

test('the shared subscription path is in place on the pinned mercurius (an upgrade must look again)', () => {
  assert.equal(sharedSubscriptionResults(), true);
});

test('subscribers of the same operation share one execution of each job event; each still gets it under its own id, with its own selection, and only its own company', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'ok', delayMs: 20, usage: { prompt: 5, completion: 5 } }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url }, { bulk: { concurrency: 1, rowAttempts: 1, maxRows: 1000, maxConcurrent: 3 } } as never);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as AddressInfo).port;
  const { tokens, keys } = await modulesCast(app);

  const executions = countCalls(t, JobsResolver.prototype, 'companyJobProgress');

  const follow = (token: string, query: string) => {
    const client = createClient({ url: `ws://127.0.0.1:${port}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${token}` }, retryAttempts: 0 });
    t.after(() => client.dispose());
    const updates: unknown[] = [];
    client.subscribe({ query }, { next: (v) => updates.push(v.data), error: (e) => updates.push({ error: e }), complete: () => undefined });
    return updates;
  };
  const BRIEF = 'subscription { companyJobProgress { jobId status } }';
  const FULL = 'subscription Progress { companyJobProgress { kind jobId status bulk { rowsCompleted totalRows } } }';
  const first = follow(tokens.ownerA, BRIEF);
  const second = follow(tokens.ownerA, BRIEF);
  const full = follow(tokens.ownerA, FULL);
  const otherCompany = follow(tokens.ownerB, BRIEF);
  await new Promise((r) => setTimeout(r, 300));

  const form = multipartForm({ input_column: 'review', prompt_template: 'Classify: {text}' }, { content: makeCsv([['review'], ['a'], ['b'], ['c']]), filename: 'r.csv' });
  const res = await app.inject({ method: 'POST', url: '/v1/bulk/submit', payload: form.payload, headers: { ...form.headers, authorization: `Bearer ${keys.ownerA.key}` } });
  assert.equal(res.statusCode, 202, res.body);
  const id = res.json().job_id as string;
  const completed = (updates: unknown[]) => updates.some((u) => JSON.stringify(u).includes('"completed"'));
  for (let i = 0; i < 300 && !(completed(first) && completed(second) && completed(full)); i++) await new Promise((r) => setTimeout(r, 20));

  assert.ok(completed(first), JSON.stringify(first));
  assert.ok(first.length >= 2, 'at least the running and completed states');
  assert.deepEqual(second, first);
  assert.deepEqual(first.at(-1), { companyJobProgress: { jobId: id, status: 'completed' } });
  assert.equal(full.length, first.length);
  assert.deepEqual(full.at(-1), { companyJobProgress: { kind: 'bulk', jobId: id, status: 'completed', bulk: { rowsCompleted: 3, totalRows: 3 } } });
  assert.deepEqual(otherCompany, []);
  // Two operations (BRIEF and FULL) over three subscribers of company A: two executions an event, not three.
  assert.equal(executions(), 2 * first.length);
});

test("a shared subscription is admitted as every socket operation is: past the caller's request budget it is refused (rate_limited) and nothing of it runs", async (t) => {
  const app = await build(t, { rateLimit: { windowSeconds: 60, authenticated: 2, moduleKey: 10_000, anonymous: 1000, auth: 1000, feedback: 1000 } } as never);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const client = createClient({ url: `ws://127.0.0.1:${(app.server.address() as AddressInfo).port}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${token}` }, retryAttempts: 0 });
  t.after(() => client.dispose());
  const run = (query: string) =>
    new Promise<unknown>((resolve) => {
      const received: unknown[] = [];
      // A subscription that was let through stays open: 'open' after a while.
      const timer = setTimeout(() => resolve('open'), 3000);
      const end = (value: unknown) => (clearTimeout(timer), resolve(value));
      client.subscribe({ query }, { next: (v) => received.push(v), error: (e) => end({ error: e }), complete: () => end(received) });
    });
  // A budget of two requests, spent by the two queries.
  assert.deepEqual(await run('{ me { role } }'), [{ data: { me: { role: 'OWNER' } } }]);
  assert.deepEqual(await run('{ me { role } }'), [{ data: { me: { role: 'OWNER' } } }]);
  const refused = (await run('subscription { auditEvents { action } }')) as { error: { extensions?: { code?: string } }[] };
  assert.equal(refused.error?.[0]?.extensions?.code, 'rate_limited', JSON.stringify(refused));
});

test("creditsChanged is shared too: the company's admins get each balance once executed, its plan included, and another company nothing", async (t) => {
  const app = await build(t);
  const c = await cast(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as AddressInfo).port;
  const executions = countCalls(t, CreditsResolver.prototype, 'creditsChanged');
  const follow = (token: string) => {
    const client = createClient({ url: `ws://127.0.0.1:${port}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${token}` }, retryAttempts: 0 });
    t.after(() => client.dispose());
    const seen: unknown[] = [];
    client.subscribe({ query: 'subscription { creditsChanged { available purchased plan { id } } }' }, { next: (v) => seen.push(v), error: (e) => seen.push({ error: e }), complete: () => undefined });
    return seen;
  };
  const owner = follow(c.tokens.ownerA);
  const admin = follow(c.tokens.adminA);
  const otherCompany = follow(c.tokens.ownerB);
  const listeners = () => (app.kernel.events as unknown as { emitter: { listenerCount(t: string): number } }).emitter.listenerCount('credits.changed');
  for (let i = 0; listeners() < 3 && i < 300; i++) await new Promise((r) => setTimeout(r, 10));
  await inContext(app.kernel.orm, () => app.domains.billing.ledger.topUp({ companyId: c.a.companyId, credits: 300, key: 'pi_shared' }));
  for (let i = 0; (owner.length < 1 || admin.length < 1) && i < 300; i++) await new Promise((r) => setTimeout(r, 10));
  const expected = { data: { creditsChanged: { available: 2300, purchased: 300, plan: { id: 'starter' } } } };
  assert.deepEqual(owner, [expected]);
  assert.deepEqual(admin, [expected]);
  assert.deepEqual(otherCompany, []);
  assert.equal(executions(), 1);
});
