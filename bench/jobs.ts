/**
 * `npm run bench:jobs`: bulk throughput and memory, and job-progress fan-out.
 *
 * 1. Bulk: a 1,000-row and a 100,000-row CSV job, each on a fresh server
 *    (a child process, so its peak RSS is its own: VmHWM), against the
 *    loopback OpenAI-compatible fake answering at once. Reports rows per
 *    second (the job's started_at to finished_at) and the server's peak RSS.
 *    Targets: at least 1,000 rows/s; the 100,000-row job's peak RSS less
 *    than 100 MB above the 1,000-row job's.
 * 2. Fan-out: BENCH_SUBSCRIBERS (10,000) graphql-ws subscribers of
 *    companyJobProgress on one server, from worker threads of this process.
 *    Each trial starts a bulk job whose provider never answers and cancels
 *    it; the latency of a subscriber is the time from sending the cancel to
 *    its socket receiving the "cancelled" update. Targets: p99 under 100 ms,
 *    the server's RSS under 1.5 GB. The same clients first measure the
 *    reference, a bare ws server broadcasting an update of the same shape
 *    (bench/ws-broadcast-server.ts): the floor of the target on this machine.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import { fakeOpenAi } from '../test/fake-ai';
import { makeCsv, multipartForm } from '../test/fixtures/document-files';

const SMALL = Number(process.env.BENCH_SMALL_ROWS ?? 1000);
const LARGE = Number(process.env.BENCH_LARGE_ROWS ?? 100_000);
const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 10_000);
const TRIALS = Number(process.env.BENCH_FANOUT_TRIALS ?? 5);
const CLIENT_THREADS = Number(process.env.BENCH_CLIENT_THREADS ?? 2);
const PASSWORD = 'correct-horse-battery-staple';
const CHILD = path.resolve(__dirname, '../test/fixtures/server-child.js');

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const mb = (kb: number) => `${(kb / 1024).toFixed(0)} MB`;

/** Peak and current RSS of a child process, in kB. */
function memoryOf(child: ChildProcess): { peakKb: number; rssKb: number } {
  const status = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8');
  return { peakKb: Number(/VmHWM:\s+(\d+)/.exec(status)![1]), rssKb: Number(/VmRSS:\s+(\d+)/.exec(status)![1]) };
}

interface Server {
  child: ChildProcess;
  base: string;
  port: number;
  companyId: string;
  token: string;
  key: string;
  /** Peak and current RSS of the server process, in kB. */
  memory(): { peakKb: number; rssKb: number };
  stop(): Promise<void>;
}

