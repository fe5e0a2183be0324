/**
 * `npm run bench:abuse`: does one Atrium process keep serving everyone else
 * while it is flooded with the most expensive GraphQL operations it still
 * accepts? It starts a server over a seeded database (300 audit events, 150
 * users), finds for each heavy field the most aliases the caps accept, times
 * each such operation alone (server time), then floods the server with them
 * from several connections while a separate thread probes GET /v1/health, and
 * samples the server's RSS before, during and 30 s after the flood.
 *
 * The per-credential and per-IP budgets are raised for the run: with them in
 * place the flood is refused (429) within seconds, and what is measured here
 * is what the operation caps bound, the worst an attacker with enough
 * credentials gets. Loopback only; every loop is bounded.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { getIntrospectionQuery } from 'graphql';
import { loadConfig } from '../src/config';
import { boot, inContext } from '../src/boot';
import { currentEm } from '../src/db/unit-of-work';
import { hashPassword } from '../src/auth/password';
import { User } from '../src/domains/identity/user.entity';
import { Company } from '../src/domains/identity/company.entity';

const FLOOD_SECONDS = Number(process.env.BENCH_ABUSE_SECONDS ?? 20);
const CONNECTIONS = Number(process.env.BENCH_ABUSE_CONNECTIONS ?? 8);
const SETTLE_SECONDS = Number(process.env.BENCH_ABUSE_SETTLE_SECONDS ?? 30);
const PROBE_EVERY_MS = 50;
const ROOT = path.resolve(__dirname, '../..');
const EMAIL = 'abuse@example.com';
const PASSWORD = 'bench-password-long-enough';
/** Extra node flags for the server (e.g. --trace-gc), space-separated. */
const SERVER_FLAGS = (process.env.BENCH_ABUSE_NODE_FLAGS ?? '').split(' ').filter(Boolean);
const hasTaskset = spawnSync('taskset', ['-V']).status === 0;

if (hasTaskset && !process.env.BENCH_PINNED) {
  // The load generator on core 0, the server on core 1 (below).
  const child = spawnSync('taskset', ['-c', '0', process.execPath, __filename], { stdio: 'inherit', env: { ...process.env, BENCH_PINNED: '1' } });
  process.exit(child.status ?? 1);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Seeds the database the way the server would, through the domain services, before the server starts. */
async function seed(env: Record<string, string>) {
  const atrium = await boot(loadConfig(env));
  try {
    await inContext(atrium.kernel.orm, async () => {
      const { company, user } = await atrium.domains.identity.accounts.createCompanyWithOwner({ email: EMAIL, password: PASSWORD, company: 'Abuse' });
      const em = currentEm(atrium.kernel.orm);
      const passwordHash = await hashPassword(PASSWORD, 1024);
      for (let i = 0; i < 150; i++) {
        em.create(User, { company: em.getReference(Company, company.id), email: `user-${i}@example.com`, name: `User ${i}`, passwordHash, role: 'member' });
      }
      for (let i = 0; i < 300; i++) {
        await atrium.domains.audit.log.record({
          action: 'bench.event',
          companyId: company.id,
          actor: { actorType: 'user', actorId: user.id, actorLabel: EMAIL },
          meta: { ip: '127.0.0.1', requestId: `bench-${i}`, userAgent: 'bench' },
          targetType: 'user',
          targetId: user.id,
          data: { n: i, note: 'x'.repeat(200) },
        });
      }
      await em.flush();
    });
  } finally {
    await atrium.close();
  }
}

function startServer(port: number, env: Record<string, string>): Promise<ChildProcess> {
  const script = path.join(ROOT, 'dist/src/main.js');
  const child = spawn(hasTaskset ? 'taskset' : process.execPath, hasTaskset ? ['-c', '1', process.execPath, ...SERVER_FLAGS, script] : [...SERVER_FLAGS, script], {
    env: { ...process.env, ...env, PORT: String(port) },
    // The server's own output only when asked for (its flags may print, e.g. --trace-gc).
    stdio: ['ignore', SERVER_FLAGS.length ? 'inherit' : 'ignore', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the server exited with ${code}`)));
    void (async () => {
      for (let i = 0; i < 600; i++) {
        try {
          if ((await fetch(`http://127.0.0.1:${port}/v1/health`)).ok) return resolve(child);
        } catch {
          // not listening yet
        }
        await sleep(100);
      }
      reject(new Error('the server did not start'));
    })();
  });
}

function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

