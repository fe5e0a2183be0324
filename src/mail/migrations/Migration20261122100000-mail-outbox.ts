import { Migration } from '@mikro-orm/migrations';

/** The mail outbox: every mail is stored before delivery (src/mail). */
export class Migration20261122100000MailOutbox extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table \`mail_outbox\` (\`id\` text not null, \`to_address\` text not null, \`subject\` text not null, \`text\` text not null, \`html\` text not null, \`template\` text not null, \`status\` text not null default 'pending', \`attempts\` integer not null default 0, \`last_error\` text null, \`last_attempt_at\` datetime null, \`sent_at\` datetime null, \`message_id\` text null, \`meta\` json null, \`created_at\` datetime not null, primary key (\`id\`))`);
    this.addSql(`create index \`mail_outbox_created_at_index\` on \`mail_outbox\` (\`created_at\`)`);
    this.addSql(`create index \`mail_outbox_status_created_at_index\` on \`mail_outbox\` (\`status\`, \`created_at\`)`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists \`mail_outbox\``);
  }
}
