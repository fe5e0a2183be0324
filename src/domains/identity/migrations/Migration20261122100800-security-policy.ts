import { Migration } from '@mikro-orm/migrations';

/**
 * Company security policies: MFA required, minimum password length, session
 * idle timeout, allowed SSO providers and sign-up domains, IP allow-list and
 * the maximum age of API keys. A company without a row has the defaults.
 */
export class Migration20261122100800SecurityPolicy extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table \`security_policies\` (\`company_id\` text not null, \`mfa_required\` integer not null default false, \`min_password_length\` integer not null default 12, \`session_idle_timeout_minutes\` integer null, \`allowed_sso_providers\` json not null, \`sso_signup_email_domains\` json not null, \`ip_allowlist\` json not null, \`api_key_max_age_days\` integer null, \`version\` integer not null default 0, \`updated_at\` datetime not null, \`updated_by\` text null, constraint \`security_policies_company_id_foreign\` foreign key(\`company_id\`) references \`companies\`(\`id\`) on delete cascade on update cascade, primary key (\`company_id\`))`);
    this.addSql(`create index \`security_policies_company_id_index\` on \`security_policies\` (\`company_id\`)`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists \`security_policies\``);
  }
}
