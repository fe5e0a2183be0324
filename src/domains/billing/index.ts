import { defineDomain, type ApiOf } from '../../kernel/domain';
import { readSeed } from '../../seed-data';
import { billingMigrations } from './migrations';
import { Plan } from './plan.entity';
import { PlanService, type PlanSeed } from './plan.service';
import { UsageRecord } from './usage-record.entity';
import { UsageService } from './usage.service';

export { Plan } from './plan.entity';
export { PlanService, type PlanView, type PlanSeed } from './plan.service';
export { UsageRecord } from './usage-record.entity';
export { UsageService, type UsageByModel, type UsageSummary } from './usage.service';

/** Plans and metered usage. The credit ledger, subscriptions and payments come here too. */
export const billingDomain = defineDomain({
  name: 'billing',
  requires: {},
  entities: [Plan, UsageRecord],
  migrations: billingMigrations,
  create: ({ kernel }) => ({
    plans: new PlanService(kernel.orm, kernel.reads, kernel.changes),
    usage: new UsageService(kernel.orm),
  }),
  seed: async (billing) => {
    await billing.plans.seed(readSeed<PlanSeed[]>('plans.json'));
  },
});

export type BillingApi = ApiOf<typeof billingDomain>;
