import type { MigrationEntry } from '../../../db/migrations';
import { Migration20261126110000Bulk } from './Migration20261126110000-bulk';
import { Migration20261127130000BulkBom } from './Migration20261127130000-bulk-bom';

/** Bulk jobs' migrations; one that has shipped never changes the schema it builds. */
export const bulkMigrations: MigrationEntry[] = [
  { name: 'Migration20261126110000Bulk', class: Migration20261126110000Bulk },
  { name: 'Migration20261127130000BulkBom', class: Migration20261127130000BulkBom },
];
