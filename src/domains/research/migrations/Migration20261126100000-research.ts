import { SchemaMigration } from '../../../db/schema-migration';

/** Research jobs; a user's go with the user, a company's with the company. */
export class Migration20261126100000Research extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.createTable('research_jobs', (table) => {
        table.text('id').notNullable();
        table.text('company_id').notNullable();
        table.text('user_id').nullable();
        table.text('api_key_id').nullable();
        table.text('query').notNullable();
        table.text('depth').notNullable();
        table.text('language').notNullable();
        table.text('status').notNullable().defaultTo('queued');
        table.text('phase').nullable();
        table.integer('steps_done').notNullable().defaultTo(this.literal(0));
        table.integer('steps_total').notNullable();
        table.json('state').notNullable();
        table.text('report').nullable();
        table.text('error').nullable();
        table.text('hold_id').notNullable();
        table.integer('credits').notNullable();
        table.integer('tokens').notNullable().defaultTo(this.literal(0));
        table.integer('version').notNullable().defaultTo(this.literal(1));
        table.datetime('created_at').notNullable();
        table.datetime('started_at').nullable();
        table.datetime('finished_at').nullable();
        table.datetime('updated_at').notNullable();
        table.foreign('company_id', 'research_jobs_company_id_foreign').references('id').inTable('companies').onDelete('cascade').onUpdate('cascade');
        table.foreign('user_id', 'research_jobs_user_id_foreign').references('id').inTable('users').onDelete('cascade').onUpdate('cascade');
        table.primary(['id']);
        table.index(['company_id'], 'research_jobs_company_id_index');
        table.index(['user_id'], 'research_jobs_user_id_index');
        table.index(['company_id', 'created_at'], 'research_jobs_company_id_created_at_index');
        table.index(['user_id', 'created_at'], 'research_jobs_user_id_created_at_index');
      }),
    );
  }

  override down(): void {
    this.schema((schema) => schema.dropTableIfExists('research_jobs'));
  }
}
