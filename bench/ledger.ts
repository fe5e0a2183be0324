/**
 * `npm run bench:ledger`: credit reserve + commit pairs per second through
 * LedgerService on a SQLite file, in-process, each call in its own unit of
 * work as a request's would be. Sequential, then with concurrent callers;
 * medians of several rounds. Target: >= 5,000 pairs/s (bench/README.md).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config';
import { boot, inContext } from '../src/boot';
import { tuneHeapForServing } from '../src/kernel/v8-tuning';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const PAIRS = Number(process.env.BENCH_PAIRS ?? 5000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main() {
  // The ledger runs in this process as it would in a server's, tuned as a serving process is (`node --allocation-site-pretenuring` keeps V8's default).
  tuneHeapForServing();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-bench-ledger-'));
  const atrium = await boot(loadConfig({ DATA_DIR: dir, SCRYPT_COST: '1024', LOG_LEVEL: 'warn' }));
  const { orm } = atrium.kernel;
  const ledger = atrium.domains.billing.ledger;
  const { company } = await inContext(orm, () =>
    atrium.domains.identity.accounts.createCompanyWithOwner({ email: 'bench@example.com', password: 'correct-horse-battery-staple', company: 'Bench' }),
  );
  await inContext(orm, () => ledger.topUp({ companyId: company.id, credits: 100_000_000, key: 'bench' }));
  let n = 0;
  const pair = () =>
    inContext(orm, async () => {
      const hold = await ledger.reserve({ companyId: company.id, credits: 10, key: `b-${n++}`, feature: 'bench', model: 'gpt-4o-mini' });
      await ledger.commit(hold.id, { credits: 7, tokens: 700 });
    });

  const sequential: number[] = [];
  const concurrent: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    let start = process.hrtime.bigint();
    for (let i = 0; i < PAIRS; i++) await pair();
    sequential.push(PAIRS / (Number(process.hrtime.bigint() - start) / 1e9));
    start = process.hrtime.bigint();
    let left = PAIRS;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (left-- > 0) await pair();
      }),
    );
    concurrent.push(PAIRS / (Number(process.hrtime.bigint() - start) / 1e9));
    process.stderr.write(`round ${round + 1}/${ROUNDS}: ${Math.round(sequential.at(-1)!)} sequential, ${Math.round(concurrent.at(-1)!)} with ${CONCURRENCY} callers\n`);
  }
  console.log(`reserve+commit pairs/s (median of ${ROUNDS} x ${PAIRS}): sequential ${Math.round(median(sequential))}, ${CONCURRENCY} concurrent callers ${Math.round(median(concurrent))}; target >= 5000`);
  await atrium.close();
  fs.rmSync(dir, { recursive: true, force: true });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
