import type { MigrationEntry } from '../../../db/migrations';
import { Migration20261124010000Payments } from './Migration20261124010000-payments';
import { Migration20261128090000PlanChanges } from './Migration20261128090000-plan-changes';
import { Migration20261203000000BillingRecords } from './Migration20261203000000-billing-records';
import { Migration20261204000000EventReasons } from './Migration20261204000000-event-reasons';

/** The payments domain's migrations; one that has shipped never changes the schema it builds. */
export const paymentsMigrations: MigrationEntry[] = [
  { name: 'Migration20261124010000Payments', class: Migration20261124010000Payments },
  { name: 'Migration20261128090000PlanChanges', class: Migration20261128090000PlanChanges },
  { name: 'Migration20261203000000BillingRecords', class: Migration20261203000000BillingRecords },
  { name: 'Migration20261204000000EventReasons', class: Migration20261204000000EventReasons },
];
