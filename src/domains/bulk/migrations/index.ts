import type { MigrationEntry } from '../../../db/migrations';
import { Migration20261126110000Bulk } from './Migration20261126110000-bulk';

/** Bulk jobs' migrations; one that has shipped never changes the schema it builds. */
export const bulkMigrations: MigrationEntry[] = [{ name: 'Migration20261126110000Bulk', class: Migration20261126110000Bulk }];
