import { SchemaMigration } from '../../../db/schema-migration';

/** A session's revision, bumped by every write of its history: what a cached history is checked against. */
export class Migration20261127000000ChatRevision extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.alterTable('chat_sessions', (table) => {
        table.integer('revision').notNullable().defaultTo(this.literal(0));
      }),
    );
  }

  override down(): void {
    this.dropColumns('chat_sessions', 'revision');
  }
}
