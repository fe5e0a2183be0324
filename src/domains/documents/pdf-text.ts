import zlib from 'node:zlib';
import { tidy } from './tidy';

/**
 * PDF text, read in a worker thread (pdf-text.worker.ts, started by
 * extract.ts): nothing here may run on the server's event loop, and nothing
 * here may load the rest of the server.
 */

export interface PdfTextInput {
  bytes: Uint8Array;
  maxUncompressedBytes: number;
  maxPages: number;
  maxTextChars: number;
}

/** The worker's answer: the pages' text, or a refusal: `tooLarge` (413) or `unreadable` (422), with what to tell the caller. */
export type PdfTextMessage = { pages: string[] } | { tooLarge: string } | { unreadable: string };

const MIB = 1024 * 1024;

/** A zlib header (RFC 1950): deflate, a window of at most 32 KiB and a valid check, which pdf.js's FlateDecode requires too. */
function isZlib(data: Buffer): boolean {
  return data.length >= 2 && (data[0]! & 0x0f) === 8 && data[0]! >> 4 <= 7 && (data[0]! * 256 + data[1]!) % 31 === 0;
}

/** How much the zlib stream at the start of `data` inflates to, counted and dropped, stopping once past `max`. Damaged data counts what it gave. */
function inflatedSize(data: Buffer, max: number): Promise<number> {
  return new Promise((resolve) => {
    const inflate = zlib.createInflate();
    let size = 0;
    inflate.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        inflate.destroy();
        resolve(size);
      }
    });
    inflate.on('end', () => resolve(size));
    inflate.on('error', () => resolve(size));
    inflate.end(data);
  });
}

/**
 * Whether a PDF's streams decode to at most `max` bytes together, judged
 * before pdf.js reads it: each `stream` keyword's data that starts with a
 * zlib header (FlateDecode, whatever its dictionary says) is inflated once
 * and discarded; other data counts as its own size. A zlib stream is
 * inflated to its own end, not to the next `endstream`, so data that holds
 * that word cannot hide the rest of a stream.
 */
export async function pdfStreamsWithin(bytes: Uint8Array, max: number): Promise<boolean> {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let total = 0;
  let at = 0;
  for (;;) {
    const keyword = buffer.indexOf('stream', at, 'latin1');
    if (keyword < 0) return true;
    at = keyword + 6;
    if (keyword >= 3 && buffer.toString('latin1', keyword - 3, keyword) === 'end') continue;
    // The data starts after the keyword's end of line (CRLF or LF; pdf.js takes a lone CR too).
    let start = at;
    if (buffer[start] === 0x0d) start++;
    if (buffer[start] === 0x0a) start++;
    if (start === at) continue;
    const end = buffer.indexOf('endstream', start, 'latin1');
    const data = buffer.subarray(start, end < 0 ? buffer.length : end);
    total += isZlib(data) ? await inflatedSize(buffer.subarray(start), max - total) : data.length;
    if (total > max) return false;
    at = end < 0 ? buffer.length : end;
  }
}

/**
 * The text of each page (unpdf's pdf.js), refused when the PDF unpacks past
 * its limit, has more pages than it may, or its text grows past the limit:
 * pages are read one after another and counted as they come, so a page tree
 * that names one heavy page many times stops early.
 */
export async function pdfText(input: PdfTextInput): Promise<PdfTextMessage> {
  if (!(await pdfStreamsWithin(input.bytes, input.maxUncompressedBytes))) {
    return { tooLarge: `The PDF unpacks to more than ${Math.round(input.maxUncompressedBytes / MIB)} MB (a decompression bomb?)` };
  }
  const { getDocumentProxy } = await import('unpdf');
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    // Errors only (pdf.js VerbosityLevel.ERRORS): its warnings about a malformed upload would go to the
    // console, past the server's redacted logger, and the upload's fate is answered anyway.
    pdf = await getDocumentProxy(input.bytes, { verbosity: 0 });
  } catch (error) {
    return { unreadable: error instanceof Error ? error.message : String(error) };
  }
  if (pdf.numPages > input.maxPages) return { tooLarge: `The PDF has more than ${input.maxPages} pages` };
  const pages: string[] = [];
  let chars = 0;
  try {
    for (let number = 1; number <= pdf.numPages; number++) {
      const content = await (await pdf.getPage(number)).getTextContent();
      // As unpdf's extractText joins a page's items.
      const text = tidy((content.items as { str?: string; hasEOL?: boolean }[]).map((item) => (item.str != null ? item.str + (item.hasEOL ? '\n' : '') : '')).join(''));
      chars += text.length;
      if (chars > input.maxTextChars) return { tooLarge: `The file holds more than ${input.maxTextChars} characters of text` };
      pages.push(text);
    }
  } catch (error) {
    return { unreadable: error instanceof Error ? error.message : String(error) };
  }
  return { pages };
}
