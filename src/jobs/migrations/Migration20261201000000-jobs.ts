import { Migration } from '@mikro-orm/migrations';

/**
 * The job table (src/jobs). Written with knex's schema builder, so the same
 * migration yields each database's own DDL.
 */
export class Migration20261201000000Jobs extends Migration {
  override async up(): Promise<void> {
    const knex = this.getKnex();
    const schema = knex.schema.createTable('jobs', (table) => {
      table.text('id').notNullable().primary();
      table.text('kind').notNullable();
      table.json('payload').notNullable();
      table.dateTime('run_at').notNullable();
      // Raw: knex quotes a plain default ('0'), which the schema diff reads as another default than the entity's 0.
      table.integer('attempts').notNullable().defaultTo(knex.raw('0'));
      table.integer('max_attempts').notNullable();
      table.text('lease_owner').nullable();
      table.dateTime('lease_expires_at').nullable();
      table.text('last_error').nullable();
      table.dateTime('dead_lettered_at').nullable();
      table.dateTime('completed_at').nullable();
      table.text('dedupe_key').nullable();
      table.dateTime('created_at').notNullable();
      table.dateTime('updated_at').notNullable();
      table.unique(['dedupe_key'], { indexName: 'jobs_dedupe_key_unique' });
      table.index(['completed_at', 'dead_lettered_at', 'run_at'], 'jobs_completed_at_dead_lettered_at_run_at_index');
    });
    for (const statement of schema.toSQL()) this.addSql(statement.sql);
  }

  override async down(): Promise<void> {
    for (const statement of this.getKnex().schema.dropTableIfExists('jobs').toSQL()) this.addSql(statement.sql);
  }
}
