import { SchemaMigration } from '../../../db/schema-migration';

/** The audit trail, read per company and time. Split from the shipped cross-domain baseline. */
export class Migration20261122000000Audit extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.createTable('audit_events', (table) => {
        table.text('id').notNullable();
        table.text('company_id').nullable();
        table.text('action').notNullable();
        table.text('actor_type').notNullable();
        table.text('actor_id').nullable();
        table.text('actor_label').nullable();
        table.text('target_type').nullable();
        table.text('target_id').nullable();
        table.text('ip').nullable();
        table.text('request_id').nullable();
        table.jsonb('data').nullable();
        table.datetime('created_at').notNullable();
        table.primary(['id']);
        table.index(['company_id', 'created_at'], 'audit_events_company_id_created_at_index');
      }),
    );
  }
}
