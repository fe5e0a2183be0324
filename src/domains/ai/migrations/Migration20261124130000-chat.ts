import { SchemaMigration } from '../../../db/schema-migration';

/** Chat conversations and their messages; a user's rows go with the user. */
export class Migration20261124130000Chat extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema
        .createTable('chat_sessions', (table) => {
          table.text('id').notNullable();
          table.text('company_id').notNullable();
          table.text('user_id').notNullable();
          table.text('key').notNullable();
          table.text('agent').notNullable();
          table.datetime('created_at').notNullable();
          table.datetime('updated_at').notNullable();
          table.foreign('company_id', 'chat_sessions_company_id_foreign').references('id').inTable('companies').onDelete('cascade').onUpdate('cascade');
          table.foreign('user_id', 'chat_sessions_user_id_foreign').references('id').inTable('users').onDelete('cascade').onUpdate('cascade');
          table.primary(['id']);
          table.index(['company_id'], 'chat_sessions_company_id_index');
          table.index(['user_id'], 'chat_sessions_user_id_index');
          table.unique(['user_id', 'key'], { indexName: 'chat_sessions_user_id_key_unique' });
        })
        .createTable('chat_messages', (table) => {
          table.text('id').notNullable();
          table.text('session_id').notNullable();
          table.text('role').notNullable();
          table.text('content').notNullable();
          table.integer('tokens').notNullable();
          table.datetime('created_at').notNullable();
          table.foreign('session_id', 'chat_messages_session_id_foreign').references('id').inTable('chat_sessions').onDelete('cascade').onUpdate('cascade');
          table.primary(['id']);
          table.index(['session_id'], 'chat_messages_session_id_index');
          table.index(['session_id', 'created_at'], 'chat_messages_session_id_created_at_index');
        }),
    );
  }

  override down(): void {
    this.schema((schema) => schema.dropTableIfExists('chat_messages').dropTableIfExists('chat_sessions'));
  }
}
