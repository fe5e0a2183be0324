import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config';
import { boot, inContext } from '../src/boot';
import { PASSWORD } from './helper';
import { assertLedgerAddsUp } from './ledger-helper';
import { cycle } from './fixtures/ledger-child';

const CHILD = path.resolve(__dirname, 'fixtures/ledger-child.js');

function child(dataDir: string, args: string[]) {
  const proc = spawn(process.execPath, [CHILD, ...args], {
    env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const waiters: { pattern: RegExp; resolve: (m: RegExpMatchArray) => void }[] = [];
  proc.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    for (const w of [...waiters]) {
      const m = out.match(w.pattern);
      if (m) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(m);
      }
    }
  });
  proc.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return {
    proc,
    exited,
    line(pattern: RegExp, timeoutMs = 60_000): Promise<RegExpMatchArray> {
      const m = out.match(pattern);
      if (m) return Promise.resolve(m);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${pattern} from the child; stderr: ${err}`)), timeoutMs);
        waiters.push({ pattern, resolve: (match) => (clearTimeout(timer), resolve(match)) });
        void exited.then((code) => reject(new Error(`the child exited (${code}) before ${pattern}; stderr: ${err}`)));
      });
    },
    get out() {
      return out;
    },
  };
}

async function open(dataDir: string) {
  return boot(loadConfig({ DATA_DIR: dataDir, SCRYPT_COST: '1024', LOG_LEVEL: 'warn' }));
}

function tempDir(t: { after: (fn: () => void) => void }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-ledger-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('worker processes racing for one balance: exactly the affordable reserves succeed and it never goes negative', async (t) => {
  const dir = tempDir(t);
  const atrium = await open(dir);
  const { company } = await inContext(atrium.kernel.orm, () =>
    atrium.domains.identity.accounts.createCompanyWithOwner({ email: 'race@example.com', password: PASSWORD, company: 'Race' }),
  );
  await atrium.close();

  // 2,000 credits; 4 workers x 40 reserves of 15 = 2,400 asked: 133 fit (1,995), 27 cannot.
  const workers = [0, 1, 2, 3].map((n) => child(dir, ['race', company.id, '40', '15', `w${n}`]));
  await Promise.all(workers.map((w) => w.line(/ready/)));
  for (const w of workers) w.proc.stdin!.write('go\n');
  const phase = await Promise.all(workers.map(async (w) => JSON.parse((await w.line(/reserved (\{.*\})\n/))[1]!) as { reserved: number; insufficient: number }));
  const reserved = phase.reduce((n, r) => n + r.reserved, 0);
  const refused = phase.reduce((n, r) => n + r.insufficient, 0);
  assert.equal(reserved, 133, `results: ${JSON.stringify(phase)}`);
  assert.equal(refused, 27);
  assert.ok(phase.filter((r) => r.reserved > 0).length > 1, 'more than one worker got credits: they really raced');
  const after = await open(dir);
  t.after(() => after.close());
  const held = after.domains.billing.ledger.balance(company.id);
  assert.deepEqual([held.available, held.held], [5, 1995]);
  await assertLedgerAddsUp(after);

  // Now they settle at once: commits and releases of the same account from four processes.
  for (const w of workers) w.proc.stdin!.end('settle\n');
  const results = await Promise.all(workers.map(async (w) => JSON.parse((await w.line(/^\{.*\}$/m))[0]) as { committed: number }));
  assert.deepEqual(await Promise.all(workers.map((w) => w.exited)), [0, 0, 0, 0]);
  const spent = results.reduce((n, r) => n + r.committed, 0);
  const balance = after.domains.billing.ledger.balance(company.id);
  assert.equal(balance.held, 0);
  assert.equal(balance.available, 2000 - spent);
  await assertLedgerAddsUp(after);
});

test('kill -9 in the middle of 1,000 ledger operations: after a restart the ledger adds up, a replay changes nothing, and no hold outlives its timeout', async (t) => {
  const dir = tempDir(t);
  const atrium = await open(dir);
  const { company } = await inContext(atrium.kernel.orm, () =>
    atrium.domains.identity.accounts.createCompanyWithOwner({ email: 'crash@example.com', password: PASSWORD, company: 'Crash' }),
  );
  // Enough for every cycle: 1,000 cycles spend at most 10 each.
  await inContext(atrium.kernel.orm, () => atrium.domains.billing.ledger.topUp({ companyId: company.id, credits: 10_000, key: 'pi_seed' }));
  await atrium.close();

  const worker = child(dir, ['churn', company.id, '1000', '0']);
  const [, reached] = await worker.line(/done (3\d\d)\n/);
  worker.proc.kill('SIGKILL');
  await worker.exited;
  const last = Math.max(...[...worker.out.matchAll(/done (\d+)/g)].map((m) => Number(m[1])));
  assert.ok(last >= Number(reached) && last < 999, `killed in the middle (after cycle ${last})`);

  const after = await open(dir);
  t.after(() => after.close());
  await assertLedgerAddsUp(after);
  const ledger = after.domains.billing.ledger;
  const before = ledger.balance(company.id);
  const entries = async () => (await after.kernel.orm.em.fork().getConnection().execute('select count(*) as n from credit_entries'))[0].n as number;
  const countBefore = await entries();

  // The cycles around the kill run again with their keys: what was done stays done, the one cut short completes.
  for (let i = Math.max(0, last - 2); i <= last; i++) await inContext(after.kernel.orm, () => cycle(ledger, company.id, i));
  assert.deepEqual(ledger.balance(company.id), before, 'replaying finished cycles changes nothing');
  assert.equal(await entries(), countBefore);
  const next = last + 1;
  await inContext(after.kernel.orm, () => cycle(ledger, company.id, next));
  await inContext(after.kernel.orm, () => cycle(ledger, company.id, next));
  await assertLedgerAddsUp(after);

  // Holds of the crashed cycles (and those left open on purpose) are released once their timeout has passed.
  assert.ok(ledger.balance(company.id).held > 0);
  await inContext(after.kernel.orm, () => ledger.releaseExpiredHolds(new Date(Date.now() + 3600_000)));
  const open_ = await after.kernel.orm.em.fork().getConnection().execute("select count(*) as n from credit_holds where status = 'held'");
  assert.equal(open_[0].n, 0);
  assert.equal(ledger.balance(company.id).held, 0);
  const topups = await after.kernel.orm.em.fork().getConnection().execute("select count(*) as n, sum(credits) as credits from credit_entries where kind = 'topup'");
  // pi_seed plus one per tenth cycle reached, each once.
  assert.equal(topups[0].n, 1 + Math.floor(next / 10) + 1);
  await assertLedgerAddsUp(after);
});
