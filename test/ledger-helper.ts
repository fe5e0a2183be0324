import assert from 'node:assert/strict';
import type { Orm } from '../src/db/orm';

interface HasOrm {
  kernel: { orm: Orm };
}

async function rows<T>(app: HasOrm, query: string): Promise<T[]> {
  return (await app.kernel.orm.em.fork().getConnection().execute(query, [])) as T[];
}

/** Every bucket of every account is the sum of its entries, no bucket is negative, and held is what open holds hold. */
export async function assertLedgerAddsUp(app: HasOrm) {
  const accounts = await rows<{ company_id: string; monthly: number; granted: number; purchased: number; held: number; em: number; eg: number; ep: number; eh: number }>(
    app,
    `select a.company_id, a.monthly, a.granted, a.purchased, a.held,
            coalesce(sum(e.monthly), 0) as em, coalesce(sum(e.granted), 0) as eg, coalesce(sum(e.purchased), 0) as ep, coalesce(sum(e.held), 0) as eh
       from credit_accounts a left join credit_entries e on e.company_id = a.company_id group by a.company_id`,
  );
  for (const r of accounts) {
    assert.deepEqual([r.monthly, r.granted, r.purchased, r.held], [r.em, r.eg, r.ep, r.eh], `account ${r.company_id} disagrees with its entries`);
    assert.ok(r.monthly >= 0 && r.granted >= 0 && r.purchased >= 0 && r.held >= 0, `account ${r.company_id} went negative`);
  }
  const held = await rows<{ company_id: string; held: number; open: number }>(
    app,
    `select a.company_id, a.held, coalesce((select sum(credits) from credit_holds h where h.company_id = a.company_id and h.status = 'held'), 0) as open
       from credit_accounts a`,
  );
  for (const r of held) assert.equal(r.held, r.open, `account ${r.company_id}: held ${r.held} but open holds sum ${r.open}`);
}
