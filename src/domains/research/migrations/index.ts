import type { MigrationEntry } from '../../../db/migrations';
import { Migration20261126100000Research } from './Migration20261126100000-research';

/** Research's migrations; one that has shipped never changes the schema it builds. */
export const researchMigrations: MigrationEntry[] = [{ name: 'Migration20261126100000Research', class: Migration20261126100000Research }];
