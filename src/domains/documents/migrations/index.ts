import type { MigrationEntry } from '../../../db/migrations';
import { Migration20261124140000Documents } from './Migration20261124140000-documents';
import { Migration20261210000000CjkPassages } from './Migration20261210000000-cjk-passages';

/** The documents' migrations; one that has shipped never changes the schema it builds. */
export const documentsMigrations: MigrationEntry[] = [
  { name: 'Migration20261124140000Documents', class: Migration20261124140000Documents },
  { name: 'Migration20261210000000CjkPassages', class: Migration20261210000000CjkPassages },
];
