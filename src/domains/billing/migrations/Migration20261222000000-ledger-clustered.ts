import { SchemaMigration } from '../../../db/schema-migration';

/** The ledger's append-only tables, each written on every reserve or commit. */
const TABLES = ['credit_entries', 'credit_holds', 'usage_records'];

/**
 * The ledger's append-only tables stored in the order of their primary key
 * (SQLite's WITHOUT ROWID). Their keys are time-ordered text ids, which an
 * ordinary table keeps in a separate index beside its rows: one b-tree less
 * for each insert to write, and a reserve and its commit write about a
 * quarter fewer pages (bench/README.md, the ledger). Nothing references them
 * by foreign key.
 */
export class Migration20261222000000LedgerClustered extends SchemaMigration {
  override async up(): Promise<void> {
    for (const table of TABLES) await this.clusterByPrimaryKey(table);
  }

  override async down(): Promise<void> {
    for (const table of TABLES) await this.clusterByPrimaryKey(table, false);
  }
}
