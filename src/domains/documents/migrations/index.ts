import type { MigrationEntry } from '../../../db/migrations';
import { Migration20261124140000Documents } from './Migration20261124140000-documents';

/** The documents' migrations; one that has shipped never changes the schema it builds. */
export const documentsMigrations: MigrationEntry[] = [{ name: 'Migration20261124140000Documents', class: Migration20261124140000Documents }];
