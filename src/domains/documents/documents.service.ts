import { randomUUID } from 'node:crypto';
import type { ReadStore } from '../../db/read-store';
import type { SqliteWriter } from '../../db/sqlite-writer';
import { AppError } from '../../errors/catalog';
import { textLength } from '../../errors/text-length';
import { requireModuleCaller, type ModuleCaller } from '../../auth/policy';
import type { Principal, RequestMeta } from '../../auth/principal';
import { creditsFor, type AiApi } from '../ai';
import type { CatalogService } from '../catalog';
import { chunkSections, DOCUMENT_MIME, extractDocument, type DocumentKind, type ExtractLimits } from './extract';
import { storedFileName } from '../../file-name';
import { indexedText, queryTerms, shownText } from './cjk';

export interface DocumentView {
  docId: string;
  filename: string;
  type: DocumentKind;
  mime: string;
  sizeBytes: number;
  pages: number;
  chunks: number;
  createdAt: Date;
}

export interface RagSource {
  docId: string;
  filename: string;
  page: number;
  snippet: string;
  /** BM25 relevance, higher is better. */
  score: number;
}

export interface RagAnswer {
  answer: string;
  /** `model`: written by the model from the passages; `extractive`: the passages' best sentences, without a model. */
  engine: 'model' | 'extractive';
  sources: RagSource[];
  tokens: number;
  creditsUsed: number;
}

interface DocumentRow {
  id: string;
  filename: string;
  kind: DocumentKind;
  size_bytes: number;
  pages: number;
  chunks: number;
  created_at: number;
}

const view = (r: DocumentRow): DocumentView => ({
  docId: r.id,
  filename: r.filename,
  type: r.kind,
  mime: DOCUMENT_MIME[r.kind],
  sizeBytes: r.size_bytes,
  pages: r.pages,
  chunks: r.chunks,
  createdAt: new Date(r.created_at),
});

export const RAG_QUERY_MAX = 2000;
export const RAG_DOC_IDS_MAX = 100;
/** Passages a query reads, best first. */
const TOP_PASSAGES = 6;
const MAX_QUERY_TERMS = 32;

/** A query as FTS5 terms: its words and CJK character pairs (./cjk.ts), each quoted (so no query syntax gets through), any of them matching. */
function matchExpression(query: string): string | null {
  const { words, pairs } = queryTerms(query);
  const terms = [...new Set([...words.filter((w) => w.length > 1), ...pairs])].slice(0, MAX_QUERY_TERMS);
  return terms.length ? terms.map((w) => `"${w}"`).join(' OR ') : null;
}

/**
 * A user's documents: upload (text extracted, cut into passages, indexed
 * with SQLite FTS5), list, delete, and questions answered from the best
 * passages (BM25). Documents never cross users: every read names the user.
 */
export class DocumentsService {
  constructor(
    private readonly writer: SqliteWriter,
    private readonly reads: ReadStore,
    private readonly ai: AiApi,
    private readonly catalog: CatalogService,
    private readonly limits: ExtractLimits,
  ) {}

  async upload(principal: Principal, file: { filename: string; bytes: Buffer }): Promise<DocumentView> {
    const caller = requireModuleCaller(principal, 'rag');
    const filename = storedFileName(file.filename, 'upload');
    const extracted = await extractDocument(file.bytes, filename, this.limits);
    const chunks = chunkSections(extracted.sections);
    const id = randomUUID();
    const now = Date.now();
    // The row and its passages in one transaction: a document is searchable whole or not at all.
    await this.writer.write((sql) => {
      sql.run(
        'insert into documents (id, company_id, user_id, filename, kind, size_bytes, pages, chunks, created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?)',
        id,
        caller.companyId,
        caller.userId,
        filename,
        extracted.kind,
        file.bytes.length,
        extracted.pages,
        chunks.length,
        now,
      );
      for (const chunk of chunks) {
        sql.run('insert into document_chunks_fts (text, document_id, user_id, page, ordinal) values (?, ?, ?, ?, ?)', indexedText(chunk.text), id, caller.userId, chunk.page, chunk.ordinal);
      }
    });
    return { docId: id, filename, type: extracted.kind, mime: extracted.mime, sizeBytes: file.bytes.length, pages: extracted.pages, chunks: chunks.length, createdAt: new Date(now) };
  }

  list(principal: Principal): DocumentView[] {
    const caller = requireModuleCaller(principal, 'rag');
    return this.reads
      .all<DocumentRow>('select id, filename, kind, size_bytes, pages, chunks, created_at from documents where user_id = ? order by created_at desc, id desc', caller.userId)
      .map(view);
  }

  /** Deletes one of the caller's documents and its passages; another user's, or an unknown id, is 404. */
  async delete(principal: Principal, docId: string): Promise<void> {
    const caller = requireModuleCaller(principal, 'rag');
    const deleted = await this.writer.write((sql) => sql.run('delete from documents where id = ? and user_id = ?', docId, caller.userId).changes);
    if (!deleted) throw new AppError('not_found', 'You have no document with this id');
  }

