import { defineDomain, type ApiOf } from '../../kernel/domain';
import { readSeed } from '../../seed-data';
import { auditDomain } from '../audit';
import { catalogDomain } from '../catalog';
import { loadBillingConfig } from './config';
import { CreditAccount } from './credit-account.entity';
import { CreditEntry } from './credit-entry.entity';
import { CreditHold } from './credit-hold.entity';
import { billingErrors } from './errors';
import { LedgerService } from './ledger.service';
import { billingMigrations } from './migrations';
import { Plan } from './plan.entity';
import { PlanService, type PlanSeed } from './plan.service';
import { UsageRecord } from './usage-record.entity';
import { UsageService } from './usage.service';
import './events';

export { Plan } from './plan.entity';
export { PlanService, type PlanView, type PlanSeed } from './plan.service';
export { UsageRecord } from './usage-record.entity';
export {
  UsageService,
  usageGroups,
  USAGE_DAYS_DEFAULT,
  USAGE_DAYS_MAX,
  type UsageByModel,
  type UsageGroup,
  type UsageReport,
  type UsageRow,
  type UsageSummary,
} from './usage.service';
export { CreditEntry, creditEntryKinds, type CreditEntryKind } from './credit-entry.entity';
export { holdStatuses, type HoldStatus } from './credit-hold.entity';
export {
  LedgerService,
  calendarPeriod,
  GRANT_REASON_MAX,
  MAX_CREDITS_PER_WRITE,
  MAX_BALANCE,
  TRANSACTIONS_PER_PAGE,
  type CreditBalance,
  type CreditBucket,
  type CreditGrant,
  type Hold,
  type HoldRequest,
  type AlongsideWrite,
  type PeriodAllocation,
  type Settlement,
  type SpentUsage,
} from './ledger.service';
export { formatMicros, parseMoney, microsFromMinor, minorFromMicros, MICROS_PER_UNIT } from './money';
export { type BillingConfig } from './config';

/** Releases credit holds whose operation never settled them. */
export const HOLD_EXPIRY = 'billing.hold_expiry';
export const HOLD_EXPIRY_SECONDS = 60;

/** Plans, the credit ledger, metered usage and spending budgets. The payment processor's side is the payments domain. */
export const billingDomain = defineDomain({
  name: 'billing',
  requires: { audit: auditDomain, catalog: catalogDomain },
  entities: [Plan, UsageRecord, CreditAccount, CreditEntry, CreditHold],
  migrations: billingMigrations,
  errors: billingErrors,
  config: (env) => ({ billing: loadBillingConfig(env) }),
  create: ({ kernel, config, deps }) => {
    const ledger = new LedgerService(kernel.orm, kernel.writer, kernel.reads, kernel.events, deps.audit.log, priceOf(deps.catalog), config.billing);
    return {
      config: config.billing,
      plans: new PlanService(kernel.orm, kernel.reads, kernel.changes),
      usage: new UsageService(kernel.orm, kernel.reads, ledger),
      ledger,
    };
  },
  seed: async (billing) => {
    await billing.plans.seed(readSeed<PlanSeed[]>('plans.json'));
  },
  jobs: (billing) => ({
    [HOLD_EXPIRY]: async () => void (await billing.ledger.releaseExpiredHolds()),
  }),
  schedules: () => [{ kind: HOLD_EXPIRY, everySeconds: HOLD_EXPIRY_SECONDS }],
});

/** A model's price per 1,000 tokens in currency micro-units, from the catalog. */
function priceOf(catalog: ApiOf<typeof catalogDomain>): (model: string) => number {
  return (model) => catalog.models.priceMicrosPer1kTokens(model);
}

export type BillingApi = ApiOf<typeof billingDomain>;
