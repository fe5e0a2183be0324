import { SchemaMigration } from '../../db/schema-migration';

/**
 * mail_outbox.secret_until: when the one-time link a mail carries stops
 * working; past it the mailer blanks the body.
 */
export class Migration20261122101000MailSecrets extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.alterTable('mail_outbox', (table) => {
        table.datetime('secret_until').nullable();
        table.index(['secret_until'], 'mail_outbox_secret_until_index');
      }),
    );
  }

  override down(): void {
    this.dropIndexIfExists('mail_outbox_secret_until_index');
    this.dropColumns('mail_outbox', 'secret_until');
  }
}
