import { SchemaMigration } from '../../../db/schema-migration';

/**
 * Drops chat_messages' index on session_id alone: the (session_id, created_at)
 * index serves every lookup by session, and each index is one more page
 * written by every message a chat stores.
 */
export class Migration20261202000000ChatMessageIndex extends SchemaMigration {
  override up(): void {
    this.dropIndexIfExists('chat_messages_session_id_index');
  }

  override down(): void {
    this.schema((schema) =>
      schema.alterTable('chat_messages', (table) => {
        table.index(['session_id'], 'chat_messages_session_id_index');
      }),
    );
  }
}
