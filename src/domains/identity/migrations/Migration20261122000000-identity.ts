import { SchemaMigration } from '../../../db/schema-migration';

/**
 * Companies, users, sessions with their refresh tokens, and API keys. Split
 * from the shipped cross-domain baseline.
 */
export class Migration20261122000000Identity extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema
        .createTable('companies', (table) => {
          table.text('id').notNullable();
          table.text('name').notNullable();
          table.text('plan_id').notNullable().defaultTo('starter');
          table.datetime('created_at').notNullable();
          table.primary(['id']);
        })
        .createTable('users', (table) => {
          table.text('id').notNullable();
          table.text('company_id').notNullable();
          table.text('email').notNullable();
          table.text('name').nullable();
          table.text('password_hash').notNullable();
          table.text('role').notNullable();
          table.text('status').notNullable().defaultTo('active');
          this.boolean(table, 'is_superadmin').notNullable().defaultTo(this.literal(false));
          table.datetime('created_at').notNullable();
          table.datetime('updated_at').notNullable();
          table.datetime('last_login_at').nullable();
          table.foreign('company_id', 'users_company_id_foreign').references('id').inTable('companies').onDelete('cascade').onUpdate('cascade');
          table.primary(['id']);
          table.index(['company_id'], 'users_company_id_index');
          table.unique(['email'], { indexName: 'users_email_unique' });
          table.index(['company_id', 'created_at'], 'users_company_id_created_at_index');
        })
        .createTable('sessions', (table) => {
          table.text('id').notNullable();
          table.text('user_id').notNullable();
          table.text('company_id').notNullable();
          table.text('ip').nullable();
          table.text('user_agent').nullable();
          table.datetime('authenticated_at').notNullable();
          table.datetime('created_at').notNullable();
          table.datetime('last_seen_at').notNullable();
          table.datetime('expires_at').notNullable();
          table.datetime('revoked_at').nullable();
          table.text('revoked_reason').nullable();
          table.foreign('user_id', 'sessions_user_id_foreign').references('id').inTable('users').onDelete('cascade').onUpdate('cascade');
          table.foreign('company_id', 'sessions_company_id_foreign').references('id').inTable('companies').onDelete('cascade').onUpdate('cascade');
          table.primary(['id']);
          table.index(['user_id'], 'sessions_user_id_index');
          table.index(['company_id'], 'sessions_company_id_index');
          table.index(['user_id', 'revoked_at'], 'sessions_user_id_revoked_at_index');
        })
        .createTable('refresh_tokens', (table) => {
          table.text('id').notNullable();
          table.text('session_id').notNullable();
          table.text('token_hash').notNullable();
          table.datetime('expires_at').notNullable();
          table.datetime('created_at').notNullable();
          table.datetime('used_at').nullable();
          table.foreign('session_id', 'refresh_tokens_session_id_foreign').references('id').inTable('sessions').onDelete('cascade').onUpdate('cascade');
          table.primary(['id']);
          table.unique(['token_hash'], { indexName: 'refresh_tokens_token_hash_unique' });
          table.index(['session_id'], 'refresh_tokens_session_id_index');
        })
        .createTable('api_keys', (table) => {
          table.text('id').notNullable();
          table.text('company_id').notNullable();
          table.text('name').notNullable();
          table.text('prefix').notNullable();
          table.text('key_hash').notNullable();
          table.text('created_by_id').nullable();
          table.datetime('created_at').notNullable();
          table.datetime('last_used_at').nullable();
          table.datetime('revoked_at').nullable();
          table.foreign('company_id', 'api_keys_company_id_foreign').references('id').inTable('companies').onDelete('cascade').onUpdate('cascade');
          table.foreign('created_by_id', 'api_keys_created_by_id_foreign').references('id').inTable('users').onDelete('set null').onUpdate('cascade');
          table.primary(['id']);
          table.index(['company_id'], 'api_keys_company_id_index');
          table.unique(['key_hash'], { indexName: 'api_keys_key_hash_unique' });
          table.index(['created_by_id'], 'api_keys_created_by_id_index');
          table.index(['company_id', 'revoked_at'], 'api_keys_company_id_revoked_at_index');
        }),
    );
  }
}
