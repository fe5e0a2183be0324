/**
 * `npm run bench`: autocannon against a raw fastify hello-world (the baseline)
 * and Atrium, in one run, interleaved, reporting medians as ratios to the
 * baseline. Servers run pinned to core 1 and the load generator to core 0
 * when `taskset` exists. Only loopback traffic; every loop is bounded.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const ROOT = path.resolve(__dirname, '../..');
const hasTaskset = spawnSync('taskset', ['-V']).status === 0;

if (hasTaskset && !process.env.BENCH_PINNED) {
  // Re-run this script pinned to core 0 so the load generator stays off the servers' core.
  const child = spawnSync('taskset', ['-c', '0', process.execPath, __filename], {
    stdio: 'inherit',
    env: { ...process.env, BENCH_PINNED: '1' },
  });
  process.exit(child.status ?? 1);
}

interface Scenario {
  name: string;
  target?: number;
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
}

function start(script: string, port: number, env: Record<string, string>): Promise<ChildProcess> {
  const args = hasTaskset ? ['-c', '1', process.execPath, script] : [script];
  const child = spawn(hasTaskset ? 'taskset' : process.execPath, args, {
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} did not start`)), 60_000);
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
    child.stdout!.on('data', () => undefined);
    const poll = async () => {
      for (let i = 0; i < 600; i++) {
        try {
          const res = await fetch(`http://127.0.0.1:${port}/${script.includes('hello') ? '' : 'v1/health'}`);
          if (res.ok) {
            clearTimeout(timer);
            return resolve(child);
          }
        } catch {
          // not listening yet
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    void poll();
  });
}

async function load(s: Scenario, duration: number): Promise<number> {
  const result = await autocannon({
    url: s.url,
    method: s.method ?? 'GET',
    headers: s.headers,
    body: s.body,
    connections: CONNECTIONS,
    duration,
  });
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${s.name}: ${result.non2xx} non-2xx answers, ${result.errors} errors; the figure would be meaningless`);
  }
  return result.requests.average;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-bench-'));
  const email = 'bench@example.com';
  const password = 'bench-password-long-enough';
  const helloPort = 18_081;
  const atriumPort = 18_082;
  const headersPort = 18_083;
  const ceilingPort = 18_084;
  const children: ChildProcess[] = [];
  try {
    children.push(
      await start(path.join(ROOT, 'dist/src/main.js'), atriumPort, {
        DATA_DIR: dataDir,
        LOG_LEVEL: 'warn',
        ATRIUM_OWNER_EMAIL: email,
        ATRIUM_OWNER_PASSWORD: password,
        ATRIUM_OWNER_COMPANY: 'Bench',
        // The budgets are not what is measured here.
        RATE_LIMIT_AUTHENTICATED: '100000000',
        RATE_LIMIT_ANONYMOUS: '100000000',
      }),
    );
    const base = `http://127.0.0.1:${atriumPort}`;
    const login = await fetch(`${base}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    const { access_token: token } = (await login.json()) as { access_token: string };
    const auth = { authorization: `Bearer ${token}` };
    const profile = await (await fetch(`${base}/v1/me/profile`, { headers: auth })).text();
    const hello = path.join(ROOT, 'dist/bench/hello-server.js');
    children.push(await start(hello, helloPort, {}));
    children.push(await start(hello, headersPort, { BENCH_ATRIUM_HEADERS: '1' }));
    children.push(await start(hello, ceilingPort, { BENCH_ATRIUM_HEADERS: '1', BENCH_BODY: profile }));
    const scenarios: Scenario[] = [
      { name: 'baseline: raw fastify hello-world', url: `http://127.0.0.1:${helloPort}/` },
      // For reference, no target: the same hello-world sending the headers every Atrium response carries.
      { name: 'raw fastify + Atrium response headers', url: `http://127.0.0.1:${headersPort}/` },
      // The ceiling of a profile read: Atrium's headers and the profile's exact body, no work at all.
      { name: 'raw fastify + headers + profile body', url: `http://127.0.0.1:${ceilingPort}/` },
      { name: 'GET /v1/health', url: `${base}/v1/health` },
      { name: 'GET /v1/me/profile (Bearer)', target: 0.5, url: `${base}/v1/me/profile`, headers: auth },
      {
        name: 'POST /graphql me (Bearer)',
        target: 0.4,
        url: `${base}/graphql`,
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ me { role authMethod user { id email name } company { id name } } }' }),
      },
    ];
    console.log(`warming up (${scenarios.length} scenarios), then ${ROUNDS} interleaved rounds of ${DURATION}s, ${CONNECTIONS} connections`);
    for (const s of scenarios) await load(s, 2);
    const samples = new Map(scenarios.map((s) => [s.name, [] as number[]]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const s of scenarios) samples.get(s.name)!.push(await load(s, DURATION));
    }
    const baseline = median(samples.get(scenarios[0]!.name)!);
    const rows = scenarios.map((s) => {
      const rps = median(samples.get(s.name)!);
      const ratio = rps / baseline;
      const verdict = s.target === undefined ? '' : ratio >= s.target ? `meets >= ${s.target}` : `BELOW ${s.target}`;
      return { scenario: s.name, 'median req/s': Math.round(rps), 'ratio to baseline': ratio.toFixed(2), target: verdict };
    });
    console.table(rows);
  } finally {
    for (const child of children) child.kill('SIGTERM');
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
