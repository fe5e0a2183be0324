import { Migration } from '@mikro-orm/migrations';

/**
 * Single sign-on with MFA and step-up: the MFA challenges a provider sign-in
 * leaves for users with MFA on, and the intent (login or step_up) and the
 * session of a step-up on each SSO state.
 */
export class Migration20261122100500SsoMfa extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table \`sso_mfa_challenges\` (\`id\` text not null, \`challenge_hash\` text not null, \`user_id\` text not null, \`provider\` text not null, \`intent\` text not null, \`session_id\` text null, \`link_subject\` text null, \`link_email\` text null, \`redirect_uri\` text null, \`failed_attempts\` integer not null default 0, \`created_at\` datetime not null, \`expires_at\` datetime not null, \`used_at\` datetime null, constraint \`sso_mfa_challenges_user_id_foreign\` foreign key(\`user_id\`) references \`users\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`))`);
    this.addSql(`create unique index \`sso_mfa_challenges_challenge_hash_unique\` on \`sso_mfa_challenges\` (\`challenge_hash\`)`);
    this.addSql(`create index \`sso_mfa_challenges_user_id_index\` on \`sso_mfa_challenges\` (\`user_id\`)`);
    this.addSql(`create index \`sso_mfa_challenges_expires_at_index\` on \`sso_mfa_challenges\` (\`expires_at\`)`);
    this.addSql(`alter table \`sso_states\` add column \`intent\` text not null default 'login'`);
    this.addSql(`alter table \`sso_states\` add column \`session_id\` text null`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table \`sso_states\` drop column \`session_id\``);
    this.addSql(`alter table \`sso_states\` drop column \`intent\``);
    this.addSql(`drop table if exists \`sso_mfa_challenges\``);
  }
}
