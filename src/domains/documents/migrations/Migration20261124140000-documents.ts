import { SchemaMigration } from '../../../db/schema-migration';

/**
 * Documents and their full-text index. SQLite's FTS5 (BM25 ranking) has no
 * schema-builder form, so the virtual table and the trigger that removes a
 * document's passages with it are SQL; both are SQLite's own, like the
 * index they build.
 */
export class Migration20261124140000Documents extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.createTable('documents', (table) => {
        table.text('id').notNullable();
        table.text('company_id').notNullable();
        table.text('user_id').notNullable();
        table.text('filename').notNullable();
        table.text('kind').notNullable();
        table.integer('size_bytes').notNullable();
        table.integer('pages').notNullable();
        table.integer('chunks').notNullable();
        table.datetime('created_at').notNullable();
        table.foreign('company_id', 'documents_company_id_foreign').references('id').inTable('companies').onDelete('cascade').onUpdate('cascade');
        table.foreign('user_id', 'documents_user_id_foreign').references('id').inTable('users').onDelete('cascade').onUpdate('cascade');
        table.primary(['id']);
        table.index(['company_id'], 'documents_company_id_index');
        table.index(['user_id'], 'documents_user_id_index');
        table.index(['user_id', 'created_at'], 'documents_user_id_created_at_index');
      }),
    );
    this.addSql(
      "create virtual table document_chunks_fts using fts5(text, document_id unindexed, user_id unindexed, page unindexed, ordinal unindexed, tokenize = 'porter unicode61 remove_diacritics 2')",
    );
    // A user's deletion cascades to their documents; the passages follow here.
    this.addSql('create trigger documents_passages_cleanup after delete on documents begin delete from document_chunks_fts where document_id = old.id; end');
  }

  override down(): void {
    this.addSql('drop trigger if exists documents_passages_cleanup');
    this.addSql('drop table if exists document_chunks_fts');
    this.schema((schema) => schema.dropTableIfExists('documents'));
  }
}
