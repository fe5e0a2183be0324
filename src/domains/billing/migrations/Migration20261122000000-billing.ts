import { SchemaMigration } from '../../../db/schema-migration';

/** Plans (seeded from data/plans.json). Split from the shipped cross-domain baseline. */
export class Migration20261122000000Billing extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.createTable('plans', (table) => {
        table.text('id').notNullable();
        table.text('name').notNullable();
        table.integer('monthly_credits').notNullable();
        table.primary(['id']);
      }),
    );
  }
}
