import { SchemaMigration } from '../../../db/schema-migration';

/**
 * Usage records: one row per metered use of a model (company, optional user
 * and API key, model, feature, credits, tokens), read per company and time
 * range. No foreign keys: usage is billing history and outlives its user or key.
 */
export class Migration20261122100600UsageRecords extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.createTable('usage_records', (table) => {
        table.text('id').notNullable();
        table.text('company_id').notNullable();
        table.text('user_id').nullable();
        table.text('api_key_id').nullable();
        table.text('model').notNullable();
        table.text('feature').notNullable();
        table.integer('credits').notNullable().defaultTo(this.literal(0));
        table.integer('tokens').notNullable().defaultTo(this.literal(0));
        table.datetime('created_at').notNullable();
        table.primary(['id']);
        table.index(['company_id', 'created_at'], 'usage_records_company_id_created_at_index');
      }),
    );
  }

  override down(): void {
    this.schema((schema) => schema.dropTableIfExists('usage_records'));
  }
}
