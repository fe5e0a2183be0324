import { Migration } from '@mikro-orm/migrations';

/** TOTP second factor: sealed secrets and the replay guard on users, hashed recovery codes. */
export class Migration20261122100100Mfa extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table \`mfa_recovery_codes\` (\`id\` text not null, \`user_id\` text not null, \`code_hash\` text not null, \`created_at\` datetime not null, \`used_at\` datetime null, constraint \`mfa_recovery_codes_user_id_foreign\` foreign key(\`user_id\`) references \`users\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`))`);
    this.addSql(`create index \`mfa_recovery_codes_user_id_index\` on \`mfa_recovery_codes\` (\`user_id\`)`);
    this.addSql(`create unique index \`mfa_recovery_codes_user_id_code_hash_unique\` on \`mfa_recovery_codes\` (\`user_id\`, \`code_hash\`)`);
    this.addSql(`alter table \`users\` add column \`mfa_enabled\` integer not null default false`);
    this.addSql(`alter table \`users\` add column \`mfa_enabled_at\` datetime null`);
    this.addSql(`alter table \`users\` add column \`mfa_secret\` text null`);
    this.addSql(`alter table \`users\` add column \`mfa_pending_secret\` text null`);
    this.addSql(`alter table \`users\` add column \`mfa_last_step\` integer not null default 0`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists \`mfa_recovery_codes\``);
    for (const column of ['mfa_enabled', 'mfa_enabled_at', 'mfa_secret', 'mfa_pending_secret', 'mfa_last_step']) {
      this.addSql(`alter table \`users\` drop column \`${column}\``);
    }
  }
}
