import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import WebSocket from 'ws';
import { createClient } from 'graphql-ws';
import { assertCode, call, gql, sql } from './admin-helper';
import { createCompanyKey } from './helper';
import { buildWithAi, moduleKey, modulesCast } from './ai-helper';
import { fakeOpenAi, fakeSearch, type FakeReply, type SeenRequest } from './fake-ai';
import { assertLedgerAddsUp } from './ledger-helper';
import { buildApp } from '../src/app';
import { loadAiConfig } from '../src/domains/ai';
import { inContext } from '../src/boot';

// Real articles are longer than a headline; Readability weighs text length.
const FILLER = Array.from({ length: 4 }, (_, i) => `<p>Paragraph ${i + 1} of the background: analysts, operators and households weighed costs, grid capacity and storage over the whole year, and the figures were checked against earlier reports.</p>`).join('');

/** A web server on loopback with the pages research reads: articles, a redirect to a metadata address, a PDF. */
async function webServer(t: TestContext) {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(req.url ?? '');
    const article = (title: string, body: string) =>
      `<!doctype html><html><head><title>${title}</title></head><body><nav>Home | About | Login</nav><article><h1>${title}</h1>` +
      `${body.split('\n').map((p) => `<p>${p}</p>`).join('')}${FILLER}</article><footer>Copyright 2026</footer></body></html>`;
    if (req.url === '/solar') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(article('Solar power in 2026', 'Solar panels produced a record share of electricity this year, according to the grid operator.\nInstallations on homes doubled compared with the year before, driven by cheaper panels and batteries.'));
    } else if (req.url === '/wind') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(article('Offshore wind', 'Offshore wind farms now supply a third of the country\'s power on windy days.\nNew turbines are larger and reach further from the coast than earlier ones did.'));
    } else if (req.url === '/metadata') {
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
      res.end();
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, hits };
}

/** The fake model's part in research: a plan as JSON, a summary of each page, and a report citing them. */
function researcher(options: { delayMs?: number; failOn?: 'plan' | 'summary' | 'report'; failStatus?: number } = {}) {
  return (request: SeenRequest): FakeReply => {
    const system = request.messages[0]?.content ?? '';
    const delay = options.delayMs ? { delayMs: options.delayMs } : {};
    if (system.startsWith('You plan web research')) {
      if (options.failOn === 'plan') return { status: options.failStatus ?? 500 };
      const n = Number(/exactly (\d+)/.exec(system)![1]);
      return { ...delay, content: JSON.stringify({ queries: Array.from({ length: n }, (_, i) => `energy question ${i + 1}`) }), usage: { prompt: 50, completion: 20 } };
    }
    if (system.startsWith('You summarise one web page')) {
      if (options.failOn === 'summary') return { status: 500 };
      const page = request.messages[1]!.content!;
      return { ...delay, content: `Summary: ${page.split('\n\n')[1]?.slice(0, 80) ?? ''}`, usage: { prompt: 200, completion: 40 } };
    }
    if (options.failOn === 'report') return { status: 500 };
    const language = /in Dutch/.test(system) ? 'Rapport' : 'Report';
    return { ...delay, content: `# ${language} on energy\n\nSolar grew fast [1]. Wind supplies a third on windy days [2]. Tides are unproven [7]. Both matter [1, 9]. Index with \`arr[9]\`.`, usage: { prompt: 400, completion: 100 } };
  };
}

async function setup(t: TestContext, env: Record<string, string> = {}, options: Parameters<typeof researcher>[0] = {}, config: Record<string, unknown> = {}) {
  const web = await webServer(t);
  const fake = await fakeOpenAi(t, researcher(options));
  const search = await fakeSearch(t, (q) => [
    { url: `${web.base}/solar`, title: 'Solar', content: `solar result for ${q}` },
    { url: `${web.base}/wind`, title: 'Wind', content: `wind result for ${q}` },
    { url: `${web.base}/metadata`, title: 'Metadata', content: 'a page that redirects to a metadata address' },
    { url: `${web.base}/missing`, title: 'Missing', content: 'a page that is gone' },
  ]);
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url, WEB_SEARCH_URL: search.url, ...env }, { ssrfAllowLoopback: true, ...config } as never);
  return { app, fake, search, web };
}

