import type { MigrationEntry } from '../../../db/migrations';
import { Migration20261122100900Connectors } from './Migration20261122100900-connectors';

/** The connectors' migrations; one that has shipped never changes the schema it builds. */
export const connectorsMigrations: MigrationEntry[] = [
  { name: 'Migration20261122100900Connectors', class: Migration20261122100900Connectors },
];
