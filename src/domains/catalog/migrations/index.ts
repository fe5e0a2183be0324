import type { MigrationEntry } from '../../../db/migrations';
import { Migration20261122000000Catalog } from './Migration20261122000000-catalog';
import { Migration20261124020000ModelPrices } from './Migration20261124020000-model-prices';
import { Migration20261124120000FamilyDefault } from './Migration20261124120000-family-default';
import { Migration20261223000000ModelPriceBackfill } from './Migration20261223000000-model-price-backfill';

/** The catalog's migrations; one that has shipped never changes the schema it builds. */
export const catalogMigrations: MigrationEntry[] = [
  // Its table came with the kernel's cross-domain baseline on databases created before the split.
  { name: 'Migration20261122000000Catalog', class: Migration20261122000000Catalog, replaces: ['Migration20261122000000Initial'] },
  { name: 'Migration20261124020000ModelPrices', class: Migration20261124020000ModelPrices },
  { name: 'Migration20261124120000FamilyDefault', class: Migration20261124120000FamilyDefault },
  { name: 'Migration20261223000000ModelPriceBackfill', class: Migration20261223000000ModelPriceBackfill },
];
