import { SchemaMigration } from '../../../db/schema-migration';

/** The model catalog (seeded from data/models.json). Split from the shipped cross-domain baseline. */
export class Migration20261122000000Catalog extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.createTable('models', (table) => {
        table.text('id').notNullable();
        table.text('display_name').notNullable();
        table.text('provider').notNullable();
        table.text('family').notNullable();
        this.boolean(table, 'blocked').notNullable().defaultTo(this.literal(false));
        table.integer('credit_cost').notNullable();
        table.integer('context_length').notNullable();
        table.datetime('created_at').notNullable();
        table.primary(['id']);
      }),
    );
  }
}
