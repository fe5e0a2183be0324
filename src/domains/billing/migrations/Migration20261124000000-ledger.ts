import { SchemaMigration } from '../../../db/schema-migration';

/**
 * The credit ledger: append-only entries, the cached balance per company and
 * the holds of running operations; a usage record names the hold it settled
 * (one record per hold). Every company that exists gets its account, empty:
 * the monthly allocation job gives it the current period's credits.
 */
export class Migration20261124000000Ledger extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema
        .createTable('credit_accounts', (table) => {
          table.text('company_id').notNullable();
          table.integer('monthly').notNullable().defaultTo(this.literal(0));
          table.integer('granted').notNullable().defaultTo(this.literal(0));
          table.integer('purchased').notNullable().defaultTo(this.literal(0));
          table.integer('held').notNullable().defaultTo(this.literal(0));
          table.text('period_key').nullable();
          table.datetime('period_start').nullable();
          table.datetime('period_end').nullable();
          table.integer('budget_micros').nullable();
          table.integer('spend_micros').notNullable().defaultTo(this.literal(0));
          table.datetime('updated_at').notNullable();
          table.primary(['company_id']);
        })
        .createTable('credit_entries', (table) => {
          table.text('id').notNullable();
          table.text('company_id').notNullable();
          table.text('kind').notNullable();
          table.text('idempotency_key').notNullable();
          table.integer('credits').notNullable();
          table.integer('monthly').notNullable();
          table.integer('granted').notNullable();
          table.integer('purchased').notNullable();
          table.integer('held').notNullable();
          table.text('hold_id').nullable();
          table.text('period_key').nullable();
          table.text('reason').nullable();
          table.text('actor_id').nullable();
          table.datetime('created_at').notNullable();
          table.primary(['id']);
          table.unique(['company_id', 'idempotency_key'], { indexName: 'credit_entries_company_id_idempotency_key_unique' });
          table.index(['company_id', 'id'], 'credit_entries_company_id_id_index');
        })
        .createTable('credit_holds', (table) => {
          table.text('id').notNullable();
          table.text('company_id').notNullable();
          table.text('idempotency_key').notNullable();
          table.integer('credits').notNullable();
          table.integer('monthly').notNullable();
          table.integer('granted').notNullable();
          table.integer('purchased').notNullable();
          table.text('period_key').nullable();
          table.text('status').notNullable();
          table.text('user_id').nullable();
          table.text('api_key_id').nullable();
          table.text('feature').notNullable();
          table.text('model').nullable();
          table.integer('committed_credits').nullable();
          table.datetime('created_at').notNullable();
          table.datetime('expires_at').notNullable();
          table.datetime('settled_at').nullable();
          table.primary(['id']);
          table.unique(['company_id', 'idempotency_key'], { indexName: 'credit_holds_company_id_idempotency_key_unique' });
          table.index(['status', 'expires_at'], 'credit_holds_status_expires_at_index');
        })
        .alterTable('usage_records', (table) => {
          table.text('hold_id').nullable();
          table.unique(['hold_id'], { indexName: 'usage_records_hold_id_unique' });
        }),
    );
    this.addSql(this.getKnex().raw('insert into credit_accounts (company_id, updated_at) select id, ? from companies', [Date.now()]));
  }

  override down(): void {
    this.dropIndexIfExists('usage_records_hold_id_unique');
    this.dropColumns('usage_records', 'hold_id');
    this.schema((schema) => schema.dropTableIfExists('credit_holds').dropTableIfExists('credit_entries').dropTableIfExists('credit_accounts'));
  }
}
