import { defineDomain, type ApiOf } from '../../kernel/domain';
import { int, type Env } from '../../env';
import { aiDomain } from '../ai';
import { catalogDomain } from '../catalog';
import { identityDomain } from '../identity';
import { Document } from './document.entity';
import { DocumentsService } from './documents.service';
import { DEFAULT_EXTRACT_LIMITS, type ExtractLimits } from './extract';
import { documentsMigrations } from './migrations';

export { Document } from './document.entity';
export { DocumentsService, RAG_QUERY_MAX, RAG_DOC_IDS_MAX, type DocumentView, type RagAnswer, type RagSource } from './documents.service';
export { extractDocument, detectDocumentKind, fileExtension, namesBinaryType, decodeText, decodeTextAs, decodeWindows1252, zipEntries, runningPdfWorkers, cellText, chunkSections, documentKinds, DOCUMENT_MIME, DEFAULT_EXTRACT_LIMITS, type DocumentKind, type ExtractLimits, type TextEncoding } from './extract';

/** Upload limits (UPLOAD_MAX_MB, 50) and the time a PDF may take to read (PDF_TIMEOUT_SECONDS, 30). */
function loadDocumentsConfig(env: Env): { documents: ExtractLimits } {
  return {
    documents: {
      ...DEFAULT_EXTRACT_LIMITS,
      maxBytes: int(env, 'UPLOAD_MAX_MB', 50, 1) * 1024 * 1024,
      pdfTimeoutMs: int(env, 'PDF_TIMEOUT_SECONDS', 30, 1, 600) * 1000,
    },
  };
}

/** Users' documents for question answering: text extraction, passages, the FTS5 index and answers grounded in it. */
export const documentsDomain = defineDomain({
  name: 'documents',
  requires: { identity: identityDomain, ai: aiDomain, catalog: catalogDomain },
  entities: [Document],
  migrations: documentsMigrations,
  config: loadDocumentsConfig,
  create: ({ kernel, config, deps }) => ({
    limits: config.documents,
    documents: new DocumentsService(kernel.writer, kernel.reads, deps.ai, deps.catalog.models, config.documents),
  }),
});

export type DocumentsApi = ApiOf<typeof documentsDomain>;
