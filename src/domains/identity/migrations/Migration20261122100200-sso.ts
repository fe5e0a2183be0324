import { Migration } from '@mikro-orm/migrations';

/**
 * Single sign-on: one-time OIDC states, linked provider accounts
 * (provider, subject), invitations, and the hash of the `service_token`
 * cookie on sessions.
 */
export class Migration20261122100200Sso extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table \`sso_states\` (\`id\` text not null, \`state_hash\` text not null, \`provider\` text not null, \`nonce\` text not null, \`code_verifier\` text not null, \`redirect_uri\` text null, \`created_at\` datetime not null, \`expires_at\` datetime not null, \`used_at\` datetime null, primary key (\`id\`))`);
    this.addSql(`create unique index \`sso_states_state_hash_unique\` on \`sso_states\` (\`state_hash\`)`);
    this.addSql(`create index \`sso_states_expires_at_index\` on \`sso_states\` (\`expires_at\`)`);
    this.addSql(`create table \`invitations\` (\`id\` text not null, \`company_id\` text not null, \`email\` text not null, \`role\` text not null, \`token_hash\` text not null, \`status\` text not null default 'pending', \`expires_at\` datetime not null, \`invited_by_id\` text null, \`created_at\` datetime not null, \`accepted_at\` datetime null, constraint \`invitations_company_id_foreign\` foreign key(\`company_id\`) references \`companies\`(\`id\`) on delete cascade on update cascade, constraint \`invitations_invited_by_id_foreign\` foreign key(\`invited_by_id\`) references \`users\`(\`id\`) on delete set null on update cascade, primary key (\`id\`))`);
    this.addSql(`create index \`invitations_company_id_index\` on \`invitations\` (\`company_id\`)`);
    this.addSql(`create unique index \`invitations_token_hash_unique\` on \`invitations\` (\`token_hash\`)`);
    this.addSql(`create index \`invitations_invited_by_id_index\` on \`invitations\` (\`invited_by_id\`)`);
    this.addSql(`create index \`invitations_company_id_status_created_at_index\` on \`invitations\` (\`company_id\`, \`status\`, \`created_at\`)`);
    this.addSql(`create index \`invitations_email_status_index\` on \`invitations\` (\`email\`, \`status\`)`);
    this.addSql(`create table \`user_identities\` (\`id\` text not null, \`user_id\` text not null, \`provider\` text not null, \`subject\` text not null, \`email\` text null, \`created_at\` datetime not null, \`last_login_at\` datetime null, constraint \`user_identities_user_id_foreign\` foreign key(\`user_id\`) references \`users\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`))`);
    this.addSql(`create index \`user_identities_user_id_index\` on \`user_identities\` (\`user_id\`)`);
    this.addSql(`create unique index \`user_identities_provider_subject_unique\` on \`user_identities\` (\`provider\`, \`subject\`)`);
    this.addSql(`alter table \`sessions\` add column \`cookie_token_hash\` text null`);
    this.addSql(`create unique index \`sessions_cookie_token_hash_unique\` on \`sessions\` (\`cookie_token_hash\`)`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists \`sessions_cookie_token_hash_unique\``);
    this.addSql(`alter table \`sessions\` drop column \`cookie_token_hash\``);
    this.addSql(`drop table if exists \`user_identities\``);
    this.addSql(`drop table if exists \`invitations\``);
    this.addSql(`drop table if exists \`sso_states\``);
  }
}
