import { SchemaMigration } from '../../../db/schema-migration';

/**
 * Single sign-on: one-time OIDC states, linked provider accounts
 * (provider, subject), invitations, and the hash of the `service_token`
 * cookie on sessions.
 */
export class Migration20261122100200Sso extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema
        .createTable('sso_states', (table) => {
          table.text('id').notNullable();
          table.text('state_hash').notNullable();
          table.text('provider').notNullable();
          table.text('nonce').notNullable();
          table.text('code_verifier').notNullable();
          table.text('redirect_uri').nullable();
          table.datetime('created_at').notNullable();
          table.datetime('expires_at').notNullable();
          table.datetime('used_at').nullable();
          table.primary(['id']);
          table.unique(['state_hash'], { indexName: 'sso_states_state_hash_unique' });
          table.index(['expires_at'], 'sso_states_expires_at_index');
        })
        .createTable('invitations', (table) => {
          table.text('id').notNullable();
          table.text('company_id').notNullable();
          table.text('email').notNullable();
          table.text('role').notNullable();
          table.text('token_hash').notNullable();
          table.text('status').notNullable().defaultTo('pending');
          table.datetime('expires_at').notNullable();
          table.text('invited_by_id').nullable();
          table.datetime('created_at').notNullable();
          table.datetime('accepted_at').nullable();
          table.foreign('company_id', 'invitations_company_id_foreign').references('id').inTable('companies').onDelete('cascade').onUpdate('cascade');
          table.foreign('invited_by_id', 'invitations_invited_by_id_foreign').references('id').inTable('users').onDelete('set null').onUpdate('cascade');
          table.primary(['id']);
          table.index(['company_id'], 'invitations_company_id_index');
          table.unique(['token_hash'], { indexName: 'invitations_token_hash_unique' });
          table.index(['invited_by_id'], 'invitations_invited_by_id_index');
          table.index(['company_id', 'status', 'created_at'], 'invitations_company_id_status_created_at_index');
          table.index(['email', 'status'], 'invitations_email_status_index');
        })
        .createTable('user_identities', (table) => {
          table.text('id').notNullable();
          table.text('user_id').notNullable();
          table.text('provider').notNullable();
          table.text('subject').notNullable();
          table.text('email').nullable();
          table.datetime('created_at').notNullable();
          table.datetime('last_login_at').nullable();
          table.foreign('user_id', 'user_identities_user_id_foreign').references('id').inTable('users').onDelete('cascade').onUpdate('cascade');
          table.primary(['id']);
          table.index(['user_id'], 'user_identities_user_id_index');
          table.unique(['provider', 'subject'], { indexName: 'user_identities_provider_subject_unique' });
        })
        .alterTable('sessions', (table) => {
          table.text('cookie_token_hash').nullable();
          table.unique(['cookie_token_hash'], { indexName: 'sessions_cookie_token_hash_unique' });
        }),
    );
  }

  override down(): void {
    this.schema((schema) => schema.alterTable('sessions', (table) => table.dropUniqueIfExists(['cookie_token_hash'], 'sessions_cookie_token_hash_unique')));
    this.dropColumns('sessions', 'cookie_token_hash');
    this.schema((schema) => schema.dropTableIfExists('user_identities').dropTableIfExists('invitations').dropTableIfExists('sso_states'));
  }
}
