import type { MigrationEntry } from '../../../db/migrations';
import { Migration20261122000000Audit } from './Migration20261122000000-audit';

/** Audit's migrations; one that has shipped never changes the schema it builds. */
export const auditMigrations: MigrationEntry[] = [
  // Its table came with the kernel's cross-domain baseline on databases created before the split.
  { name: 'Migration20261122000000Audit', class: Migration20261122000000Audit, replaces: ['Migration20261122000000Initial'] },
];
