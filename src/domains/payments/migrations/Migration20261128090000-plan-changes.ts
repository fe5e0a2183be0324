import { SchemaMigration } from '../../../db/schema-migration';

/** Plan changes made under an Idempotency-Key: one per company and key, so a retry answers the first and changes nothing. */
export class Migration20261128090000PlanChanges extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.createTable('plan_changes', (table) => {
        table.text('id').notNullable();
        table.text('company_id').notNullable();
        table.text('idempotency_key').notNullable();
        table.text('plan_id').notNullable();
        table.text('previous_plan_id').notNullable();
        table.text('effective').notNullable();
        table.integer('credits_added').notNullable();
        table.text('checkout_url').nullable();
        table.text('requested_by').notNullable();
        table.datetime('created_at').notNullable();
        table.primary(['id']);
        table.unique(['company_id', 'idempotency_key'], { indexName: 'plan_changes_company_id_idempotency_key_unique' });
      }),
    );
  }

  override down(): void {
    this.schema((schema) => schema.dropTableIfExists('plan_changes'));
  }
}
