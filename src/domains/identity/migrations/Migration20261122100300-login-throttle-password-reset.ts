import { SchemaMigration } from '../../../db/schema-migration';

/**
 * Brute-force protection and password reset: per-address failed-login counts
 * (keyed by an HMAC of the email) and single-use mailed tokens (hashes only).
 */
export class Migration20261122100300LoginThrottlePasswordReset extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema
        .createTable('login_throttles', (table) => {
          table.text('key_hash').notNullable();
          table.integer('failures').notNullable().defaultTo(this.literal(0));
          table.datetime('last_failure_at').nullable();
          table.datetime('blocked_until').nullable();
          table.datetime('created_at').notNullable();
          table.primary(['key_hash']);
          table.index(['last_failure_at'], 'login_throttles_last_failure_at_index');
        })
        .createTable('one_time_tokens', (table) => {
          table.text('id').notNullable();
          table.text('user_id').notNullable();
          table.text('purpose').notNullable();
          table.text('token_hash').notNullable();
          table.datetime('expires_at').notNullable();
          table.datetime('used_at').nullable();
          table.jsonb('data').nullable();
          table.datetime('created_at').notNullable();
          table.foreign('user_id', 'one_time_tokens_user_id_foreign').references('id').inTable('users').onDelete('cascade').onUpdate('cascade');
          table.primary(['id']);
          table.index(['user_id'], 'one_time_tokens_user_id_index');
          table.unique(['token_hash'], { indexName: 'one_time_tokens_token_hash_unique' });
          table.index(['expires_at'], 'one_time_tokens_expires_at_index');
          table.index(['user_id', 'purpose', 'created_at'], 'one_time_tokens_user_id_purpose_created_at_index');
        }),
    );
  }

  override down(): void {
    this.schema((schema) => schema.dropTableIfExists('one_time_tokens').dropTableIfExists('login_throttles'));
  }
}
