/**
 * `npm run bench:ai`: the AI modules' own cost, in one process.
 *
 * 1. POST /v1/chat through Atrium against POST /v1/chat/completions straight
 *    to the same loopback OpenAI-compatible fake, with the same HTTP client:
 *    Atrium's overhead per call is the difference of the medians (the key,
 *    the rolling and daily limits, the model decision, history, the credit
 *    hold and its commit, the session write, the SDK, one more HTTP hop).
 *    Target: <= 2 ms at p50. In the same rounds, the two parts of that path
 *    the issues require, each timed alone: the same request through the
 *    official `openai` SDK (as the engine makes it, with its fetch) against bare `fetch`, and
 *    a durable credit hold and its commit through the ledger (the billing
 *    issue: reserve before the call, commit after), and Atrium's least
 *    request with the same key (GET /v1/apikeys/verify: the hop, the key,
 *    the limits).
 * 2. POST /v1/rag/query over 10,000 indexed passages (extractive, so only
 *    Atrium's search is timed). Target: p50 <= 20 ms.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../src/app';
import { inContext } from '../src/boot';
import { tuneHeapForServing } from '../src/kernel/v8-tuning';
import OpenAI from 'openai';
import { fakeOpenAi } from '../test/fake-ai';
import { providerFetch } from '../src/domains/ai/provider-fetch';

const CALLS = Number(process.env.BENCH_CALLS ?? 2000);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 500);
const PASSAGES = Number(process.env.BENCH_PASSAGES ?? 10_000);

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!;

async function timeEach(n: number, call: (i: number) => Promise<void>): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = process.hrtime.bigint();
    await call(i);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return times;
}

/** A listening app on a fresh SQLite file, with a company, a user's AI-modules key and plenty of credits. */
async function start(env: Record<string, string>) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-bench-ai-'));
  const app = await buildApp({ env: { DATA_DIR: dir, SCRYPT_COST: '1024', LOG_LEVEL: 'warn', RATE_LIMIT_MODULE_KEY: '1000000', ...env }, logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const credentials = { email: 'bench@example.com', password: 'correct-horse-battery-staple' };
  const { user } = await inContext(app.kernel.orm, () => app.domains.identity.accounts.createCompanyWithOwner({ ...credentials, company: 'Bench' }));
  const json = { 'content-type': 'application/json' };
  const login = (await (await fetch(`${base}/v1/auth/login`, { method: 'POST', headers: json, body: JSON.stringify(credentials) })).json()) as { access_token: string };
  const created = (await (
    await fetch(`${base}/v1/apikeys`, { method: 'POST', headers: { ...json, authorization: `Bearer ${login.access_token}` }, body: JSON.stringify({ name: 'bench' }) })
  ).json()) as { key: string };
  await inContext(app.kernel.orm, () => app.domains.billing.ledger.topUp({ companyId: user.company.id, credits: 100_000_000, key: 'bench' }));
  await app.kernel.orm.em.fork().getConnection().execute('update plans set daily_requests = 100000000');
  return {
    app,
    base,
    companyId: user.company.id,
    key: created.key,
    headers: { ...json, authorization: `Bearer ${created.key}` },
    close: async () => {
      await app.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function chatOverhead() {
  const cleanups: (() => unknown)[] = [];
  const fake = await fakeOpenAi({ after: (fn) => cleanups.push(fn) }, () => ({ content: 'A short answer of a few words.', usage: { prompt: 60, completion: 8 } }));
  const atrium = await start({ AI_BASE_URL: fake.url, AI_MAX_RETRIES: '0' });
  const direct = (i: number) =>
    fetch(`${fake.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'You are helpful.' }, { role: 'user', content: `question ${i}` }], max_tokens: 1024 }),
    })
      .then((r) => r.json())
      .then(() => undefined);
  const throughAtrium = (i: number) =>
    fetch(`${atrium.base}/v1/chat`, { method: 'POST', headers: atrium.headers, body: JSON.stringify({ message: `question ${i}`, agent: 'general', session_id: `s-${i % 50}` }) }).then(
      async (r) => {
        if (r.status !== 200) throw new Error(`chat ${r.status}: ${await r.text()}`);
        await r.json();
      },
    );
  // The same request as `direct`, made the way the engine makes it.
  const sdk = new OpenAI({ baseURL: fake.url, apiKey: 'none', maxRetries: 0, timeout: 60_000, fetch: providerFetch });
  const throughSdk = (i: number) =>
    sdk.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'You are helpful.' }, { role: 'user', content: `question ${i}` }], max_tokens: 1024 })
      .then(() => undefined);
  const { ledger } = atrium.app.domains.billing;
  const companyId = atrium.companyId;
  // A hold and its commit, each in its own unit of work as a request's are.
  const holdAndCommit = (i: number) =>
    inContext(atrium.app.kernel.orm, async () => {
      const hold = await ledger.reserve({ companyId, credits: 2, key: `bench-hold-${i}`, feature: 'chat', model: 'gpt-4o-mini' });
      await ledger.commit(hold.id, { credits: 1, tokens: 68 });
    });
  // Atrium's least request with the same key: the HTTP hop, the key and the limits, nothing of chat.
  const verify = () =>
    fetch(`${atrium.base}/v1/apikeys/verify`, { headers: { authorization: `Bearer ${atrium.key}` } }).then(async (r) => {
      if (r.status !== 200) throw new Error(`verify ${r.status}: ${await r.text()}`);
      await r.json();
    });
  // Warm every path, then interleave rounds so drift hits all alike.
  await timeEach(200, direct);
  await timeEach(200, throughAtrium);
  await timeEach(200, throughSdk);
  await timeEach(200, (i) => holdAndCommit(-1 - i));
  await timeEach(200, verify);
  const directTimes: number[] = [];
  const atriumTimes: number[] = [];
  const sdkTimes: number[] = [];
  const ledgerTimes: number[] = [];
  const verifyTimes: number[] = [];
  for (let round = 0; round < 5; round++) {
    directTimes.push(...(await timeEach(CALLS / 5, direct)));
    atriumTimes.push(...(await timeEach(CALLS / 5, throughAtrium)));
    sdkTimes.push(...(await timeEach(CALLS / 5, throughSdk)));
    ledgerTimes.push(...(await timeEach(CALLS / 5, (i) => holdAndCommit(round * CALLS + i))));
    verifyTimes.push(...(await timeEach(CALLS / 5, verify)));
    process.stderr.write(`chat round ${round + 1}/5\n`);
  }
  const p50Direct = percentile(directTimes, 0.5);
  const p50Atrium = percentile(atriumTimes, 0.5);
  const sdkExtra = percentile(sdkTimes, 0.5) - p50Direct;
  const p50Ledger = percentile(ledgerTimes, 0.5);
  console.log(
    `chat: p50 direct ${p50Direct.toFixed(2)} ms, through Atrium ${p50Atrium.toFixed(2)} ms, overhead ${(p50Atrium - p50Direct).toFixed(2)} ms ` +
      `(p90 ${percentile(atriumTimes, 0.9).toFixed(2)} against ${percentile(directTimes, 0.9).toFixed(2)}); target <= 2 ms\n` +
      `  required parts, each alone: the official SDK ${sdkExtra.toFixed(2)} ms over bare fetch (p50 ${percentile(sdkTimes, 0.5).toFixed(2)} ms), ` +
      `a credit hold and its commit ${p50Ledger.toFixed(2)} ms: ${(sdkExtra + p50Ledger).toFixed(2)} ms of the 2 ms; ` +
      `Atrium's least request with the same key (GET /v1/apikeys/verify) p50 ${percentile(verifyTimes, 0.5).toFixed(2)} ms`,
  );
  await atrium.close();
  for (const fn of cleanups) await fn();
}

async function ragQuery() {
  // No provider: /rag/query is extractive, so only Atrium's search is timed.
  const atrium = await start({});
  const vocabulary = Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}x`);
  let seed = 42;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const sentence = () => `${Array.from({ length: 12 }, () => vocabulary[Math.floor(random() * vocabulary.length)]).join(' ')}.`;
  const count = async () =>
    ((await atrium.app.kernel.orm.em.fork().getConnection().execute('select count(*) as n from document_chunks_fts')) as { n: number }[])[0]!.n;
  for (let d = 0; (await count()) < PASSAGES; d++) {
    // Paragraphs of about 700 characters: a passage each, 100 to a document.
    const text = Array.from({ length: 100 }, () => Array.from({ length: 6 }, sentence).join(' ')).join('\n\n');
    const form = new FormData();
    form.append('file', new Blob([text], { type: 'text/plain' }), `doc-${d}.txt`);
    const r = await fetch(`${atrium.base}/v1/rag/upload`, { method: 'POST', headers: { authorization: `Bearer ${atrium.key}` }, body: form });
    if (r.status !== 201) throw new Error(`upload ${r.status}: ${await r.text()}`);
  }
  const passages = await count();
  const query = (i: number) =>
    fetch(`${atrium.base}/v1/rag/query`, {
      method: 'POST',
      headers: atrium.headers,
      body: JSON.stringify({ query: `${vocabulary[i % 5000]} ${vocabulary[(i * 7) % 5000]} ${vocabulary[(i * 13) % 5000]}` }),
    }).then(async (r) => {
      if (r.status !== 200) throw new Error(`query ${r.status}: ${await r.text()}`);
      await r.json();
    });
  await timeEach(50, query);
  const times = await timeEach(QUERIES, query);
  console.log(`rag/query over ${passages} passages: p50 ${percentile(times, 0.5).toFixed(2)} ms, p90 ${percentile(times, 0.9).toFixed(2)} ms; target p50 <= 20 ms`);
  await atrium.close();
}

async function main() {
  // The server runs its requests in this process, tuned as a serving process is (`node --allocation-site-pretenuring` keeps V8's default).
  tuneHeapForServing();
  // BENCH_AI_ONLY=chat|rag runs one part (for a profile of it, say).
  const only = process.env.BENCH_AI_ONLY;
  if (only !== 'rag') await chatOverhead();
  if (only !== 'chat') await ragQuery();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
