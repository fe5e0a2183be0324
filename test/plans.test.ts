import { test } from 'node:test';
import assert from 'node:assert/strict';
import { build, seedOwner } from './helper';
import { Company } from '../src/domains/identity/company.entity';

test('plansForCompanies answers each company in order, one batch or one company at a time', async (t) => {
  const app = await build(t);
  const a = await seedOwner(app, undefined, 'A');
  const b = await seedOwner(app, undefined, 'B');
  await app.services.orm.em.fork().nativeUpdate(Company, { id: b.companyId }, { planId: 'professional' });

  const batch = await app.services.plans.plansForCompanies([b.companyId, 'no-such-company', a.companyId]);
  assert.deepEqual(
    batch.map((p) => p && { id: p.id, monthlyCredits: p.monthlyCredits }),
    [{ id: 'professional', monthlyCredits: 6000 }, null, { id: 'starter', monthlyCredits: 2000 }],
  );
  const [single] = await app.services.plans.plansForCompanies([b.companyId]);
  assert.equal(single?.id, 'professional');
});
