import type { MigrationEntry } from '../../db/migrations';
import { Migration20261123110000Jobs } from './Migration20261123110000-jobs';

/** The job table's migrations; one that has shipped never changes the schema it builds. */
export const jobMigrations: MigrationEntry[] = [{ name: 'Migration20261123110000Jobs', class: Migration20261123110000Jobs }];
