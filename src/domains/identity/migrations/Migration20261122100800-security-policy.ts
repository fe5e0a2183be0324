import { SchemaMigration } from '../../../db/schema-migration';

/**
 * Company security policies: MFA required, minimum password length, session
 * idle timeout, allowed SSO providers and sign-up domains, IP allow-list and
 * the maximum age of API keys. A company without a row has the defaults.
 */
export class Migration20261122100800SecurityPolicy extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.createTable('security_policies', (table) => {
        table.text('company_id').notNullable();
        this.boolean(table, 'mfa_required').notNullable().defaultTo(this.literal(false));
        table.integer('min_password_length').notNullable().defaultTo(this.literal(12));
        table.integer('session_idle_timeout_minutes').nullable();
        table.jsonb('allowed_sso_providers').notNullable();
        table.jsonb('sso_signup_email_domains').notNullable();
        table.jsonb('ip_allowlist').notNullable();
        table.integer('api_key_max_age_days').nullable();
        table.integer('version').notNullable().defaultTo(this.literal(0));
        table.datetime('updated_at').notNullable();
        table.text('updated_by').nullable();
        table.foreign('company_id', 'security_policies_company_id_foreign').references('id').inTable('companies').onDelete('cascade').onUpdate('cascade');
        table.primary(['company_id']);
        table.index(['company_id'], 'security_policies_company_id_index');
      }),
    );
  }

  override down(): void {
    this.schema((schema) => schema.dropTableIfExists('security_policies'));
  }
}
