import { SchemaMigration } from '../../../db/schema-migration';

/** Bulk jobs and their rows; a user's go with the user, a job's rows with the job. */
export class Migration20261126110000Bulk extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema
        .createTable('bulk_jobs', (table) => {
          table.text('id').notNullable();
          table.text('company_id').notNullable();
          table.text('user_id').nullable();
          table.text('api_key_id').nullable();
          table.text('filename').notNullable();
          table.text('format').notNullable();
          table.text('delimiter').notNullable();
          table.text('columns').notNullable();
          table.text('input_column').notNullable();
          table.integer('input_index').notNullable();
          table.text('prompt_template').notNullable();
          table.text('output_column').notNullable();
          table.text('model').notNullable();
          table.text('status').notNullable().defaultTo('queued');
          table.integer('total_rows').notNullable().defaultTo(this.literal(0));
          table.integer('rows_completed').notNullable().defaultTo(this.literal(0));
          table.integer('rows_failed').notNullable().defaultTo(this.literal(0));
          table.integer('credits_used').notNullable().defaultTo(this.literal(0));
          table.text('error').nullable();
          table.text('upload_path').nullable();
          table.datetime('created_at').notNullable();
          table.datetime('started_at').nullable();
          table.datetime('finished_at').nullable();
          table.datetime('updated_at').notNullable();
          table.foreign('company_id', 'bulk_jobs_company_id_foreign').references('id').inTable('companies').onDelete('cascade').onUpdate('cascade');
          table.foreign('user_id', 'bulk_jobs_user_id_foreign').references('id').inTable('users').onDelete('cascade').onUpdate('cascade');
          table.primary(['id']);
          table.index(['company_id'], 'bulk_jobs_company_id_index');
          table.index(['user_id'], 'bulk_jobs_user_id_index');
          table.index(['company_id', 'created_at'], 'bulk_jobs_company_id_created_at_index');
          table.index(['user_id', 'created_at'], 'bulk_jobs_user_id_created_at_index');
        })
        .createTable('bulk_rows', (table) => {
          table.text('job_id').notNullable();
          table.integer('idx').notNullable();
          table.text('cells').notNullable();
          table.text('status').notNullable().defaultTo('pending');
          table.text('output').nullable();
          table.text('error').nullable();
          table.integer('tokens').notNullable().defaultTo(this.literal(0));
          table.integer('credits').notNullable().defaultTo(this.literal(0));
          table.datetime('finished_at').nullable();
          table.foreign('job_id', 'bulk_rows_job_id_foreign').references('id').inTable('bulk_jobs').onDelete('cascade').onUpdate('cascade');
          table.primary(['job_id', 'idx']);
          table.index(['job_id'], 'bulk_rows_job_id_index');
          table.index(['job_id', 'status', 'idx'], 'bulk_rows_job_id_status_idx_index');
        }),
    );
  }

  override down(): void {
    this.schema((schema) => schema.dropTableIfExists('bulk_rows').dropTableIfExists('bulk_jobs'));
  }
}