interface Heavy {
  name: string;
  /** The operation with `n` aliases of the field. */
  query: (n: number) => string;
  token: boolean;
}

interface Accepted {
  name: string;
  query: string;
  aliases: number;
  token: boolean;
}

async function post(base: string, query: string, token: string | undefined): Promise<{ status: number; ms: number; bytes: number }> {
  const started = performance.now();
  const res = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ query }),
  });
  const bytes = (await res.arrayBuffer()).byteLength;
  return { status: res.status, ms: performance.now() - started, bytes };
}

/** Every field of a type a client can select without arguments: scalars and enums, as a full client would ask. */
async function scalarFields(base: string, token: string, type: string): Promise<string> {
  const res = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: `{ __type(name: "${type}") { fields { name args { name } type { kind ofType { kind ofType { kind } } } } } }` }),
  });
  const body = (await res.json()) as { data: { __type: { fields: { name: string; args: unknown[]; type: { kind: string; ofType?: { kind: string; ofType?: { kind: string } } } }[] } } };
  const leaf = (t: { kind: string; ofType?: { kind: string; ofType?: { kind: string } } } | undefined): boolean =>
    !!t && (t.kind === 'SCALAR' || t.kind === 'ENUM' || ((t.kind === 'NON_NULL' || t.kind === 'LIST') && leaf(t.ofType as never)));
  return body.data.__type.fields.filter((f) => f.args.length === 0 && leaf(f.type)).map((f) => f.name).join(' ');
}

