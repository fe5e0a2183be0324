import { SchemaMigration } from '../../../db/schema-migration';

/** TOTP second factor: sealed secrets and the replay guard on users, hashed recovery codes. */
export class Migration20261122100100Mfa extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema
        .createTable('mfa_recovery_codes', (table) => {
          table.text('id').notNullable();
          table.text('user_id').notNullable();
          table.text('code_hash').notNullable();
          table.datetime('created_at').notNullable();
          table.datetime('used_at').nullable();
          table.foreign('user_id', 'mfa_recovery_codes_user_id_foreign').references('id').inTable('users').onDelete('cascade').onUpdate('cascade');
          table.primary(['id']);
          table.index(['user_id'], 'mfa_recovery_codes_user_id_index');
          table.unique(['user_id', 'code_hash'], { indexName: 'mfa_recovery_codes_user_id_code_hash_unique' });
        })
        .alterTable('users', (table) => {
          this.boolean(table, 'mfa_enabled').notNullable().defaultTo(this.literal(false));
          table.datetime('mfa_enabled_at').nullable();
          table.text('mfa_secret').nullable();
          table.text('mfa_pending_secret').nullable();
          table.integer('mfa_last_step').notNullable().defaultTo(this.literal(0));
        }),
    );
  }

  override down(): void {
    this.schema((schema) => schema.dropTableIfExists('mfa_recovery_codes'));
    this.dropColumns('users', 'mfa_enabled', 'mfa_enabled_at', 'mfa_secret', 'mfa_pending_secret', 'mfa_last_step');
  }
}
