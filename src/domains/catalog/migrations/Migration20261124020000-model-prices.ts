import { SchemaMigration } from '../../../db/schema-migration';

/** A model's price per 1,000 tokens in the billing currency's micro-units (the currency cost of usage records). */
export class Migration20261124020000ModelPrices extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.alterTable('models', (table) => {
        table.integer('price_micros_per1k_tokens').notNullable().defaultTo(this.literal(0));
      }),
    );
  }

  override down(): void {
    this.dropColumns('models', 'price_micros_per1k_tokens');
  }
}
