import { SchemaMigration } from '../../../db/schema-migration';
import { indexedText } from '../cjk';

/** Passages read per query: the index is read in pages, never whole into memory. */
const PAGE = 500;

/**
 * Passages indexed before CJK characters became tokens of their own
 * (../cjk.ts) are indexed again, so documents uploaded before are found by
 * their Chinese, Japanese and Korean words too. Only passages whose indexed
 * form changes are written; text without CJK stays as it is.
 */
export class Migration20261210000000CjkPassages extends SchemaMigration {
  override async up(): Promise<void> {
    const knex = this.getKnex();
    for (let after = 0; ; ) {
      const rows = (await this.execute(knex.raw('select rowid as id, text from document_chunks_fts where rowid > ? order by rowid limit ?', [after, PAGE]))) as { id: number; text: string }[];
      if (!rows.length) break;
      for (const { id, text } of rows) {
        const indexed = indexedText(text);
        if (indexed !== text) this.addSql(knex.raw('update document_chunks_fts set text = ? where rowid = ?', [indexed, id]));
      }
      after = rows.at(-1)!.id;
    }
  }

  override down(): void {
    // The separators do not change what a passage says; the older code finds less with them, nothing wrong.
  }
}
