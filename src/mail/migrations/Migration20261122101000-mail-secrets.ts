import { Migration } from '@mikro-orm/migrations';

/**
 * mail_outbox.secret_until: when the one-time link a mail carries stops
 * working; past it the mailer blanks the body.
 */
export class Migration20261122101000MailSecrets extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table `mail_outbox` add column `secret_until` datetime null');
    this.addSql('create index `mail_outbox_secret_until_index` on `mail_outbox` (`secret_until`)');
  }

  override async down(): Promise<void> {
    this.addSql('drop index if exists `mail_outbox_secret_until_index`');
    this.addSql('alter table `mail_outbox` drop column `secret_until`');
  }
}
