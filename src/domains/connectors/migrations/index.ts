import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261122100900Connectors } from './Migration20261122100900-connectors';

export const connectorsMigrations: MigrationObject[] = [
  { name: 'Migration20261122100900Connectors', class: Migration20261122100900Connectors },
];