/** The most aliases of the field the server accepts (not 400), between 1 and 100. */
async function mostAccepted(base: string, heavy: Heavy, token: string): Promise<Accepted | undefined> {
  const accepts = async (n: number) => (await post(base, heavy.query(n), heavy.token ? token : undefined)).status !== 400;
  if (!(await accepts(1))) return undefined;
  let low = 1;
  let high = 100;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (await accepts(mid)) low = mid;
    else high = mid - 1;
  }
  return { name: heavy.name, query: heavy.query(low), aliases: low, token: heavy.token };
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const PROBER = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const latencies = [];
let stop = false;
parentPort.on('message', () => { stop = true; });
function probe() {
  if (stop) return parentPort.postMessage(latencies);
  const started = performance.now();
  http.get(workerData.url, { agent }, (res) => {
    res.resume();
    res.on('end', () => {
      latencies.push(performance.now() - started);
      setTimeout(probe, Math.max(0, workerData.every - (performance.now() - started)));
    });
  }).on('error', () => setTimeout(probe, workerData.every));
}
probe();
`;

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-abuse-'));
  const port = 20000 + Math.floor(Math.random() * 20000);
  const env = {
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    SCRYPT_COST: '1024',
    RATE_LIMIT_AUTHENTICATED: '100000000',
    RATE_LIMIT_ANONYMOUS: '100000000',
  };
  let server: ChildProcess | undefined;
  try {
    console.log('seeding 300 audit events and 150 users');
    await seed(env);
    server = await startServer(port, env);
    const base = `http://127.0.0.1:${port}`;
    const login = await fetch(`${base}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
    });
    const { access_token: token } = (await login.json()) as { access_token: string };

    const aliased = (n: number, field: string) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: ${field}`).join(' ')} }`;
    const auditFields = await scalarFields(base, token, 'AuditEvent');
    const userFields = await scalarFields(base, token, 'AdminUser');
    const modelFields = await scalarFields(base, token, 'Model');
    const introspection = getIntrospectionQuery().replace(/^\s*query IntrospectionQuery\s*\{/, '').replace(/\}\s*fragment[\s\S]*$/, '');
    const fragments = getIntrospectionQuery().slice(getIntrospectionQuery().indexOf('fragment'));
    const heavies: Heavy[] = [
      { name: 'auditLog(perPage: 100)', token: true, query: (n) => aliased(n, `auditLog(perPage: 100) { items { ${auditFields} } total }`) },
      { name: 'adminUsers(perPage: 100)', token: true, query: (n) => aliased(n, `adminUsers(perPage: 100) { items { ${userFields} } total }`) },
      { name: 'models', token: true, query: (n) => aliased(n, `models { ${modelFields} }`) },
      { name: 'health (no credential)', token: false, query: (n) => aliased(n, 'health { database status uptimeSeconds version }') },
      { name: 'introspection', token: true, query: (n) => `${aliased(n, introspection.trim())}\n${fragments}` },
    ];

    console.log('finding the most aliases each heavy field is accepted with');
    const accepted: Accepted[] = [];
    // BENCH_ABUSE_ONLY=<part of a name> floods with the matching operations alone (to see which hurts).
    for (const heavy of heavies.filter((h) => h.name.includes(process.env.BENCH_ABUSE_ONLY ?? ''))) {
      const found = await mostAccepted(base, heavy, token);
      if (found) accepted.push(found);
    }

    console.log('timing each accepted operation alone (10 runs)');
    const alone: { name: string; aliases: number; medianMs: number; maxMs: number; kb: number }[] = [];
    for (const op of accepted) {
      const runs: number[] = [];
      let bytes = 0;
      for (let i = 0; i < 10; i++) {
        const run = await post(base, op.query, op.token ? token : undefined);
        if (run.status !== 200) throw new Error(`${op.name} answered ${run.status}`);
        runs.push(run.ms);
        bytes = run.bytes;
      }
      runs.sort((a, b) => a - b);
      alone.push({ name: op.name, aliases: op.aliases, medianMs: percentile(runs, 50), maxMs: runs[runs.length - 1]!, kb: Math.round(bytes / 1024) });
    }
    console.table(alone);

    await sleep(2000);
    const rssBefore = rssMb(server.pid!);
    let rssPeak = rssBefore;
    const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssMb(server!.pid!))), 100);

    console.log(`flooding for ${FLOOD_SECONDS} s from ${CONNECTIONS} connections while probing /v1/health every ${PROBE_EVERY_MS} ms`);
    const prober = new Worker(PROBER, { eval: true, workerData: { url: `${base}/v1/health`, every: PROBE_EVERY_MS } });
    const until = Date.now() + FLOOD_SECONDS * 1000;
    const floodLatencies: number[] = [];
    const statuses = new Map<number, number>();
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async (_, c) => {
        for (let i = c; Date.now() < until; i++) {
          const op = accepted[i % accepted.length]!;
          const run = await post(base, op.query, op.token ? token : undefined);
          floodLatencies.push(run.ms);
          statuses.set(run.status, (statuses.get(run.status) ?? 0) + 1);
        }
      }),
    );
    const probes = await new Promise<number[]>((resolve) => {
      prober.once('message', resolve);
      prober.postMessage('stop');
    });
    await prober.terminate();
    clearInterval(sampler);
    const rssAtEnd = rssMb(server.pid!);

    console.log(`waiting ${SETTLE_SECONDS} s for the server to settle`);
    await sleep(SETTLE_SECONDS * 1000);
    const rssAfter = rssMb(server.pid!);

    probes.sort((a, b) => a - b);
    floodLatencies.sort((a, b) => a - b);
    const longestAlone = Math.max(...alone.map((a) => a.maxMs));
    const rows = [
      { figure: 'health p50 during the flood (ms)', value: percentile(probes, 50).toFixed(1), target: '' },
      { figure: 'health p99 during the flood (ms)', value: percentile(probes, 99).toFixed(1), target: '< 100' },
      { figure: 'health max during the flood (ms)', value: probes[probes.length - 1]!.toFixed(1), target: '' },
      { figure: 'health probes', value: String(probes.length), target: '' },
      { figure: 'longest accepted operation alone (ms)', value: longestAlone.toFixed(1), target: '< 1000' },
      { figure: 'flood operations answered (status: count)', value: [...statuses].map(([s, n]) => `${s}: ${n}`).join(', '), target: '' },
      { figure: 'flood operation p50 / p99 latency (ms)', value: `${percentile(floodLatencies, 50).toFixed(0)} / ${percentile(floodLatencies, 99).toFixed(0)}`, target: '' },
      { figure: 'RSS before (MB)', value: rssBefore.toFixed(0), target: '' },
      { figure: 'RSS peak (MB)', value: rssPeak.toFixed(0), target: '' },
      { figure: 'RSS at the end of the flood (MB)', value: rssAtEnd.toFixed(0), target: '' },
      { figure: `RSS ${SETTLE_SECONDS} s after (MB)`, value: rssAfter.toFixed(0), target: `< ${(rssBefore + 50).toFixed(0)} (start + 50)` },
    ];
    console.table(rows);
    const met = percentile(probes, 99) < 100 && longestAlone < 1000 && rssAfter < rssBefore + 50;
    console.log(met ? 'all targets met' : 'a target was missed (see above)');
  } finally {
    server?.kill('SIGTERM');
    await sleep(500);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
