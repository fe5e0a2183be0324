import { SchemaMigration } from '../../../db/schema-migration';

/** A plan's daily request limit on the AI modules API (0 until the seed fills it in from data/plans.json). */
export class Migration20261124110000PlanDailyRequests extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.alterTable('plans', (table) => {
        table.integer('daily_requests').notNullable().defaultTo(this.literal(0));
      }),
    );
  }

  override down(): void {
    this.dropColumns('plans', 'daily_requests');
  }
}
