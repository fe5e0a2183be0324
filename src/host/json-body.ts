import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../errors/catalog';

/** JSON travels as UTF-8 (RFC 8259 §8.1); these labels name it. */
const UTF8_LABELS = new Set(['utf-8', 'utf8']);
const CHARSET = /;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/gi;

/** Whether every charset parameter of the Content-Type (if any) names UTF-8. */
export function declaresUtf8(contentType: string | undefined): boolean {
  if (contentType === undefined || contentType.indexOf(';') === -1) return true;
  for (const match of contentType.matchAll(CHARSET)) {
    if (!UTF8_LABELS.has((match[1] ?? match[2] ?? '').toLowerCase())) return false;
  }
  return true;
}

/**
 * The one parser of `application/json` bodies, REST and POST /graphql alike:
 * UTF-8 without a byte order mark (RFC 8259 §8.1), decoded strictly, then
 * fastify's own parser, which refuses `__proto__` and `constructor.prototype`
 * keys. Other charsets are 415, a BOM or invalid UTF-8 a 400: decoding them
 * loosely would turn bytes into U+FFFD and store what the client did not send.
 */
export const jsonBodyPlugin = fp(
  async (app) => {
    const parse = app.getDefaultJsonParser('error', 'error');
    const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request: FastifyRequest, body: Buffer, done) => {
      if (!declaresUtf8(request.headers['content-type'])) {
        return done(new AppError('unsupported_media_type', 'Send JSON as UTF-8: charset=utf-8, or no charset'), undefined);
      }
      if (body.length >= 3 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) {
        return done(new AppError('malformed_json', 'The body starts with a byte order mark; send UTF-8 JSON without one'), undefined);
      }
      let text: string;
      try {
        text = utf8.decode(body);
      } catch {
        return done(new AppError('malformed_json', 'The body is not valid UTF-8'), undefined);
      }
      // The bytes as sent, for the one route that must verify a signature over them (the billing webhook).
      request.rawBody = body;
      parse(request, text, done);
    });
  },
  { name: 'atrium-json-body' },
);

declare module 'fastify' {
  interface FastifyRequest {
    /** The JSON body's bytes as received (set by the JSON parser). */
    rawBody?: Buffer;
  }
}
