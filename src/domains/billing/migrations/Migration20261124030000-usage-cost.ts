import { SchemaMigration } from '../../../db/schema-migration';

/** A usage record's currency cost, in micro-units of BILLING_CURRENCY (tokens at the model's price). */
export class Migration20261124030000UsageCost extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.alterTable('usage_records', (table) => {
        table.integer('cost_micros').notNullable().defaultTo(this.literal(0));
      }),
    );
  }

  override down(): void {
    this.dropColumns('usage_records', 'cost_micros');
  }
}