  async query(principal: Principal, input: { query: string; docIds?: readonly string[] | null; model?: string | null }, meta: RequestMeta): Promise<RagAnswer> {
    const caller = requireModuleCaller(principal, 'rag');
    if (!input.query.trim() || textLength(input.query) > RAG_QUERY_MAX) {
      throw AppError.validation([{ loc: ['body', 'query'], msg: `1 to ${RAG_QUERY_MAX} characters`, type: 'string_length' }]);
    }
    const docIds = input.docIds ? [...new Set(input.docIds)] : null;
    if (docIds) this.requireOwn(caller, docIds);
    const sources = this.passages(caller, input.query, docIds);
    const generative = this.ai.engine.configured;
    if (!sources.length) {
      return { answer: 'No passage of your documents matches the question.', engine: 'extractive', sources: [], tokens: 0, creditsUsed: 0 };
    }
    if (!generative) return { answer: extractiveAnswer(input.query, sources), engine: 'extractive', sources: sources.map(shortSnippet), tokens: 0, creditsUsed: 0 };

    const model = this.catalog.resolve(input.model ?? this.ai.config.defaultModel);
    const context = sources.map((s, i) => `[${i + 1}] ${s.filename}, page ${s.page}:\n${s.snippet}`).join('\n\n');
    const messages = [
      {
        role: 'system' as const,
        content:
          "Answer the user's question from the numbered passages of their documents only, citing them as [n]. If the passages do not answer it, say so.\n\n" +
          context,
      },
      { role: 'user' as const, content: input.query },
    ];
    const maxTokens = this.ai.config.maxOutputTokens;
    const most = Math.ceil((context.length + input.query.length) / 4 * 1.5) + 50 + maxTokens;
    const { value, creditsUsed, tokens } = await this.ai.credits.spend(
      caller,
      { credits: creditsFor(most, model), key: `rag:${meta.requestId}`, feature: 'rag', model },
      async () => {
        const completion = await this.ai.engine.complete({ model, messages, maxTokens });
        return { value: completion.content, tokens: completion.usage.totalTokens, credits: creditsFor(completion.usage.totalTokens, model) };
      },
    );
    return { answer: value.trim(), engine: 'model', sources: sources.map(shortSnippet), tokens, creditsUsed };
  }

  /** 404 unless every id is one of the caller's documents (another user's look the same as unknown ones). */
  private requireOwn(caller: ModuleCaller, docIds: string[]): void {
    if (docIds.length > RAG_DOC_IDS_MAX) throw AppError.validation([{ loc: ['body', 'doc_ids'], msg: `at most ${RAG_DOC_IDS_MAX} ids`, type: 'too_long' }]);
    if (!docIds.length) throw AppError.validation([{ loc: ['body', 'doc_ids'], msg: 'name at least one document, or omit it for all', type: 'too_short' }]);
    const placeholders = docIds.map(() => '?').join(', ');
    const found = this.reads.all<{ id: string }>(`select id from documents where user_id = ? and id in (${placeholders})`, caller.userId, ...docIds);
    if (found.length !== docIds.length) {
      const missing = docIds.find((id) => !found.some((f) => f.id === id));
      throw new AppError('not_found', `You have no document ${missing}`);
    }
  }

  /** The best passages for a question, BM25-ranked, of the caller's documents (or the named ones). */
  private passages(caller: ModuleCaller, query: string, docIds: string[] | null): RagSource[] {
    const match = matchExpression(query);
    if (!match) return [];
    const only = docIds ? ` and f.document_id in (${docIds.map(() => '?').join(', ')})` : '';
    const rows = this.reads.all<{ document_id: string; filename: string; page: number; text: string; score: number }>(
      `select f.document_id, d.filename, f.page, f.text, bm25(document_chunks_fts) as score
         from document_chunks_fts f join documents d on d.id = f.document_id
        where document_chunks_fts match ? and f.user_id = ?${only}
        order by score limit ${TOP_PASSAGES}`,
      match,
      caller.userId,
      ...(docIds ?? []),
    );
    // FTS5's bm25 is lower-is-better (negative); sources show higher-is-better.
    return rows.map((r) => ({ docId: r.document_id, filename: r.filename, page: r.page, snippet: shownText(r.text), score: -r.score }));
  }
}

const shortSnippet = (s: RagSource): RagSource => ({ ...s, snippet: s.snippet.length > 400 ? `${s.snippet.slice(0, 400)}…` : s.snippet });

/** Without a model: the sentences of the best passages that share the most words with the question. */
function extractiveAnswer(query: string, sources: RagSource[]): string {
  const { words: queryWords, pairs } = queryTerms(query);
  const terms = new Set(queryWords);
  // CJK pairs as the text holds them, without the space of the phrase.
  const grams = [...new Set(pairs)].map((p) => p.replace(' ', ''));
  const scored: { sentence: string; score: number; order: number }[] = [];
  sources.slice(0, 3).forEach((source, s) => {
    // CJK full stops are followed by no space.
    for (const sentence of source.snippet.split(/(?<=[.!?])\s+|(?<=[。！？])|\n+/)) {
      const lower = sentence.toLowerCase();
      const words = lower.match(/[\p{L}\p{N}]+/gu) ?? [];
      const shared = grams.filter((g) => lower.includes(g)).length;
      const score = words.filter((w) => terms.has(w)).length + shared;
      // A CJK sentence says in a few characters what takes ten in Latin letters.
      if (score && sentence.trim().length > (shared ? 3 : 10)) scored.push({ sentence: sentence.trim(), score: score - s * 0.1, order: scored.length });
    }
  });
  const best = scored.sort((a, b) => b.score - a.score).slice(0, 3).sort((a, b) => a.order - b.order);
  return best.length ? best.map((b) => b.sentence).join(' ') : sources[0]!.snippet.slice(0, 400);
}
