import { SchemaMigration } from '../../../db/schema-migration';

/** Feedback on the documentation pages. Split from the shipped cross-domain baseline. */
export class Migration20261122000000Platform extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.createTable('docs_feedback', (table) => {
        table.text('id').notNullable();
        table.text('page').notNullable();
        this.boolean(table, 'helpful').nullable();
        table.text('comment').nullable();
        table.text('ip_hash').nullable();
        table.text('user_agent').nullable();
        table.datetime('created_at').notNullable();
        table.primary(['id']);
      }),
    );
  }
}