async function server(env: Record<string, string>): Promise<Server> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-bench-jobs-'));
  const flags = (process.env.BENCH_JOBS_NODE_FLAGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...flags, CHILD, '--seed', 'bench@example.com'], {
    env: {
      ...process.env,
      DATA_DIR: dir,
      SCRYPT_COST: '1024',
      LOG_LEVEL: 'warn',
      AI_MAX_RETRIES: '0',
      AI_DEFAULT_MODEL: 'gpt-4o-mini',
      AI_MAX_OUTPUT_TOKENS: '16',
      SEED_CREDITS: String(LARGE * 2 + 100_000),
      RATE_LIMIT_MODULE_KEY: '1000000',
      RATE_LIMIT_AUTHENTICATED: '100000000',
      RATE_LIMIT_ANONYMOUS: '100000000',
      BULK_MAX_ROWS: String(LARGE),
      BULK_MAX_CONCURRENT: '1000',
      UPLOAD_MAX_MB: '200',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  for (let i = 0; i < 1200 && !/listening \d+/.test(out); i++) await sleep(25);
  const companyId = /seeded (\S+)/.exec(out)?.[1];
  const port = Number(/listening (\d+)/.exec(out)?.[1]);
  if (!companyId || !port) throw new Error(`the server did not start: ${out}`);
  const base = `http://127.0.0.1:${port}/v1`;
  const json = { 'content-type': 'application/json' };
  const login = (await (await fetch(`${base}/auth/login`, { method: 'POST', headers: json, body: JSON.stringify({ email: 'bench@example.com', password: PASSWORD }) })).json()) as { access_token: string };
  const key = (await (await fetch(`${base}/apikeys`, { method: 'POST', headers: { ...json, authorization: `Bearer ${login.access_token}` }, body: JSON.stringify({ name: 'bench' }) })).json()) as { key: string };
  return {
    child,
    base,
    port,
    companyId,
    token: login.access_token,
    key: key.key,
    memory: () => memoryOf(child),
    async stop() {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function submit(s: Server, csv: Buffer): Promise<string> {
  const form = multipartForm({ input_column: 'text', prompt_template: 'Sentiment of: {text}' }, { content: csv, filename: 'rows.csv' });
  const res = await fetch(`${s.base}/bulk/submit`, { method: 'POST', headers: { ...form.headers, authorization: `Bearer ${s.key}` }, body: form.payload });
  if (res.status !== 202) throw new Error(`submit ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { job_id: string }).job_id;
}

async function status(s: Server, id: string) {
  return (await (await fetch(`${s.base}/bulk/status/${id}`, { headers: { authorization: `Bearer ${s.key}` } })).json()) as {
    status: string;
    rows_completed: number;
    rows_failed: number;
    started_at: string | null;
    finished_at: string | null;
    created_at: string;
  };
}

async function bulkRun(rows: number) {
  const cleanups: (() => unknown)[] = [];
  const fake = await fakeOpenAi({ after: (fn) => cleanups.push(fn) }, () => ({ content: 'positive', usage: { prompt: 12, completion: 1 } }));
  const s = await server({ AI_BASE_URL: fake.url });
  const csv = makeCsv([['id', 'text'], ...Array.from({ length: rows }, (_, i) => [i + 1, `The service on visit ${i + 1} was quick and friendly, and the food arrived warm.`])]);
  const submitted = Date.now();
  const id = await submit(s, csv);
  let last = await status(s, id);
  let shown = 0;
  while (last.status !== 'completed' && last.status !== 'failed') {
    await sleep(500);
    last = await status(s, id);
    if (rows >= 10_000 && last.rows_completed - shown >= rows / 10) {
      shown = last.rows_completed;
      process.stdout.write(`  … ${last.rows_completed} of ${rows} rows\n`);
    }
  }
  const seconds = (Date.parse(last.finished_at!) - Date.parse(last.started_at!)) / 1000;
  const memory = s.memory();
  await s.stop();
  for (const fn of cleanups) await fn();
  if (last.rows_completed !== rows) throw new Error(`${rows}-row job: ${JSON.stringify(last)}`);
  return { rows, seconds, perSecond: rows / seconds, total: (Date.now() - submitted) / 1000, peakKb: memory.peakKb };
}

/** Client sockets in a worker thread: graphql-transport-ws by hand, recording when each socket sees a job's "cancelled" update. */
const CLIENT_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const WebSocket = require(workerData.wsPath);
const { url, token, count } = workerData;
const sockets = [];
let ready = 0;
let expected = null;
const seen = [];
function open(i) {
  const ws = new WebSocket(url, 'graphql-transport-ws', { perMessageDeflate: false });
  ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: { authorization: 'Bearer ' + token } })));
  ws.on('message', (data) => {
    const at = performance.timeOrigin + performance.now();
    const text = data.toString();
    if (expected && text.includes(expected) && text.includes('"cancelled"')) { seen.push(at); if (seen.length === count) parentPort.postMessage({ type: 'trial', times: seen.splice(0) }); return; }
    if (text.includes('connection_ack')) {
      ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription { companyJobProgress { jobId status } }' } }));
      // The subscription is live once the server has read it; a short pause covers that.
      setTimeout(() => { ready++; if (ready === count) parentPort.postMessage({ type: 'ready' }); }, 50);
    }
  });
  ws.on('error', (e) => parentPort.postMessage({ type: 'error', message: String(e) }));
  sockets.push(ws);
}
let i = 0;
(function batch() { for (let n = 0; n < 200 && i < count; n++) open(i++); if (i < count) setTimeout(batch, 20); })();
parentPort.on('message', (m) => { if (m.type === 'expect') expected = m.jobId; if (m.type === 'close') { for (const s of sockets) s.terminate(); parentPort.postMessage({ type: 'closed' }); } });
`;

interface FanOutRun {
  p50: number;
  p99: number;
  max: number;
}

/**
 * SUBSCRIBERS client sockets (CLIENT_THREADS worker threads) on `url`, then
 * TRIALS trials: `prepare` readies an update (its job id), `fire` sets it
 * off, and each socket's latency is from `fire` to receiving it.
 */
async function measureFanOut(
  label: string,
  url: string,
  token: string,
  prepare: () => Promise<{ jobId: string; fire: () => Promise<void> }>,
  afterTrial: () => void = () => {},
): Promise<FanOutRun> {
  const perThread = Math.ceil(SUBSCRIBERS / CLIENT_THREADS);
  const wsPath = require.resolve('ws');
  const workers = Array.from({ length: CLIENT_THREADS }, (_, i) => {
    const count = Math.min(perThread, SUBSCRIBERS - i * perThread);
    return new Worker(CLIENT_SOURCE, { eval: true, workerData: { url, token, count, wsPath } });
  });
  const next = (worker: Worker, type: string) =>
    new Promise<{ times?: number[] }>((resolve, reject) => {
      const listener = (m: { type: string; message?: string; times?: number[] }) => {
        if (m.type === 'error') return reject(new Error(m.message));
        if (m.type !== type) return;
        worker.off('message', listener);
        resolve(m);
      };
      worker.on('message', listener);
    });
  const started = Date.now();
  await Promise.all(workers.map((w) => next(w, 'ready')));
  process.stdout.write(`  ${label}: ${SUBSCRIBERS} subscribers connected in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  const latencies: number[] = [];
  for (let trial = 0; trial < TRIALS; trial++) {
    const { jobId, fire } = await prepare();
    for (const w of workers) w.postMessage({ type: 'expect', jobId });
    const arrivals = workers.map((w) => next(w, 'trial'));
    const t0 = performance.timeOrigin + performance.now();
    await fire();
    const times = (await Promise.all(arrivals)).flatMap((m) => m.times!).map((at) => at - t0);
    latencies.push(...times);
    afterTrial();
    process.stdout.write(`  ${label} trial ${trial + 1}: ${times.length} received, p50 ${percentile(times, 0.5).toFixed(1)} ms, p99 ${percentile(times, 0.99).toFixed(1)} ms\n`);
  }
  await Promise.all(workers.map((w) => (w.postMessage({ type: 'close' }), next(w, 'closed'))));
  await Promise.all(workers.map((w) => w.terminate()));
  return { p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), max: Math.max(...latencies) };
}

/** Atrium: each trial a one-row bulk job whose provider never answers, cancelled; the update is its "cancelled" state. */
async function fanOut(): Promise<FanOutRun & { beforeKb: number; peakKb: number }> {
  const cleanups: (() => unknown)[] = [];
  // A provider that never answers in time: the job stays running until it is cancelled.
  const fake = await fakeOpenAi({ after: (fn) => cleanups.push(fn) }, () => ({ content: 'late', delayMs: 120_000 }));
  const s = await server({ AI_BASE_URL: fake.url, AI_TIMEOUT_SECONDS: '300' });
  const before = s.memory().rssKb;
  let peakKb = 0;
  const run = await measureFanOut(
    'Atrium',
    `ws://127.0.0.1:${s.port}/graphql`,
    s.token,
    async () => {
      const id = await submit(s, makeCsv([['id', 'text'], [1, 'one row that waits']]));
      // Wait until the job runs (its running update has gone out to everyone).
      for (let i = 0; i < 200 && (await status(s, id)).status !== 'running'; i++) await sleep(25);
      await sleep(1500);
      return {
        jobId: id,
        fire: async () => {
          const res = await fetch(`${s.base}/bulk/cancel/${id}`, { method: 'POST', headers: { authorization: `Bearer ${s.key}` } });
          if (res.status !== 200) throw new Error(`cancel ${res.status}: ${await res.text()}`);
        },
      };
    },
    () => (peakKb = Math.max(peakKb, s.memory().rssKb)),
  );
  await s.stop();
  for (const fn of cleanups) await fn();
  return { ...run, beforeKb: before, peakKb };
}

/** The reference: the same clients against a bare ws broadcast (bench/ws-broadcast-server.ts). */
async function fanOutReference(): Promise<FanOutRun & { peakKb: number }> {
  const child = spawn(process.execPath, [path.resolve(__dirname, 'ws-broadcast-server.js')], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout!.once('data', (data) => resolve(Number(String(data).trim())));
      child.once('exit', (code) => reject(new Error(`the reference server exited (${code})`)));
    });
    let trial = 0;
    let peakKb = 0;
    const run = await measureFanOut('reference', `ws://127.0.0.1:${port}/graphql`, 'none', async () => {
      const jobId = `reference-${++trial}`;
      await sleep(1500);
      return {
        jobId,
        fire: async () => {
          const res = await fetch(`http://127.0.0.1:${port}/fire?job=${jobId}`, { method: 'POST' });
          if (res.status !== 200) throw new Error(`fire ${res.status}`);
        },
      };
    }, () => (peakKb = Math.max(peakKb, memoryOf(child).rssKb)));
    return { ...run, peakKb };
  } finally {
    child.kill();
  }
}

async function main() {
  const only = process.env.BENCH_JOBS_ONLY;
  if (only !== 'fanout') {
    process.stdout.write(`Bulk: ${SMALL} and ${LARGE} rows against a provider that answers at once\n`);
    const small = await bulkRun(SMALL);
    const large = await bulkRun(LARGE);
    for (const r of [small, large]) {
      process.stdout.write(`  ${r.rows} rows: ${r.perSecond.toFixed(0)} rows/s (${r.seconds.toFixed(1)} s processing, ${r.total.toFixed(1)} s from upload), server peak RSS ${mb(r.peakKb)}\n`);
    }
    const growth = (large.peakKb - small.peakKb) / 1024;
    process.stdout.write(`  target >= 1000 rows/s: ${large.perSecond >= 1000 ? 'met' : 'NOT met'}; peak RSS growth ${growth.toFixed(0)} MB, target < 100 MB: ${growth < 100 ? 'met' : 'NOT met'}\n`);
  }
  if (only !== 'bulk') {
    process.stdout.write(`Fan-out: ${SUBSCRIBERS} graphql-ws subscribers of companyJobProgress, ${TRIALS} trials\n`);
    const reference = await fanOutReference();
    const f = await fanOut();
    process.stdout.write(
      `  reference (bare ws broadcast): p50 ${reference.p50.toFixed(1)} ms, p99 ${reference.p99.toFixed(1)} ms, max ${reference.max.toFixed(1)} ms, RSS ${mb(reference.peakKb)}\n` +
        `  Atrium: p50 ${f.p50.toFixed(1)} ms, p99 ${f.p99.toFixed(1)} ms (${(f.p99 / reference.p99).toFixed(2)}x the reference), max ${f.max.toFixed(1)} ms; server RSS ${mb(f.beforeKb)} before, ${mb(f.peakKb)} with every socket open\n` +
        `  target p99 < 100 ms: ${f.p99 < 100 ? 'met' : 'NOT met'} (the reference ${reference.p99 < 100 ? 'meets' : 'does not meet'} it on this machine); RSS < 1.5 GB: ${f.peakKb < 1.5 * 1024 * 1024 ? 'met' : 'NOT met'}\n`,
    );
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
