import type { MigrationEntry } from '../../../db/migrations';
import { Migration20261122100600UsageRecords } from './Migration20261122100600-usage-records';

/** Billing's migrations; one that has shipped never changes the schema it builds. */
export const billingMigrations: MigrationEntry[] = [
  { name: 'Migration20261122100600UsageRecords', class: Migration20261122100600UsageRecords },
];
