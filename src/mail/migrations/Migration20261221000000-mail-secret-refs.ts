import { SchemaMigration } from '../../db/schema-migration';

/**
 * mail_outbox.secret_ref: what a mail's one-time link belongs to, so the
 * mail's body is forgotten when the link is spent or replaced, not only at
 * its expiry.
 */
export class Migration20261221000000MailSecretRefs extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.alterTable('mail_outbox', (table) => {
        table.string('secret_ref', 100).nullable();
        table.index(['secret_ref'], 'mail_outbox_secret_ref_index');
      }),
    );
  }

  override down(): void {
    this.dropIndexIfExists('mail_outbox_secret_ref_index');
    this.dropColumns('mail_outbox', 'secret_ref');
  }
}