const held = async (app: FastifyInstance) => (await sql<{ n: number }>(app, "select count(*) as n from credit_holds where status = 'held'"))[0]!.n;

test('research end to end on the AI-modules API: planned, searched, pages read through the guard, summarised, a cited report; 20 credits spent', async (t) => {
  const { app, fake, search, web } = await setup(t);
  const { a, keys } = await modulesCast(app);
  const ready: unknown[] = [];
  t.after(app.kernel.events.subscribe('research.report.ready', (e) => ready.push(e)));
  const start = await call(app, keys.ownerA.key, 'POST', '/v1/research/start', { query: 'How is renewable energy doing?' });
  assert.equal(start.statusCode, 202, start.body);
  const id = start.json().job_id as string;
  assert.equal(start.json().status, 'queued');
  // Held at the start.
  assert.equal(app.domains.billing.ledger.balance(a.companyId).held, 20);
  await app.kernel.worker.drain();
  const status = await call(app, keys.ownerA.key, 'GET', `/v1/research/status/${id}`);
  assert.equal(status.statusCode, 200, status.body);
  const body = status.json();
  assert.equal(body.status, 'completed');
  assert.equal(body.job_id, id);
  assert.equal(body.progress, null);
  assert.match(body.report, /^# Report on energy/);
  assert.match(body.report, /Solar grew fast \[1\]/);
  // Citations of numbers no source has are dropped; a list keeps its valid ones.
  assert.match(body.report, /windy days \[2\]\. Tides are unproven\. Both matter \[1\]\. Index with `arr\[9\]`\./);
  assert.match(body.report, /## Sources\n\n\[1\] \[Solar\]\(http:\/\/127\.0\.0\.1:\d+\/solar\)\n\[2\] \[Wind\]/);
  // Standard: 3 sub-questions searched; 4 pages picked, the metadata redirect refused and the missing page skipped (their snippets stand in).
  assert.deepEqual(search.queries, ['energy question 1', 'energy question 2', 'energy question 3']);
  assert.deepEqual(body.sources.map((s: { n: number }) => s.n), [1, 2, 3, 4]);
  assert.deepEqual(body.sources[0], { n: 1, url: `${web.base}/solar`, title: 'Solar' });
  assert.ok(web.hits.includes('/metadata') && web.hits.includes('/solar') && web.hits.includes('/wind'));
  // One plan, four summaries, one report.
  assert.equal(fake.seen.length, 6);
  const summaryOfSolar = fake.seen.find((s) => s.messages[1]?.content?.includes('Solar panels produced a record share'));
  assert.ok(summaryOfSolar, 'the page text (not the search snippet) was summarised');
  assert.ok(!summaryOfSolar.messages[1]!.content!.includes('Home | About'), 'boilerplate was dropped');
  const balance = app.domains.billing.ledger.balance(a.companyId);
  assert.equal(balance.available, 2000 - 20);
  assert.equal(balance.held, 0);
  const [usage] = await sql<{ feature: string; credits: number; tokens: number }>(app, "select feature, credits, tokens from usage_records where feature = 'research'");
  assert.equal(usage!.credits, 20);
  assert.equal(usage!.tokens, 70 + 4 * 240 + 500);
  assert.equal(ready.length, 1);
  const event = ready[0] as { type: string; company_id: string; data: Record<string, unknown> };
  assert.equal(event.type, 'research.report.ready');
  assert.equal(event.company_id, a.companyId);
  assert.deepEqual(event.data, { report_id: id, query: 'How is renewable energy doing?', depth: 'standard', content_length: body.report.length });
  await assertLedgerAddsUp(app);
});

test('the platform API: a company key starts standard or deep research (comprehensive is 422) and reads content and sources; Dutch reports', async (t) => {
  const { app } = await setup(t);
  const { a } = await modulesCast(app);
  const companyKey = await createCompanyKey(app, a.companyId);
  assertCode(await call(app, companyKey.key, 'POST', '/v1/research', { query: 'x', depth: 'comprehensive' }), 422, 'validation_error');
  assertCode(await call(app, companyKey.key, 'POST', '/v1/research', { query: 'x', language: 'de' }), 422, 'validation_error');
  assertCode(await call(app, companyKey.key, 'POST', '/v1/research', { depth: 'deep' }), 422, 'validation_error');
  const start = await call(app, companyKey.key, 'POST', '/v1/research', { query: 'Hoe gaat het met duurzame energie?', depth: 'deep', language: 'nl' });
  assert.equal(start.statusCode, 202, start.body);
  assert.equal(start.json().credits, 35);
  const id = start.json().id as string;
  await app.kernel.worker.drain();
  const report = await call(app, companyKey.key, 'GET', `/v1/research/${id}`);
  assert.equal(report.json().status, 'completed');
  assert.match(report.json().content, /^# Rapport/);
  assert.match(report.json().content, /## Bronnen/);
  assert.equal(report.json().report, undefined);
  assert.ok(report.json().sources.length >= 2);
  const list = await call(app, companyKey.key, 'GET', '/v1/research');
  assert.equal(list.json().total, 1);
  assert.equal(list.json().items[0].content, undefined, 'lists carry no content');
  assert.equal(app.domains.billing.ledger.balance(a.companyId).available, 2000 - 35);
});

test('without web search or a provider research is refused up front with 503 and nothing is spent', async (t) => {
  const fake = await fakeOpenAi(t, researcher());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { a, keys } = await modulesCast(app);
  assertCode(await call(app, keys.ownerA.key, 'POST', '/v1/research/start', { query: 'q' }), 503, 'web_search_not_configured');
  const bare = await buildWithAi(t, {});
  const cast = await modulesCast(bare);
  assertCode(await call(bare, cast.keys.ownerA.key, 'POST', '/v1/research/start', { query: 'q' }), 503, 'ai_provider_not_configured');
  assert.equal(app.domains.billing.ledger.balance(a.companyId).available, 2000);
  assert.equal((await sql<{ n: number }>(app, 'select count(*) as n from research_jobs'))[0]!.n, 0);
});

test('a research job that fails returns its credits: status failed with the error', async (t) => {
  // One attempt per step: the failure is final at once.
  const jobs = { pollMs: 1000, concurrency: 2, leaseSeconds: 60, maxAttempts: 1, retryBaseSeconds: 1, retryMaxSeconds: 1, keepDoneSeconds: 86400 };
  const { app } = await setup(t, {}, { failOn: 'report' }, { jobs });
  const { a, keys } = await modulesCast(app);
  const id = (await call(app, keys.ownerA.key, 'POST', '/v1/research/start', { query: 'q' })).json().job_id as string;
  await app.kernel.worker.drain();
  const status = (await call(app, keys.ownerA.key, 'GET', `/v1/research/status/${id}`)).json();
  assert.equal(status.status, 'failed');
  assert.match(status.error, /^ai_provider_error/);
  assert.equal(status.report, null);
  assert.equal(app.domains.billing.ledger.balance(a.companyId).available, 2000);
  assert.equal(await held(app), 0);
  await assertLedgerAddsUp(app);
});

test('a research step whose provider stalls after its headers ends at AI_TIMEOUT_SECONDS: the job fails with ai_provider_timeout and its credits return', async (t) => {
  const jobs = { pollMs: 1000, concurrency: 2, leaseSeconds: 60, maxAttempts: 1, retryBaseSeconds: 1, retryMaxSeconds: 1, keepDoneSeconds: 86400 };
  const { app, fake } = await setup(t, { AI_TIMEOUT_SECONDS: '1' }, {}, { jobs });
  fake.respond(() => ({ content: '{"queries": ["a", "b", "c"]}', stall: true }));
  const { a, keys } = await modulesCast(app);
  const id = (await call(app, keys.ownerA.key, 'POST', '/v1/research/start', { query: 'q' })).json().job_id as string;
  const started = Date.now();
  await app.kernel.worker.drain();
  assert.ok(Date.now() - started < 4000, `the step took ${Date.now() - started} ms`);
  const status = (await call(app, keys.ownerA.key, 'GET', `/v1/research/status/${id}`)).json();
  assert.equal(status.status, 'failed');
  assert.match(status.error, /^ai_provider_timeout/);
  assert.equal(app.domains.billing.ledger.balance(a.companyId).available, 2000);
  assert.equal(await held(app), 0);
});

test('a provider that refuses the request itself (400) fails the research at once, not after every retry, and the job shows when it started', async (t) => {
  const { app, fake } = await setup(t, {}, { failOn: 'plan', failStatus: 400 });
  const { a, keys } = await modulesCast(app);
  const id = (await call(app, keys.ownerA.key, 'POST', '/v1/research/start', { query: 'q' })).json().job_id as string;
  await app.kernel.worker.drain();
  const status = (await call(app, keys.ownerA.key, 'GET', `/v1/research/status/${id}`)).json();
  assert.equal(status.status, 'failed');
  assert.match(status.error, /^ai_provider_error: The AI provider answered 400/);
  assert.notEqual(status.started_at, null);
  assert.equal(fake.seen.filter((r) => r.messages[0]?.content?.startsWith('You plan web research')).length, 1, 'asked once');
  assert.equal(app.domains.billing.ledger.balance(a.companyId).available, 2000);
  await assertLedgerAddsUp(app);
});

test('cancel: a running research job stops and its credits return; a finished one is 409; the concurrency limit is 429', async (t) => {
  const { app } = await setup(t, {}, { delayMs: 300 });
  const { a, keys } = await modulesCast(app);
  const id = (await call(app, keys.ownerA.key, 'POST', '/v1/research/start', { query: 'q' })).json().job_id as string;
  await new Promise((r) => setTimeout(r, 100));
  const cancelled = await call(app, keys.ownerA.key, 'POST', `/v1/research/cancel/${id}`);
  assert.equal(cancelled.statusCode, 200, cancelled.body);
  assert.equal(cancelled.json().status, 'cancelled');
  await app.kernel.worker.drain();
  assert.equal((await call(app, keys.ownerA.key, 'GET', `/v1/research/status/${id}`)).json().status, 'cancelled');
  assertCode(await call(app, keys.ownerA.key, 'POST', `/v1/research/cancel/${id}`), 409, 'job_finished');
  assert.equal(app.domains.billing.ledger.balance(a.companyId).available, 2000);
  assert.equal(await held(app), 0);
  await assertLedgerAddsUp(app);
});

test('RESEARCH_MAX_CONCURRENT: one job past the company\'s limit is 429 job_limit_reached, spending nothing', async (t) => {
  const { app } = await setup(t, {}, { delayMs: 200 });
  app.domains.research.config.maxConcurrent = 1;
  const { a, keys } = await modulesCast(app);
  assert.equal((await call(app, keys.ownerA.key, 'POST', '/v1/research/start', { query: 'one' })).statusCode, 202);
  const second = await call(app, keys.memberA.key, 'POST', '/v1/research/start', { query: 'two' });
  assertCode(second, 429, 'job_limit_reached');
  assert.equal(second.headers['retry-after'], '30');
  assert.equal(app.domains.billing.ledger.balance(a.companyId).held, 20);
  await app.kernel.worker.drain();
});

test('isolation: another company\'s research job is 404 on both surfaces; a member sees only their own; a key without the research scope is 403', async (t) => {
  const { app } = await setup(t);
  const { keys, tokens } = await modulesCast(app);
  const id = (await call(app, keys.ownerA.key, 'POST', '/v1/research/start', { query: 'q' })).json().job_id as string;
  await app.kernel.worker.drain();
  assertCode(await call(app, keys.ownerB.key, 'GET', `/v1/research/status/${id}`), 404, 'not_found');
  assertCode(await call(app, keys.memberA.key, 'GET', `/v1/research/status/${id}`), 404, 'not_found');
  assertCode(await call(app, tokens.ownerB, 'GET', `/v1/research/${id}`), 404, 'not_found');
  assertCode(await call(app, tokens.ownerB, 'POST', `/v1/research/${id}/cancel`), 404, 'not_found');
  assertCode(await call(app, keys.ownerA.key, 'GET', '/v1/research/status/not-a-uuid'), 422, 'validation_error');
  assert.equal((await call(app, tokens.ownerA, 'GET', `/v1/research/${id}`)).json().status, 'completed');
  const chatOnly = await moduleKey(app, tokens.ownerA, ['chat'], 'chat only');
  assertCode(await call(app, chatOnly.key, 'POST', '/v1/research/start', { query: 'q' }), 403, 'insufficient_scope');
  // The AI-modules API names a job job_id in its list too, as in its start, status and cancel answers.
  const listed = (await call(app, keys.ownerA.key, 'GET', '/v1/research/list')).json();
  assert.equal(listed.total, 1);
  assert.equal(listed.items[0].job_id, id);
  assert.equal('id' in listed.items[0], false);
  assert.equal((await call(app, tokens.ownerA, 'GET', '/v1/research')).json().items[0].id, id);
  assert.equal((await call(app, keys.memberA.key, 'GET', '/v1/research/list')).json().total, 0);
});

test('a restart resumes a research job after its last finished step', async (t) => {
  const web = await webServer(t);
  let stall = true;
  const fake = await fakeOpenAi(t, researcher());
  const search = await fakeSearch(t, () => [{ url: `${web.base}/solar`, title: 'Solar', content: 'solar' }]);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-research-'));
  t.after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const open = () =>
    buildApp({
      env: { DATA_DIR: dataDir, SCRYPT_COST: '1024' },
      logger: false,
      config: {
        rateLimit: { windowSeconds: 60, authenticated: 10_000, moduleKey: 10_000, anonymous: 10_000, auth: 10_000, feedback: 10_000 },
        ai: loadAiConfig({ AI_BASE_URL: fake.url, WEB_SEARCH_URL: search.url, AI_MAX_RETRIES: '0' }).ai,
        ssrfAllowLoopback: true,
        // A step the stop interrupted is retried a second later.
        jobs: { pollMs: 50, concurrency: 2, leaseSeconds: 60, maxAttempts: 5, retryBaseSeconds: 1, retryMaxSeconds: 1, keepDoneSeconds: 86400 },
      } as never,
    });
  const first = await open();
  const { a, keys } = await modulesCast(first);
  // Stop the worker as soon as the searches are done: the process ends between steps.
  const stop = first.kernel.events.subscribe('research.updated', (e) => {
    if (stall && e.job.progress?.phase === 'fetching') {
      stall = false;
      void first.kernel.worker.stop();
    }
  });
  const id = (await call(first, keys.ownerA.key, 'POST', '/v1/research/start', { query: 'q' })).json().job_id as string;
  for (let i = 0; i < 200 && stall; i++) await new Promise((r) => setTimeout(r, 20));
  stop();
  await first.kernel.worker.stop();
  const midway = (await sql<{ steps_done: number; status: string }>(first, 'select steps_done, status from research_jobs'))[0]!;
  assert.equal(midway.status, 'running');
  const planned = fake.seen.filter((s) => s.messages[0]?.content?.startsWith('You plan')).length;
  const searched = search.queries.length;
  await first.close();

  const second = await open();
  t.after(() => second.close());
  let done = await call(second, keys.ownerA.key, 'GET', `/v1/research/status/${id}`);
  for (let i = 0; i < 200 && done.json().status !== 'completed'; i++) {
    await new Promise((r) => setTimeout(r, 50));
    done = await call(second, keys.ownerA.key, 'GET', `/v1/research/status/${id}`);
  }
  assert.equal(done.json().status, 'completed', done.body);
  assert.equal(fake.seen.filter((s) => s.messages[0]?.content?.startsWith('You plan')).length, planned, 'the plan was not made again');
  assert.equal(search.queries.length, searched, 'the searches were not run again');
  assert.equal(second.domains.billing.ledger.balance(a.companyId).available, 2000 - 20);
  await assertLedgerAddsUp(second);
});

test('GraphQL: startResearch runs the same service, and jobProgress streams its phases to the owner\'s socket and never to another company\'s', async (t) => {
  const { app } = await setup(t, {}, { delayMs: 20 });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as AddressInfo).port;
  const { tokens } = await modulesCast(app);
  const socket = (token: string) => {
    const client = createClient({ url: `ws://127.0.0.1:${port}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${token}` }, retryAttempts: 0, lazy: true });
    t.after(() => client.dispose());
    return client;
  };
  const mine: { status: string; research: { progress: { phase: string; step: number; total: number } | null } }[] = [];
  const theirs: unknown[] = [];
  // Company B listens to all its jobs from the start.
  const other = socket(tokens.ownerB);
  other.subscribe({ query: 'subscription { companyJobProgress { jobId status } }' }, { next: (v) => theirs.push(v.data), error: () => undefined, complete: () => undefined });
  const started = await gql(app, tokens.ownerA, 'mutation { startResearch(input: { query: "energy", depth: "standard" }) { id status credits } }');
  assert.equal(started.errors, undefined, JSON.stringify(started.errors));
  const id = (started.data!.startResearch as { id: string }).id;
  await new Promise<void>((resolve, reject) => {
    socket(tokens.ownerA).subscribe(
      { query: `subscription { jobProgress(id: "${id}") { kind jobId status research { progress { phase step total } } } }` },
      {
        next: (v) => {
          const update = (v.data as { jobProgress: (typeof mine)[number] }).jobProgress;
          mine.push(update);
          if (update.status === 'completed') resolve();
        },
        error: reject,
        complete: resolve,
      },
    );
  });
  // The first message is the job's state when subscribing (still planning if no step has finished yet).
  const phases = [...new Set(mine.map((u) => u.research.progress?.phase).filter(Boolean))].filter((p) => p !== 'planning');
  assert.deepEqual(phases, ['searching', 'fetching', 'summarising', 'writing']);
  assert.equal(mine.at(-1)!.status, 'completed');
  // B's socket saw none of A's job.
  assert.deepEqual(theirs, []);
  // Another company's job id is 404 for a subscription too.
  const refused = await new Promise<unknown>((resolve) => {
    socket(tokens.ownerB).subscribe({ query: `subscription { jobProgress(id: "${id}") { jobId } }` }, { next: resolve, error: resolve, complete: () => resolve(null) });
  });
  assert.match(JSON.stringify(refused), /not_found|No research or bulk job/);
});

test("deleting a user with a running research job: companyJobProgress and jobProgress end it as cancelled, the error naming the deletion", async (t) => {
  const { app, fake } = await setup(t, {}, { delayMs: 300 });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as AddressInfo).port;
  const { memberA, tokens, keys } = await modulesCast(app);
  const socket = () => {
    const client = createClient({ url: `ws://127.0.0.1:${port}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${tokens.ownerA}` }, retryAttempts: 0, lazy: true });
    t.after(() => client.dispose());
    return client;
  };
  type U = { jobId: string; status: string; research: { status: string; error: string | null } };
  const fields = 'jobId status research { status error }';
  const company: U[] = [];
  socket().subscribe({ query: `subscription { companyJobProgress { ${fields} } }` }, { next: (v) => company.push((v.data as { companyJobProgress: U }).companyJobProgress), error: () => undefined, complete: () => undefined });
  await new Promise((r) => setTimeout(r, 200));
  const started = await call(app, keys.memberA.key, 'POST', '/v1/research/start', { query: 'q' });
  assert.equal(started.statusCode, 202, started.body);
  const id = started.json().job_id as string;
  for (let i = 0; i < 100 && fake.seen.length < 1; i++) await new Promise((r) => setTimeout(r, 20));
  const one: U[] = [];
  const ended = new Promise<unknown>((resolve) => {
    socket().subscribe({ query: `subscription { jobProgress(id: "${id}") { ${fields} } }` }, { next: (v) => one.push((v.data as { jobProgress: U }).jobProgress), error: resolve, complete: () => resolve('complete') });
  });
  for (let i = 0; i < 50 && !one.length; i++) await new Promise((r) => setTimeout(r, 10));
  const deleted = await call(app, tokens.ownerA, 'DELETE', `/v1/admin/users/${memberA.userId}`);
  assert.equal(deleted.statusCode, 204, deleted.body);
  assert.equal(await Promise.race([ended, new Promise((r) => setTimeout(() => r('open'), 5000))]), 'complete');
  assert.equal(one.at(-1)!.status, 'cancelled');
  assert.match(one.at(-1)!.research.error!, /user was deleted/);
  await app.kernel.worker.drain();
  await new Promise((r) => setTimeout(r, 200));
  const last = company.filter((u) => u.jobId === id).at(-1)!;
  assert.equal(last.status, 'cancelled');
  assert.match(last.research.error!, /user was deleted/);
  assert.equal(await held(app), 0);
});

