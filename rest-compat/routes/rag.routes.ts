import type { FastifyReply, FastifyRequest } from 'fastify';
import { body, path, type RestRoute } from '../route';
import { AppError } from '../../src/errors/catalog';
import { documentKinds } from '../../src/domains/documents';
import { requireMultipart, uploadFailure } from '../multipart';
import { PROVIDER_TIMEOUT } from '../schemas';

const KEY = 'Takes only an AI-modules key (Authorization: Bearer sk_live_svc_…) with the rag scope; any other credential is 401.';

const documentSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['doc_id', 'filename', 'type', 'mime', 'size_bytes', 'pages', 'chunks', 'created_at'],
  properties: {
    doc_id: { type: 'string', format: 'uuid' },
    filename: { type: 'string' },
    type: { type: 'string', enum: [...documentKinds] },
    mime: { type: 'string' },
    size_bytes: { type: 'integer' },
    pages: { type: 'integer' },
    chunks: { type: 'integer' },
    created_at: { type: 'string', format: 'date-time' },
  },
};

/**
 * POST /rag/upload: one multipart field `file`, read up to the limit (more is
 * 413 and nothing is kept), its type decided by its bytes.
 */
async function upload(request: FastifyRequest, reply: FastifyReply) {
  const { documents, limits } = request.server.domains.documents;
  requireMultipart(request, 'Send the file as multipart/form-data in a field named "file"');
  let bytes: Buffer | undefined;
  let filename = '';
  try {
    // Every part is read, so a second file is refused rather than dropped unseen.
    for await (const part of request.parts({ limits: { fileSize: limits.maxBytes, files: 1, fields: 5, parts: 6, fieldSize: 1024 } })) {
      if (part.type !== 'file') continue;
      if (part.fieldname !== 'file') {
        part.file.resume();
        throw AppError.validation([{ loc: ['body', part.fieldname], msg: 'the file goes in a field named "file"', type: 'value_error' }]);
      }
      filename = part.filename;
      bytes = await part.toBuffer();
      // @fastify/multipart can truncate silently on some paths: a truncated file is an oversize one.
      if (part.file.truncated) throw new AppError('payload_too_large', `The file is larger than ${Math.round(limits.maxBytes / 1024 / 1024)} MB`);
    }
  } catch (error) {
    throw uploadFailure(error, new AppError('payload_too_large', `The file is larger than ${Math.round(limits.maxBytes / 1024 / 1024)} MB, or the form has too many parts`));
  }
  if (bytes === undefined) throw AppError.validation([{ loc: ['body', 'file'], msg: 'a multipart field named "file" is required', type: 'missing' }]);
  const document = await documents.upload(request.principal, { filename, bytes });
  return reply.code(201).send({
    doc_id: document.docId,
    filename: document.filename,
    type: document.type,
    mime: document.mime,
    size_bytes: document.sizeBytes,
    pages: document.pages,
    chunks: document.chunks,
    created_at: document.createdAt.toISOString(),
  });
}

/** Document question answering (ai-modules-api.md): uploads, the caller's documents, questions. */
export const ragRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/rag/upload',
    operationId: 'uploadDocument',
    summary: 'Upload a document',
    description:
      'multipart/form-data with one field, file: PDF, Word (.docx), Excel (.xlsx), plain text or CSV, up to UPLOAD_MAX_MB (50 MB). ' +
      'The type is decided by the content, not the name: an unsupported type, or content the name contradicts (a PNG called ' +
      'report.pdf, text called photo.png or old.doc; trailing dots and spaces of the name ignored, as Windows does), is 415. Larger files are 413 and nothing is kept; zip-based files that would unpack past the limits ' +
      '(decompression bombs) are 413 before they are opened. The text is extracted, cut into passages and indexed (SQLite ' +
      `FTS5); the file itself is not kept. Answers 201 with doc_id, filename, type, size, pages and chunk counts. Free. ${KEY}`,
    tag: 'AI modules: documents',
    credential: 'module_key',
    auth: 'required',
    status: 201,
    problems: { 403: 'insufficient_scope: the key lacks the rag scope', 413: 'The file is too large, or would unpack too large', 415: 'Not an accepted type, or disguised', 422: 'No file, an unreadable file, or no text in it' },
    response: documentSchema,
    // Other text fields are read and ignored; a second file is 422.
    multipart: {
      type: 'object',
      required: ['file'],
      properties: { file: { type: 'string', format: 'binary', description: 'The document: PDF, Word (.docx), Excel (.xlsx), plain text or CSV, up to UPLOAD_MAX_MB' } },
    },
    raw: upload,
  },
  {
    method: 'GET',
    path: '/rag/docs',
    operationId: 'listDocuments',
    summary: 'Your documents',
    description: `The caller's documents, newest first: doc_id, filename, type, mime, size_bytes, pages, chunks, created_at. Free. ${KEY}`,
    tag: 'AI modules: documents',
    credential: 'module_key',
    status: 200,
    problems: { 403: 'insufficient_scope: the key lacks the rag scope' },
    field: 'documentList',
    answer: {
      body: (documents: unknown[]) => ({ documents }),
      schema: (derived) => ({ type: 'object', required: ['documents'], additionalProperties: false, properties: { documents: derived } }),
    },
  },
  {
    method: 'DELETE',
    path: '/rag/docs/:doc_id',
    operationId: 'deleteDocument',
    summary: 'Delete a document',
    description: `Deletes one of the caller's documents and its passages. Another user's document, or an unknown id, is 404. ${KEY}`,
    tag: 'AI modules: documents',
    extension: true,
    credential: 'module_key',
    status: 204,
    problems: { 403: 'insufficient_scope: the key lacks the rag scope', 404: 'You have no document with this id' },
    field: 'deleteDocument',
    args: { docId: path('doc_id') },
  },
  {
    method: 'POST',
    path: '/rag/query',
    operationId: 'ragQuery',
    summary: 'Ask your documents',
    description:
      "query, and doc_ids (optional: all the caller's documents when omitted; another user's id is 404). The answer is grounded " +
      'in the best passages (BM25) and lists them as sources [{doc_id, filename, page, snippet, score}]. With a provider the ' +
      "model writes it (engine: model), costing tokens ÷ 1,000 × the model's credit cost, rounded up; without AI_BASE_URL it is " +
      `extractive (engine: extractive): the passages' best sentences, free. ${KEY}`,
    tag: 'AI modules: documents',
    credential: 'module_key',
    status: 200,
    // Without a provider the answer is extractive, so there is no 503; with one, its failures are 502 and 504.
    problems: {
      402: 'CREDIT_EXHAUSTED or BUDGET_EXHAUSTED',
      403: 'insufficient_scope: the key lacks the rag scope',
      404: "A doc_id that is not one of the caller's documents, or model_not_found",
      422: 'model_blocked, or a bad field',
      502: 'ai_provider_error',
      504: PROVIDER_TIMEOUT,
    },
    field: 'ragQuery',
    args: { input: body() },
  },
];
