import { Migration } from '@mikro-orm/migrations';

/**
 * Account deletion: when a requested deletion runs (indexed for the sweep).
 * Email-change links are one-time tokens (purpose `email_change`) in the
 * `one_time_tokens` table of Migration20261122100300.
 */
export class Migration20261122100400EmailChangeDeletion extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table \`users\` add column \`deletion_scheduled_for\` datetime null`);
    this.addSql(`create index \`users_deletion_scheduled_for_index\` on \`users\` (\`deletion_scheduled_for\`)`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists \`users_deletion_scheduled_for_index\``);
    this.addSql(`alter table \`users\` drop column \`deletion_scheduled_for\``);
  }
}
