import { SchemaMigration } from '../../../db/schema-migration';

/**
 * Cloud-storage connector configuration per company (google_drive, onedrive):
 * enabled, OAuth client id, sealed client secret, tenant (onedrive), sync
 * interval. One row per company and connector; no row means the defaults.
 */
export class Migration20261122100900Connectors extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.createTable('connector_configs', (table) => {
        table.text('id').notNullable();
        table.text('company_id').notNullable();
        table.text('name').notNullable();
        this.boolean(table, 'enabled').notNullable().defaultTo(this.literal(false));
        table.text('client_id').nullable();
        table.text('client_secret_sealed').nullable();
        table.text('tenant').nullable();
        table.integer('sync_interval_minutes').notNullable().defaultTo(this.literal(60));
        table.datetime('updated_at').notNullable();
        table.text('updated_by').nullable();
        table.foreign('company_id', 'connector_configs_company_id_foreign').references('id').inTable('companies').onDelete('cascade').onUpdate('cascade');
        table.primary(['id']);
        table.index(['company_id'], 'connector_configs_company_id_index');
        table.unique(['company_id', 'name'], { indexName: 'connector_configs_company_id_name_unique' });
      }),
    );
  }

  override down(): void {
    this.schema((schema) => schema.dropTableIfExists('connector_configs'));
  }
}
