import { SchemaMigration } from '../../../db/schema-migration';

/** Whether a CSV job's result starts with a byte-order mark (its input had one, or was Windows-1252). */
export class Migration20261127130000BulkBom extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.alterTable('bulk_jobs', (table) => {
        this.boolean(table, 'bom').notNullable().defaultTo(this.literal(false));
      }),
    );
  }

  override down(): void {
    this.dropColumns('bulk_jobs', 'bom');
  }
}