test('a research job whose steps stopped running fails once past RESEARCH_TIMEOUT_SECONDS, and its credits return', async (t) => {
  const { app } = await setup(t, {}, { delayMs: 60_000 });
  const { a, keys } = await modulesCast(app);
  const id = (await call(app, keys.ownerA.key, 'POST', '/v1/research/start', { query: 'q' })).json().job_id as string;
  assert.equal(await inContext(app.kernel.orm, () => app.domains.research.research.expireOverdue()), 0, 'not overdue yet');
  const later = new Date(Date.now() + (app.domains.research.config.timeoutSeconds + 1) * 1000);
  assert.equal(await inContext(app.kernel.orm, () => app.domains.research.research.expireOverdue(later)), 1);
  const status = (await call(app, keys.ownerA.key, 'GET', `/v1/research/status/${id}`)).json();
  assert.equal(status.status, 'failed');
  assert.match(status.error, /did not finish within 30 minutes/);
  assert.equal(app.domains.billing.ledger.balance(a.companyId).available, 2000);
  assert.equal(await held(app), 0);
  await app.kernel.worker.stop();
  await assertLedgerAddsUp(app);
});

test('out of credits, each API answers in its own spelling: CREDIT_EXHAUSTED on /research/start, insufficient_credits on /research and GraphQL; nothing is held', async (t) => {
  const { app, fake } = await setup(t);
  const { a, keys, tokens } = await modulesCast(app);
  const companyKey = await createCompanyKey(app, a.companyId);
  await inContext(app.kernel.orm, () => app.domains.billing.ledger.reserve({ companyId: a.companyId, credits: 1990, key: 'block', feature: 'test' }));
  const modules = await call(app, keys.ownerA.key, 'POST', '/v1/research/start', { query: 'solar' });
  assertCode(modules, 402, 'CREDIT_EXHAUSTED');
  assert.equal(modules.json().detail, 'needs 20 credits; balance 10');
  assert.equal(modules.json().required, 20);
  const platform = await call(app, companyKey.key, 'POST', '/v1/research', { query: 'solar' });
  assertCode(platform, 402, 'insufficient_credits');
  assert.equal(platform.json().detail, 'needs 20 credits; balance 10');
  assert.equal(platform.json().balance, 10);
  const viaGraphql = await gql(app, tokens.ownerA, 'mutation { startResearch(input: { query: "solar" }) { id } }');
  assert.equal(viaGraphql.errors?.[0]?.extensions.code, 'insufficient_credits', JSON.stringify(viaGraphql));
  assert.equal(await held(app), 1, 'only the blocking hold');
  assert.equal(fake.seen.length, 0);
});

test("deleting a user gives back their running research job's credits at once, and no report is charged after the deletion", async (t) => {
  const { app, fake } = await setup(t, {}, { delayMs: 200 });
  const { a, memberA, tokens, keys } = await modulesCast(app);
  const started = await call(app, keys.memberA.key, 'POST', '/v1/research/start', { query: 'q' });
  assert.equal(started.statusCode, 202, started.body);
  for (let i = 0; i < 100 && fake.seen.length < 1; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(await held(app), 1);
  const deleted = await call(app, tokens.ownerA, 'DELETE', `/v1/admin/users/${memberA.userId}`);
  assert.equal(deleted.statusCode, 204, deleted.body);
  await app.kernel.worker.drain();
  assert.equal(await held(app), 0, 'the hold waited for its expiry');
  assert.equal(app.domains.billing.ledger.balance(a.companyId).available, 2000);
  assert.equal((await sql<{ n: number }>(app, "select count(*) as n from usage_records where feature = 'research'"))[0]!.n, 0);
  await assertLedgerAddsUp(app);
});
