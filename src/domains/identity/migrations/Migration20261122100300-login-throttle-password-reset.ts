import { Migration } from '@mikro-orm/migrations';

/**
 * Brute-force protection and password reset: per-address failed-login counts
 * (keyed by an HMAC of the email) and single-use mailed tokens (hashes only).
 */
export class Migration20261122100300LoginThrottlePasswordReset extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table \`login_throttles\` (\`key_hash\` text not null, \`failures\` integer not null default 0, \`last_failure_at\` datetime null, \`blocked_until\` datetime null, \`created_at\` datetime not null, primary key (\`key_hash\`))`);
    this.addSql(`create index \`login_throttles_last_failure_at_index\` on \`login_throttles\` (\`last_failure_at\`)`);
    this.addSql(`create table \`one_time_tokens\` (\`id\` text not null, \`user_id\` text not null, \`purpose\` text not null, \`token_hash\` text not null, \`expires_at\` datetime not null, \`used_at\` datetime null, \`data\` json null, \`created_at\` datetime not null, constraint \`one_time_tokens_user_id_foreign\` foreign key(\`user_id\`) references \`users\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`))`);
    this.addSql(`create index \`one_time_tokens_user_id_index\` on \`one_time_tokens\` (\`user_id\`)`);
    this.addSql(`create unique index \`one_time_tokens_token_hash_unique\` on \`one_time_tokens\` (\`token_hash\`)`);
    this.addSql(`create index \`one_time_tokens_expires_at_index\` on \`one_time_tokens\` (\`expires_at\`)`);
    this.addSql(`create index \`one_time_tokens_user_id_purpose_created_at_index\` on \`one_time_tokens\` (\`user_id\`, \`purpose\`, \`created_at\`)`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists \`one_time_tokens\``);
    this.addSql(`drop table if exists \`login_throttles\``);
  }
}
