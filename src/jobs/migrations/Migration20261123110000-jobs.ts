import { SchemaMigration } from '../../db/schema-migration';

/** The durable job table (src/jobs): one row per job, with its lease, attempts and outcome. */
export class Migration20261123110000Jobs extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.createTable('jobs', (table) => {
        table.text('id').notNullable();
        table.text('kind').notNullable();
        table.jsonb('payload').notNullable();
        table.datetime('run_at').notNullable();
        table.integer('attempts').notNullable().defaultTo(this.literal(0));
        table.integer('max_attempts').notNullable();
        table.text('lease_owner').nullable();
        table.datetime('lease_expires_at').nullable();
        table.text('last_error').nullable();
        table.datetime('dead_lettered_at').nullable();
        table.datetime('completed_at').nullable();
        table.text('dedupe_key').nullable();
        table.datetime('created_at').notNullable();
        table.datetime('updated_at').notNullable();
        table.primary(['id']);
        table.unique(['dedupe_key'], { indexName: 'jobs_dedupe_key_unique' });
        table.index(['completed_at', 'dead_lettered_at', 'run_at'], 'jobs_completed_at_dead_lettered_at_run_at_index');
      }),
    );
  }

  override down(): void {
    this.schema((schema) => schema.dropTableIfExists('jobs'));
  }
}
