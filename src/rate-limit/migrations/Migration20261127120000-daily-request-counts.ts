import { SchemaMigration } from '../../db/schema-migration';

/** Daily request counts (src/rate-limit): one row per key and UTC day. */
export class Migration20261127120000DailyRequestCounts extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.createTable('daily_request_counts', (table) => {
        table.text('key').notNullable();
        table.integer('day').notNullable();
        table.integer('count').notNullable();
        table.primary(['key', 'day']);
      }),
    );
  }

  override down(): void {
    this.schema((schema) => schema.dropTableIfExists('daily_request_counts'));
  }
}
