import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261122000000Initial } from './Migration20261122000000-initial';

/** Applied in order on start; never edit a migration that has shipped. */
export const migrationsList: MigrationObject[] = [
  { name: 'Migration20261122000000Initial', class: Migration20261122000000Initial },
];
