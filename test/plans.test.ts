import { test } from 'node:test';
import assert from 'node:assert/strict';
import { build, seedOwner } from './helper';
import { Company } from '../src/domains/identity/company.entity';

test("a company's plan answers each company in order, one batch or one company at a time", async (t) => {
  const app = await build(t);
  const a = await seedOwner(app, undefined, 'A');
  const b = await seedOwner(app, undefined, 'B');
  await app.kernel.orm.em.fork().nativeUpdate(Company, { id: b.companyId }, { planId: 'professional' });

  // A company's plan as the Company.plan field resolves it: the company's plan id, then the catalog entry.
  const plansOf = (ids: string[]) =>
    ids.map((id) => {
      const planId = app.domains.identity.accounts.planIdOf(id);
      return planId === null ? null : app.domains.billing.plans.plan(planId);
    });
  const batch = plansOf([b.companyId, 'no-such-company', a.companyId]);
  assert.deepEqual(
    batch.map((p) => p && { id: p.id, monthlyCredits: p.monthlyCredits }),
    [{ id: 'professional', monthlyCredits: 6000 }, null, { id: 'starter', monthlyCredits: 2000 }],
  );
  const [single] = plansOf([b.companyId]);
  assert.equal(single?.id, 'professional');
});
