import type { MigrationEntry } from '../../../db/migrations';
import { Migration20261122000000Billing } from './Migration20261122000000-billing';
import { Migration20261122100600UsageRecords } from './Migration20261122100600-usage-records';
import { Migration20261124000000Ledger } from './Migration20261124000000-ledger';
import { Migration20261124030000UsageCost } from './Migration20261124030000-usage-cost';
import { Migration20261124110000PlanDailyRequests } from './Migration20261124110000-plan-daily-requests';
import { Migration20261222000000LedgerClustered } from './Migration20261222000000-ledger-clustered';

/** Billing's migrations; one that has shipped never changes the schema it builds. */
export const billingMigrations: MigrationEntry[] = [
  // Its first table came with the kernel's cross-domain baseline on databases created before the split.
  { name: 'Migration20261122000000Billing', class: Migration20261122000000Billing, replaces: ['Migration20261122000000Initial'] },
  { name: 'Migration20261122100600UsageRecords', class: Migration20261122100600UsageRecords },
  { name: 'Migration20261124000000Ledger', class: Migration20261124000000Ledger },
  { name: 'Migration20261124030000UsageCost', class: Migration20261124030000UsageCost },
  { name: 'Migration20261124110000PlanDailyRequests', class: Migration20261124110000PlanDailyRequests },
  { name: 'Migration20261222000000LedgerClustered', class: Migration20261222000000LedgerClustered },
];
