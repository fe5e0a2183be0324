import type { IncomingHttpHeaders } from 'node:http';
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

/**
 * 415 for a request body sent in a content coding (gzip, br, …), on every
 * server: none of Atrium's decodes one (RFC 9110 §15.5.16), and reading the
 * coded bytes as they are would parse garbage, or take a mislabelled plain
 * body as if the label were not there. `identity` is no coding.
 */
export function refuseContentCoding(headers: IncomingHttpHeaders): void {
  const coding = headers['content-encoding'];
  if (coding === undefined) return;
  const codings = coding.split(',').map((c) => c.trim().toLowerCase());
  if (codings.every((c) => c === '' || c === 'identity')) return;
  throw new AppError('unsupported_media_type', `Content-Encoding ${JSON.stringify(coding.slice(0, 100))} is not accepted: send the body unencoded`);
}
