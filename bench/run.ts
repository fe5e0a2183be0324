/**
 * `npm run bench`: autocannon against a raw fastify hello-world, the profile
 * ceiling (the same server sending Atrium's headers and profile body) and
 * Atrium, in one run, interleaved, reporting medians as ratios to the
 * ceiling (the targets' reference) and to the hello-world. With
 * BENCH_COMPARE=<root of another build> that build runs in the same rounds. Servers run pinned to core 1 and the load generator to core 0
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
/** The root of another build (its dist/ compiled, e.g. a checkout of an older commit), measured in the same rounds. */
const COMPARE = process.env.BENCH_COMPARE;
const CEILING = 'ceiling: raw fastify + headers + profile body';
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
  /** The table row its samples count towards (default: its name); instances of one build share a row. */
  row?: string;
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

/** The items in an order drawn from `seed` (xorshift32, Fisher-Yates): the same order for the same seed, run after run. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let state = (seed * 2654435761) >>> 0 || 1;
  for (let i = out.length - 1; i > 0; i--) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    const j = state % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** Table order: the references, then each scenario with the new build before the old. */
function rank(row: string): number {
  const atrium = ['GET /v1/health', 'GET /v1/me/profile', 'POST /graphql'].findIndex((path) => row.includes(path));
  return atrium < 0 ? -1 : atrium * 2 + (row.startsWith('old: ') ? 1 : 0);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const EMAIL = 'bench@example.com';
const PASSWORD = 'bench-password-long-enough';

/** Starts the Atrium build under `root` (its dist/ compiled) over a fresh database; answers its URL, a token and its profile body. */
async function startAtrium(root: string, port: number, dataDir: string, children: ChildProcess[]) {
  children.push(
    await start(path.join(root, 'dist/src/main.js'), port, {
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      ATRIUM_OWNER_EMAIL: EMAIL,
      ATRIUM_OWNER_PASSWORD: PASSWORD,
      ATRIUM_OWNER_COMPANY: 'Bench',
      // The budgets are not what is measured here.
      RATE_LIMIT_AUTHENTICATED: '100000000',
      RATE_LIMIT_ANONYMOUS: '100000000',
    }),
  );
  const base = `http://127.0.0.1:${port}`;
  const login = await fetch(`${base}/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
  });
  const { access_token: token } = (await login.json()) as { access_token: string };
  const auth = { authorization: `Bearer ${token}` };
  const profile = await (await fetch(`${base}/v1/me/profile`, { headers: auth })).text();
  return { base, auth, profile };
}

/**
 * The three Atrium scenarios of one server. `label` names the build (its
 * table rows) and `instance` the server, when a build runs as two.
 */
function atriumScenarios(label: string, instance: string, base: string, auth: Record<string, string>, withTargets: boolean): Scenario[] {
  const scenario = (name: string, rest: Omit<Scenario, 'name' | 'row'>): Scenario => ({ name: `${label}${instance}${name}`, row: `${label}${name}`, ...rest });
  return [
    scenario('GET /v1/health', { url: `${base}/v1/health` }),
    scenario('GET /v1/me/profile (Bearer)', { ...(withTargets ? { target: 0.5 } : {}), url: `${base}/v1/me/profile`, headers: auth }),
    scenario('POST /graphql me (Bearer)', {
      url: `${base}/graphql`,
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ me { role authMethod user { id email name } company { id name } } }' }),
    }),
  ];
}

async function main() {
  const dataDirs: string[] = [];
  const freshDir = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-bench-'));
    dataDirs.push(dir);
    return dir;
  };
  const helloPort = 18_081;
  const atriumPort = 18_082;
  const headersPort = 18_083;
  const ceilingPort = 18_084;
  const children: ChildProcess[] = [];
  try {
    const atrium = await startAtrium(ROOT, atriumPort, freshDir(), children);
    // The other build's servers start right after this one, before the references: a server started
    // apart from the others (this one, before the three references, as it once was) ran its profile reads
    // 6 to 30% slower in every comparison, whichever build it was.
    const others = COMPARE
      ? {
          old1: await startAtrium(path.resolve(COMPARE), 18_085, freshDir(), children),
          old2: await startAtrium(path.resolve(COMPARE), 18_086, freshDir(), children),
          new2: await startAtrium(ROOT, 18_087, freshDir(), children),
        }
      : null;
    const hello = path.join(ROOT, 'dist/bench/hello-server.js');
    children.push(await start(hello, helloPort, {}));
    children.push(await start(hello, headersPort, { BENCH_ATRIUM_HEADERS: '1' }));
    children.push(await start(hello, ceilingPort, { BENCH_ATRIUM_HEADERS: '1', BENCH_BODY: atrium.profile }));
    const scenarios: Scenario[] = [
      { name: 'baseline: raw fastify hello-world', url: `http://127.0.0.1:${helloPort}/` },
      // For reference: the same hello-world sending the headers every Atrium response carries.
      { name: 'raw fastify + Atrium response headers', url: `http://127.0.0.1:${headersPort}/` },
      // The ceiling of a profile read, and the reference of the targets: Atrium's headers and the profile's exact body, no work at all.
      { name: CEILING, url: `http://127.0.0.1:${ceilingPort}/` },
      ...atriumScenarios(COMPARE ? 'new: ' : '', COMPARE ? '#1 ' : '', atrium.base, atrium.auth, true),
    ];
    if (others) {
      // The other build, each over its own fresh database, measured in the same rounds. On this
      // machine a server started later ran up to 30% faster than an identical one started before it,
      // so each build runs twice, started new, old, old, new, and each row pools both servers' samples.
      const { old1, old2, new2 } = others;
      scenarios.push(
        ...atriumScenarios('old: ', '#1 ', old1.base, old1.auth, false),
        ...atriumScenarios('old: ', '#2 ', old2.base, old2.auth, false),
        ...atriumScenarios('new: ', '#2 ', new2.base, new2.auth, true),
      );
    }
    console.log(`warming up (${scenarios.length} scenarios), then ${ROUNDS} interleaved rounds of ${DURATION}s, ${CONNECTIONS} connections`);
    for (const s of scenarios) await load(s, 2);
    const samples = new Map(scenarios.map((s) => [s.name, [] as number[]]));
    for (let round = 0; round < ROUNDS; round++) {
      // A new order every round: no scenario always runs right after the same one (a slow neighbour, a warm cache).
      for (const s of shuffled(scenarios, round + 1)) samples.get(s.name)!.push(await load(s, DURATION));
      console.log(`round ${round + 1}/${ROUNDS} done`);
    }
    const baseline = median(samples.get(scenarios[0]!.name)!);
    const ceiling = median(samples.get(CEILING)!);
    const rowNames = [...new Set(scenarios.map((s) => s.row ?? s.name))].sort((a, b) => rank(a) - rank(b));
    const rows = rowNames.map((name) => {
      const members = scenarios.filter((s) => (s.row ?? s.name) === name);
      const rps = median(members.flatMap((s) => samples.get(s.name)!));
      const ratio = rps / ceiling;
      const target = members[0]!.target;
      const verdict = target === undefined ? '' : ratio >= target ? `meets >= ${target}` : `BELOW ${target}`;
      return {
        scenario: name,
        'median req/s': Math.round(rps),
        'ratio to ceiling': ratio.toFixed(2),
        'ratio to baseline': (rps / baseline).toFixed(2),
        target: verdict,
      };
    });
    console.table(rows);
  } finally {
    for (const child of children) child.kill('SIGTERM');
    for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
