import secureJson from 'secure-json-parse';
import { AppError } from './errors/catalog';

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

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const SAFE = { protoAction: 'error', constructorAction: 'error' } as const;

/**
 * The one reading of an `application/json` body, on every server (the main
 * one and a standalone subgraph): UTF-8 without a byte order mark (RFC 8259
 * §8.1), decoded strictly, then parsed refusing `__proto__` and
 * `constructor.prototype` keys. Other charsets are 415, a BOM, invalid UTF-8
 * or JSON a 400: decoding loosely would turn bytes into U+FFFD and store what
 * the client did not send.
 */
export function parseJsonBody(body: Buffer, contentType: string | undefined): unknown {
  if (!declaresUtf8(contentType)) throw new AppError('unsupported_media_type', 'Send JSON as UTF-8: charset=utf-8, or no charset');
  if (body.length >= 3 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) {
    throw new AppError('malformed_json', 'The body starts with a byte order mark; send UTF-8 JSON without one');
  }
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw new AppError('malformed_json', 'The body is not valid UTF-8');
  }
  if (text === '') throw new AppError('malformed_json', 'The body is empty but Content-Type says JSON');
  try {
    return secureJson.parse(text, undefined, SAFE);
  } catch {
    throw new AppError('malformed_json', 'The body is not valid JSON');
  }
}
