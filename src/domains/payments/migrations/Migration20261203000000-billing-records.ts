import { SchemaMigration } from '../../../db/schema-migration';

/**
 * What the overview and top-up idempotency need to know: a subscription's
 * recurring price (MRR comes from it, not from the last invoice of any kind),
 * an invoice's billing reason, and the return URLs a top-up checkout was asked
 * with (the same Idempotency-Key with other parameters is 409).
 */
export class Migration20261203000000BillingRecords extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema
        .alterTable('subscriptions', (table) => {
          table.integer('unit_amount').nullable();
          table.text('price_currency').nullable();
        })
        .alterTable('invoices', (table) => {
          table.text('billing_reason').nullable();
        })
        .alterTable('topup_sessions', (table) => {
          table.text('request_hash').nullable();
        }),
    );
  }

  override down(): void {
    this.dropColumns('subscriptions', 'unit_amount', 'price_currency');
    this.dropColumns('invoices', 'billing_reason');
    this.dropColumns('topup_sessions', 'request_hash');
  }
}
