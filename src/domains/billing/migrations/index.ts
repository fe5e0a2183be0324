import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261122100600UsageRecords } from './Migration20261122100600-usage-records';

export const billingMigrations: MigrationObject[] = [
  { name: 'Migration20261122100600UsageRecords', class: Migration20261122100600UsageRecords },
];
