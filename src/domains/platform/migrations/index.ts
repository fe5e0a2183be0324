import type { MigrationEntry } from '../../../db/migrations';
import { Migration20261122000000Platform } from './Migration20261122000000-platform';

/** The platform's migrations; one that has shipped never changes the schema it builds. */
export const platformMigrations: MigrationEntry[] = [
  // Its table came with the kernel's cross-domain baseline on databases created before the split.
  { name: 'Migration20261122000000Platform', class: Migration20261122000000Platform, replaces: ['Migration20261122000000Initial'] },
];
