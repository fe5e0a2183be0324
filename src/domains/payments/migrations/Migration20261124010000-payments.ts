import { SchemaMigration } from '../../../db/schema-migration';

/** The payment processor's side: subscriptions, mirrored invoices, received events and top-up checkout sessions. */
export class Migration20261124010000Payments extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema
        .createTable('subscriptions', (table) => {
          table.text('company_id').notNullable();
          table.text('customer_id').notNullable();
          table.text('subscription_id').nullable();
          table.text('plan_id').notNullable();
          table.text('status').notNullable();
          table.integer('seats').notNullable().defaultTo(this.literal(1));
          this.boolean(table, 'cancel_at_period_end').notNullable().defaultTo(this.literal(false));
          table.datetime('period_start').nullable();
          table.datetime('period_end').nullable();
          table.datetime('trial_end').nullable();
          table.datetime('last_event_at').nullable();
          table.datetime('updated_at').notNullable();
          table.primary(['company_id']);
          table.unique(['customer_id'], { indexName: 'subscriptions_customer_id_unique' });
        })
        .createTable('invoices', (table) => {
          table.text('id').notNullable();
          table.text('company_id').notNullable();
          table.text('number').nullable();
          table.text('status').notNullable();
          table.integer('amount_due').notNullable();
          table.integer('amount_paid').notNullable();
          table.text('currency').notNullable();
          table.datetime('period_start').nullable();
          table.datetime('period_end').nullable();
          table.text('hosted_url').nullable();
          table.datetime('created_at').notNullable();
          table.datetime('last_event_at').nullable();
          table.primary(['id']);
          table.index(['company_id', 'created_at'], 'invoices_company_id_created_at_index');
        })
        .createTable('processor_events', (table) => {
          table.text('id').notNullable();
          table.text('type').notNullable();
          table.datetime('created_at').notNullable();
          table.text('company_id').nullable();
          table.text('outcome').notNullable();
          table.datetime('received_at').notNullable();
          table.primary(['id']);
        })
        .createTable('topup_sessions', (table) => {
          table.text('id').notNullable();
          table.text('company_id').notNullable();
          table.text('idempotency_key').nullable();
          table.integer('credits').notNullable();
          table.integer('amount').notNullable();
          table.text('currency').notNullable();
          table.text('url').notNullable();
          table.datetime('expires_at').notNullable();
          table.text('requested_by').notNullable();
          table.text('payment_intent_id').nullable();
          table.datetime('completed_at').nullable();
          table.datetime('created_at').notNullable();
          table.primary(['id']);
          table.unique(['company_id', 'idempotency_key'], { indexName: 'topup_sessions_company_id_idempotency_key_unique' });
        }),
    );
  }

  override down(): void {
    this.schema((schema) =>
      schema.dropTableIfExists('topup_sessions').dropTableIfExists('processor_events').dropTableIfExists('invoices').dropTableIfExists('subscriptions'),
    );
  }
}
