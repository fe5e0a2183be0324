import { SchemaMigration } from '../../db/schema-migration';

/** The mail outbox: every mail is stored before delivery (src/mail). */
export class Migration20261122100000MailOutbox extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.createTable('mail_outbox', (table) => {
        table.text('id').notNullable();
        table.text('to_address').notNullable();
        table.text('subject').notNullable();
        table.text('text').notNullable();
        table.text('html').notNullable();
        table.text('template').notNullable();
        table.text('status').notNullable().defaultTo('pending');
        table.integer('attempts').notNullable().defaultTo(this.literal(0));
        table.text('last_error').nullable();
        table.datetime('last_attempt_at').nullable();
        table.datetime('sent_at').nullable();
        table.text('message_id').nullable();
        table.jsonb('meta').nullable();
        table.datetime('created_at').notNullable();
        table.primary(['id']);
        table.index(['created_at'], 'mail_outbox_created_at_index');
        table.index(['status', 'created_at'], 'mail_outbox_status_created_at_index');
      }),
    );
  }

  override down(): void {
    this.schema((schema) => schema.dropTableIfExists('mail_outbox'));
  }
}
