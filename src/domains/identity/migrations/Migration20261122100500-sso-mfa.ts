import { SchemaMigration } from '../../../db/schema-migration';

/**
 * Single sign-on with MFA and step-up: the MFA challenges a provider sign-in
 * leaves for users with MFA on, and the intent (login or step_up) and the
 * session of a step-up on each SSO state.
 */
export class Migration20261122100500SsoMfa extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema
        .createTable('sso_mfa_challenges', (table) => {
          table.text('id').notNullable();
          table.text('challenge_hash').notNullable();
          table.text('user_id').notNullable();
          table.text('provider').notNullable();
          table.text('intent').notNullable();
          table.text('session_id').nullable();
          table.text('link_subject').nullable();
          table.text('link_email').nullable();
          table.text('redirect_uri').nullable();
          table.integer('failed_attempts').notNullable().defaultTo(this.literal(0));
          table.datetime('created_at').notNullable();
          table.datetime('expires_at').notNullable();
          table.datetime('used_at').nullable();
          table.foreign('user_id', 'sso_mfa_challenges_user_id_foreign').references('id').inTable('users').onDelete('cascade').onUpdate('cascade');
          table.primary(['id']);
          table.unique(['challenge_hash'], { indexName: 'sso_mfa_challenges_challenge_hash_unique' });
          table.index(['user_id'], 'sso_mfa_challenges_user_id_index');
          table.index(['expires_at'], 'sso_mfa_challenges_expires_at_index');
        })
        .alterTable('sso_states', (table) => {
          table.text('intent').notNullable().defaultTo('login');
          table.text('session_id').nullable();
        }),
    );
  }

  override down(): void {
    this.dropColumns('sso_states', 'session_id', 'intent');
    this.schema((schema) => schema.dropTableIfExists('sso_mfa_challenges'));
  }
}
