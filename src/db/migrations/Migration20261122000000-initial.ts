import { Migration } from '@mikro-orm/migrations';

/** Identity, audit, catalog, plans and docs feedback. */
export class Migration20261122000000Initial extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table \`audit_events\` (\`id\` text not null, \`company_id\` text null, \`action\` text not null, \`actor_type\` text not null, \`actor_id\` text null, \`actor_label\` text null, \`target_type\` text null, \`target_id\` text null, \`ip\` text null, \`request_id\` text null, \`data\` json null, \`created_at\` datetime not null, primary key (\`id\`))`);
    this.addSql(`create index \`audit_events_company_id_created_at_index\` on \`audit_events\` (\`company_id\`, \`created_at\`)`);
    this.addSql(`create table \`companies\` (\`id\` text not null, \`name\` text not null, \`plan_id\` text not null default 'starter', \`created_at\` datetime not null, primary key (\`id\`))`);
    this.addSql(`create table \`docs_feedback\` (\`id\` text not null, \`page\` text not null, \`helpful\` integer null, \`comment\` text null, \`ip_hash\` text null, \`user_agent\` text null, \`created_at\` datetime not null, primary key (\`id\`))`);
    this.addSql(`create table \`models\` (\`id\` text not null, \`display_name\` text not null, \`provider\` text not null, \`family\` text not null, \`blocked\` integer not null default false, \`credit_cost\` integer not null, \`context_length\` integer not null, \`created_at\` datetime not null, primary key (\`id\`))`);
    this.addSql(`create table \`plans\` (\`id\` text not null, \`name\` text not null, \`monthly_credits\` integer not null, primary key (\`id\`))`);
    this.addSql(`create table \`users\` (\`id\` text not null, \`company_id\` text not null, \`email\` text not null, \`name\` text null, \`password_hash\` text not null, \`role\` text not null, \`status\` text not null default 'active', \`is_superadmin\` integer not null default false, \`created_at\` datetime not null, \`updated_at\` datetime not null, \`last_login_at\` datetime null, constraint \`users_company_id_foreign\` foreign key(\`company_id\`) references \`companies\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`))`);
    this.addSql(`create index \`users_company_id_index\` on \`users\` (\`company_id\`)`);
    this.addSql(`create unique index \`users_email_unique\` on \`users\` (\`email\`)`);
    this.addSql(`create index \`users_company_id_created_at_index\` on \`users\` (\`company_id\`, \`created_at\`)`);
    this.addSql(`create table \`sessions\` (\`id\` text not null, \`user_id\` text not null, \`company_id\` text not null, \`ip\` text null, \`user_agent\` text null, \`authenticated_at\` datetime not null, \`created_at\` datetime not null, \`last_seen_at\` datetime not null, \`expires_at\` datetime not null, \`revoked_at\` datetime null, \`revoked_reason\` text null, constraint \`sessions_user_id_foreign\` foreign key(\`user_id\`) references \`users\`(\`id\`) on delete cascade on update cascade, constraint \`sessions_company_id_foreign\` foreign key(\`company_id\`) references \`companies\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`))`);
    this.addSql(`create index \`sessions_user_id_index\` on \`sessions\` (\`user_id\`)`);
    this.addSql(`create index \`sessions_company_id_index\` on \`sessions\` (\`company_id\`)`);
    this.addSql(`create index \`sessions_user_id_revoked_at_index\` on \`sessions\` (\`user_id\`, \`revoked_at\`)`);
    this.addSql(`create table \`refresh_tokens\` (\`id\` text not null, \`session_id\` text not null, \`token_hash\` text not null, \`expires_at\` datetime not null, \`created_at\` datetime not null, \`used_at\` datetime null, constraint \`refresh_tokens_session_id_foreign\` foreign key(\`session_id\`) references \`sessions\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`))`);
    this.addSql(`create unique index \`refresh_tokens_token_hash_unique\` on \`refresh_tokens\` (\`token_hash\`)`);
    this.addSql(`create index \`refresh_tokens_session_id_index\` on \`refresh_tokens\` (\`session_id\`)`);
    this.addSql(`create table \`api_keys\` (\`id\` text not null, \`company_id\` text not null, \`name\` text not null, \`prefix\` text not null, \`key_hash\` text not null, \`created_by_id\` text null, \`created_at\` datetime not null, \`last_used_at\` datetime null, \`revoked_at\` datetime null, constraint \`api_keys_company_id_foreign\` foreign key(\`company_id\`) references \`companies\`(\`id\`) on delete cascade on update cascade, constraint \`api_keys_created_by_id_foreign\` foreign key(\`created_by_id\`) references \`users\`(\`id\`) on delete set null on update cascade, primary key (\`id\`))`);
    this.addSql(`create index \`api_keys_company_id_index\` on \`api_keys\` (\`company_id\`)`);
    this.addSql(`create unique index \`api_keys_key_hash_unique\` on \`api_keys\` (\`key_hash\`)`);
    this.addSql(`create index \`api_keys_created_by_id_index\` on \`api_keys\` (\`created_by_id\`)`);
    this.addSql(`create index \`api_keys_company_id_revoked_at_index\` on \`api_keys\` (\`company_id\`, \`revoked_at\`)`);
  }
}
