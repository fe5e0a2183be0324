import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { Worker } from 'node:worker_threads';
import { Readable } from 'node:stream';
import { fileTypeFromBuffer } from 'file-type';
import yauzl from 'yauzl';
import mammoth from 'mammoth';
import ExcelJS from 'exceljs';
import { parse as parseCsv } from 'csv-parse/sync';
import { AppError, isAppError } from '../../errors/catalog';
import type { PdfTextInput, PdfTextMessage } from './pdf-text';
import { tidy } from './tidy';

export const documentKinds = ['pdf', 'docx', 'xlsx', 'txt', 'csv'] as const;
export type DocumentKind = (typeof documentKinds)[number];

export const DOCUMENT_MIME: Record<DocumentKind, string> = {
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  txt: 'text/plain',
  csv: 'text/csv',
};

export interface ExtractLimits {
  /** The upload limit; larger is 413. */
  maxBytes: number;
  /** Total uncompressed size of a zip container's entries (docx, xlsx), and of a PDF's streams. */
  maxUncompressedBytes: number;
  maxZipEntries: number;
  /** Uncompressed to compressed, per large entry and for the whole container. */
  maxCompressionRatio: number;
  /** Extracted text; more is 413. */
  maxTextChars: number;
  /** A PDF's pages; more is 413. */
  maxPdfPages: number;
  /** Wall time a PDF's worker may take to read it; longer is 413. */
  pdfTimeoutMs: number;
  /** V8 heap of a PDF's worker; a PDF that needs more is 413. */
  pdfHeapMb: number;
}

export const DEFAULT_EXTRACT_LIMITS: ExtractLimits = {
  maxBytes: 50 * 1024 * 1024,
  maxUncompressedBytes: 250 * 1024 * 1024,
  maxZipEntries: 10_000,
  maxCompressionRatio: 100,
  maxTextChars: 5_000_000,
  maxPdfPages: 10_000,
  pdfTimeoutMs: 30_000,
  pdfHeapMb: 512,
};

/** Entries smaller than this are not judged by their ratio: small XML compresses very well. */
const RATIO_FLOOR_BYTES = 1024 * 1024;

export interface ExtractedSection {
  /** The PDF page (1-based), the sheet number for xlsx, 1 otherwise. */
  page: number;
  text: string;
}

export interface ExtractedDocument {
  kind: DocumentKind;
  mime: string;
  pages: number;
  sections: ExtractedSection[];
}

const EXTENSIONS: Record<string, DocumentKind> = { pdf: 'pdf', docx: 'docx', xlsx: 'xlsx', txt: 'txt', csv: 'csv', text: 'txt', md: 'txt' };
/**
 * Well-known binary types Atrium does not read: text under one of these
 * names contradicts the name (a renamed file, or one dressed up to be
 * opened by the wrong program), so it is refused as a PNG called .pdf is.
 */
const BINARY_EXTENSIONS = new Set(
  [
    'png jpg jpeg jpe jfif gif bmp tif tiff webp heic heif avif ico icns psd cr2 nef dng',
    'mp3 wav flac aac ogg oga opus m4a wma aif aiff midi',
    'mp4 m4v mov avi mkv webm wmv flv mpg mpeg 3gp ogv',
    'zip gz tgz bz2 tbz2 xz txz zst 7z rar tar cab lzma iso dmg',
    'exe dll msi scr dylib class jar war apk ipa deb rpm wasm pyc',
    // Legacy Office and other documents Atrium does not read (.rtf and .dot, .pot are text formats too, so not here).
    'doc xls xlt xlsb ppt pps pptx ppsx odt ods odp',
    'sqlite sqlite3 mdb accdb pst ttf otf woff woff2 eot swf',
  ].join(' ').split(' '),
);

/** Whether a file name's extension names a binary type Atrium does not read (text under it is refused: the name contradicts it). */
export function namesBinaryType(extension: string): boolean {
  return BINARY_EXTENSIONS.has(extension);
}

/** A file name's extension, lower-cased, read as Windows reads it: trailing dots and spaces dropped ("x.pdf. " opens as x.pdf). */
export function fileExtension(filename: string): string | undefined {
  return /\.([A-Za-z0-9]+)[. ]*$/.exec(filename)?.[1]?.toLowerCase();
}

const unsupported = (what: string) =>
  new AppError('unsupported_media_type', `${what}; accepted are PDF, Word (.docx), Excel (.xlsx), plain text and CSV`);
const tooLarge = (detail: string) => new AppError('payload_too_large', detail);
const unreadable = (kind: string, _cause?: unknown) => AppError.validation([{ loc: ['body', 'file'], msg: `not a readable ${kind} file`, type: 'file' }], `The file is not a readable ${kind} file`);

/**
 * The names of a zip's entries (in memory, or a file on disk), refused when
 * it is a decompression bomb (413) or when a reader that walks its local
 * headers in file order, as exceljs's streaming workbook reader does, could
 * read anything other than what its central directory lists (422):
 * - the directory's sizes, counts and ratio are checked first;
 * - each entry's local header must agree with its directory entry (name,
 *   method, the data-descriptor flag, the sizes), and each entry is
 *   inflated once and discarded, at most to its declared size, its deflate
 *   stream ending exactly where the directory says the entry ends (a stored
 *   entry sized by a trailing descriptor may not hold that descriptor's
 *   signature, where a streaming reader would end it early);
 * - the entries must follow one another from the first byte to the
 *   directory, with nothing between them.
 */
export async function zipEntries(source: Buffer | string, limits: ExtractLimits): Promise<string[]> {
  // One descriptor for every header read of the checks (two or three an entry), not one each.
  const handle =
    typeof source === 'string'
      ? await fs.open(source, 'r').catch((error: unknown) => {
          throw unreadable('zip', error);
        })
      : null;
  try {
    return await checkedEntries(source, handle ? bytesOfFile(handle) : bytesOfBuffer(source as Buffer), limits);
  } finally {
    await handle?.close();
  }
}

function checkedEntries(source: Buffer | string, bytes: ZipBytes, limits: ExtractLimits): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const open = (callback: (error: Error | null, zip?: yauzl.ZipFile) => void) =>
      typeof source === 'string'
        ? yauzl.open(source, { lazyEntries: true, autoClose: false }, callback)
        : yauzl.fromBuffer(source, { lazyEntries: true }, callback);
    open((error, zip) => {
      if (error || !zip) return reject(unreadable('zip', error));
      const names: string[] = [];
      const spans: EntrySpan[] = [];
      let total = 0;
      let compressed = 0;
      const fail = (problem: AppError) => {
        zip.close();
        reject(problem);
      };
      zip.on('error', (e) => fail(unreadable('zip', e)));
      zip.on('entry', (entry: yauzl.Entry) => {
        names.push(entry.fileName);
        total += entry.uncompressedSize;
        compressed += entry.compressedSize;
        const bomb =
          names.length > limits.maxZipEntries ||
          total > limits.maxUncompressedBytes ||
          (entry.uncompressedSize > RATIO_FLOOR_BYTES && entry.uncompressedSize > limits.maxCompressionRatio * Math.max(1, entry.compressedSize));
        if (bomb) {
          return fail(tooLarge(`The file unpacks to more than it may (a decompression bomb?): at most ${limits.maxZipEntries} entries, ${Math.round(limits.maxUncompressedBytes / 1024 / 1024)} MB unpacked and a ${limits.maxCompressionRatio}:1 ratio`));
        }
        checkEntry(bytes, zip, entry).then(
          (end) => {
            spans.push({ offset: entry.relativeOffsetOfLocalHeader, end, flags: entry.generalPurposeBitFlag });
            zip.readEntry();
          },
          (problem: unknown) => fail(isAppError(problem) ? problem : unreadable('zip', problem)),
        );
      });
      zip.on('end', () => {
        zip.close();
        if (total > RATIO_FLOOR_BYTES && total > limits.maxCompressionRatio * Math.max(1, compressed)) {
          return reject(tooLarge(`The file unpacks ${Math.round(total / Math.max(1, compressed))} times its size (a decompression bomb?)`));
        }
        entriesTileTheFile(bytes, spans).then(
          (tiled) => (tiled ? resolve(names) : reject(unreadable('zip', 'data outside the listed entries'))),
          (e: unknown) => reject(unreadable('zip', e)),
        );
      });
      zip.readEntry();
    });
  });
}

const LOCAL_HEADER = 0x04034b50;
const DESCRIPTOR = Buffer.from([0x50, 0x4b, 0x07, 0x08]);
/** What may follow the last entry: the central directory, or (no entries) its end record, or zip64's end record. */
const DIRECTORY_RECORDS = [0x02014b50, 0x06054b50, 0x06064b50];

/** Up to `length` bytes of a zip at `position` (fewer at its end). */
type ZipBytes = (position: number, length: number) => Promise<Buffer>;

const bytesOfBuffer = (buffer: Buffer): ZipBytes => async (position, length) => buffer.subarray(position, position + length);

const bytesOfFile =
  (handle: fs.FileHandle): ZipBytes =>
  async (position, length) => {
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await handle.read(buffer, 0, length, position);
    return buffer.subarray(0, bytesRead);
  };

/** A zip64 extra field's sizes (header 0x0001), for a local header whose 32-bit sizes are 0xFFFFFFFF. */
function zip64Sizes(extra: Buffer): { uncompressed: number; compressed: number } | null {
  for (let at = 0; at + 4 <= extra.length; ) {
    const id = extra.readUInt16LE(at);
    const size = extra.readUInt16LE(at + 2);
    if (id === 0x0001 && size >= 16) return { uncompressed: Number(extra.readBigUInt64LE(at + 4)), compressed: Number(extra.readBigUInt64LE(at + 12)) };
    at += 4 + size;
  }
  return null;
}

/**
 * One entry: its local header agrees with the directory, and its data
 * unpacks as the directory says (see zipEntries). Answers where its data
 * ends (before any descriptor).
 */
async function checkEntry(readAt: ZipBytes, zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<number> {
  const disagrees = (what: string) => unreadable('zip', `${entry.fileName}: the local header's ${what} differ from the directory's`);
  const fixed = await readAt(entry.relativeOffsetOfLocalHeader, 30);
  if (fixed.length < 30 || fixed.readUInt32LE(0) !== LOCAL_HEADER) throw unreadable('zip', 'no local header where the directory points');
  const flags = fixed.readUInt16LE(6);
  const method = fixed.readUInt16LE(8);
  const nameLength = fixed.readUInt16LE(26);
  const extraLength = fixed.readUInt16LE(28);
  const rest = await readAt(entry.relativeOffsetOfLocalHeader + 30, nameLength + extraLength);
  if (!rest.subarray(0, nameLength).equals(entry.fileNameRaw)) throw disagrees('name');
  const end = entry.relativeOffsetOfLocalHeader + 30 + nameLength + extraLength + entry.compressedSize;
  if (method !== entry.compressionMethod) throw disagrees('method');
  const described = (flags & 0x8) !== 0;
  if (described !== ((entry.generalPurposeBitFlag & 0x8) !== 0)) throw disagrees('flags');
  if (!described) {
    let compressedSize = fixed.readUInt32LE(18);
    let uncompressedSize = fixed.readUInt32LE(22);
    if (compressedSize === 0xffffffff || uncompressedSize === 0xffffffff) {
      const wide = zip64Sizes(rest.subarray(nameLength));
      if (!wide) throw disagrees('sizes');
      ({ compressed: compressedSize, uncompressed: uncompressedSize } = wide);
    }
    if (compressedSize !== entry.compressedSize || uncompressedSize !== entry.uncompressedSize) throw disagrees('sizes');
  }
  if (method !== 0 && method !== 8) throw unsupported('The file uses a zip compression method other than deflate');
  const raw = await new Promise<Readable>((resolve, reject) => zip.openReadStream(entry, method === 8 ? { decompress: false } : {}, (e, stream) => (e || !stream ? reject(e) : resolve(stream))));
  const tooMuch = () => tooLarge('The file unpacks to more than its entries declare (a decompression bomb?)');
  if (method === 0) {
    if (entry.compressedSize !== entry.uncompressedSize) throw disagrees('sizes');
    if (!described) {
      raw.resume();
      return end;
    }
    // A streaming reader ends a stored entry sized by its descriptor at the first descriptor signature.
    let tail = Buffer.alloc(0);
    for await (const chunk of raw as AsyncIterable<Buffer>) {
      const window = Buffer.concat([tail, chunk]);
      if (window.includes(DESCRIPTOR)) throw unreadable('zip', `${entry.fileName}: a stored entry holds a data descriptor's signature`);
      tail = window.subarray(Math.max(0, window.length - 3));
    }
    return end;
  }
  const inflate = zlib.createInflateRaw();
  let unpacked = 0;
  await new Promise<void>((resolve, reject) => {
    const stop = (problem: unknown) => {
      raw.destroy();
      inflate.destroy();
      reject(problem);
    };
    inflate.on('data', (chunk: Buffer) => {
      unpacked += chunk.length;
      if (unpacked > entry.uncompressedSize) stop(tooMuch());
    });
    inflate.on('error', (e) => stop(unreadable('zip', e)));
    raw.on('error', (e) => stop(unreadable('zip', e)));
    inflate.on('end', () => {
      // The deflate stream must end exactly where the directory ends the entry: bytes after its end are where a hidden entry would start.
      if (inflate.bytesWritten !== entry.compressedSize || unpacked !== entry.uncompressedSize) stop(unreadable('zip', `${entry.fileName}: its data is not the size the directory says`));
      else resolve();
    });
    raw.pipe(inflate);
  });
  return end;
}

interface EntrySpan {
  /** Its local header's offset. */
  offset: number;
  /** Where its data ends, before any descriptor. */
  end: number;
  flags: number;
}

/**
 * Whether the entries the central directory lists follow one another from
 * the file's first byte to the directory, with nothing between them. A
 * streaming reader (exceljs's workbook reader) walks the local headers in
 * file order, not the directory: an entry hidden in a gap would be unpacked
 * there though the checks above never saw it.
 */
async function entriesTileTheFile(readAt: ZipBytes, spans: EntrySpan[]): Promise<boolean> {
  const signature = async (position: number) => {
    const bytes = await readAt(position, 4);
    return bytes.length === 4 ? bytes.readUInt32LE(0) : -1;
  };
  // After an entry comes another local header or the directory.
  const follows = async (position: number) => [LOCAL_HEADER, ...DIRECTORY_RECORDS].includes(await signature(position));
  let expected = 0;
  for (const span of spans.sort((x, y) => x.offset - y.offset)) {
    if (span.offset !== expected) return false;
    expected = span.end;
    // Bit 3: the sizes follow the data in a descriptor, with or without its signature, with 4- or (zip64) 8-byte sizes.
    if (span.flags & 0x8) {
      const lengths = (await signature(expected)) === DESCRIPTOR.readUInt32LE(0) ? [16, 24] : [12, 20];
      let found = false;
      for (const length of lengths) {
        if (await follows(expected + length)) {
          expected += length;
          found = true;
          break;
        }
      }
      if (!found) return false;
    }
  }
  return DIRECTORY_RECORDS.includes(await signature(expected));
}

export type TextEncoding = 'utf-8' | 'utf-16le' | 'utf-16be' | 'windows-1252';

/** Windows-1252's characters at 0x80 to 0x9F (five bytes there are unassigned and stay C1 controls). */
const CP1252_HIGH = '\u20ac\u0081\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\u008d\u017d\u008f\u0090\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u009d\u017e\u0178';

/**
 * Windows-1252 bytes as text. Node's TextDecoder takes the label but decodes
 * ISO-8859-1, where 0x80 to 0x9F are control characters rather than the euro
 * sign, dashes and quotes Excel writes there. One byte a character, so any
 * chunk of a file decodes on its own.
 */
export function decodeWindows1252(bytes: Buffer): string {
  return bytes.toString('latin1').replace(/[\u0080-\u009f]/g, (c) => CP1252_HIGH[c.charCodeAt(0) - 0x80]!);
}

/**
 * Text of a file that is text, and the encoding it was read in: UTF-8 (a BOM
 * allowed) or UTF-16 with its BOM, else Windows-1252 (what Excel on Windows
 * saves a CSV in, the ISO-8859-1 letters included), with few control
 * characters; null otherwise (binary content).
 */
export function decodeTextAs(bytes: Buffer): { text: string; encoding: TextEncoding } | null {
  let text: string;
  let encoding: TextEncoding;
  try {
    if (bytes[0] === 0xff && bytes[1] === 0xfe) [text, encoding] = [new TextDecoder('utf-16le', { fatal: true }).decode(bytes.subarray(2)), 'utf-16le'];
    else if (bytes[0] === 0xfe && bytes[1] === 0xff) [text, encoding] = [new TextDecoder('utf-16be', { fatal: true }).decode(bytes.subarray(2)), 'utf-16be'];
    else [text, encoding] = [new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes), 'utf-8'];
  } catch {
    if (bytes[0] === 0xff || bytes[0] === 0xfe) return null;
    // Not UTF-8: a single-byte legacy encoding reads any bytes, so only the checks below tell text from binary.
    [text, encoding] = [decodeWindows1252(bytes), 'windows-1252'];
  }
  if (text.includes('\u0000')) return null;
  // Control characters other than tab, newline, form feed and carriage return mark binary content.
  const controls = (text.match(/[^\P{Cc}\t\n\f\r]/gu) ?? []).length;
  return controls > text.length / 100 ? null : { text, encoding };
}

/** Text of a file that is text (see decodeTextAs); null otherwise. */
export function decodeText(bytes: Buffer): string | null {
  return decodeTextAs(bytes)?.text ?? null;
}

function looksLikeCsv(text: string): boolean {
  try {
    const rows = parseCsv(text.slice(0, 20_000).split(/\r?\n/).slice(0, 20).join('\n'), { relax_column_count: false, skip_empty_lines: true }) as string[][];
    return rows.length >= 2 && rows[0]!.length >= 2;
  } catch {
    return false;
  }
}

/** The kind of an upload, decided by its bytes; the file name only tells CSV from plain text, and may not contradict the bytes. */
export async function detectDocumentKind(bytes: Buffer, filename: string, limits: ExtractLimits = DEFAULT_EXTRACT_LIMITS): Promise<DocumentKind> {
  const extension = fileExtension(filename);
  const named = extension ? EXTENSIONS[extension] : undefined;
  let kind: DocumentKind;
  if (bytes.subarray(0, 5).toString('latin1') === '%PDF-') kind = 'pdf';
  else if (bytes.length >= 4 && bytes.readUInt32LE(0) === 0x04034b50) {
    const names = await zipEntries(bytes, limits);
    if (names.includes('word/document.xml')) kind = 'docx';
    else if (names.includes('xl/workbook.xml')) kind = 'xlsx';
    else throw unsupported('The file is a zip archive, not a Word or Excel document');
  } else {
    const text = decodeText(bytes);
    if (text === null) {
      const type = await fileTypeFromBuffer(bytes);
      throw unsupported(type ? `The file is ${type.mime}` : 'The file is binary content of no accepted type');
    }
    if (extension && namesBinaryType(extension)) throw unsupported(`The content is text but the file name says .${extension}`);
    kind = named === 'csv' || (named === undefined && looksLikeCsv(text)) ? 'csv' : 'txt';
  }
  const bothText = (named === 'txt' || named === 'csv') && (kind === 'txt' || kind === 'csv');
  if (named && named !== kind && !bothText) {
    throw unsupported(`The content is ${kind.toUpperCase()} but the file name says .${extension}`);
  }
  return kind;
}

const PDF_WORKER = path.join(__dirname, 'pdf-text.worker.js');
/** PDF workers at once, one a core (up to 4); further PDFs wait for one to end. */
const PDF_WORKERS = Math.max(1, Math.min(4, os.availableParallelism()));
let pdfWorkersBusy = 0;
let pdfWorkersAlive = 0;
const pdfQueue: (() => void)[] = [];

/** PDF workers started and not yet exited (for tests: a refused PDF leaves none behind). */
export function runningPdfWorkers(): number {
  return pdfWorkersAlive;
}

/** Runs `read` when fewer than PDF_WORKERS others run; its slot passes to the next in line once it has ended. */
async function inPdfSlot<T>(read: () => Promise<T>): Promise<T> {
  if (pdfWorkersBusy < PDF_WORKERS) pdfWorkersBusy++;
  else await new Promise<void>((resolve) => pdfQueue.push(resolve));
  try {
    return await read();
  } finally {
    const next = pdfQueue.shift();
    if (next) next();
    else pdfWorkersBusy--;
  }
}

/**
 * A PDF's pages, read by pdf.js in a worker thread started for it (see
 * pdf-text.ts), never on the event loop: a PDF that takes longer than
 * pdfTimeoutMs or needs more than pdfHeapMb is 413 and its worker is ended
 * before this answers.
 */
function pdfSections(bytes: Buffer, limits: ExtractLimits): Promise<ExtractedSection[]> {
  return inPdfSlot(
    () =>
      new Promise<ExtractedSection[]>((resolve, reject) => {
        const input: PdfTextInput = { bytes, maxUncompressedBytes: limits.maxUncompressedBytes, maxPages: limits.maxPdfPages, maxTextChars: limits.maxTextChars };
        const worker = new Worker(PDF_WORKER, {
          workerData: input,
          env: {},
          argv: [],
          execArgv: [],
          stdout: true,
          stderr: true,
          resourceLimits: { maxOldGenerationSizeMb: limits.pdfHeapMb, maxYoungGenerationSizeMb: 32, stackSizeMb: 4 },
        });
        pdfWorkersAlive++;
        // pdf.js may print about a broken file; nobody reads it, so let it drain.
        worker.stdout.resume();
        worker.stderr.resume();
        let outcome: (() => void) | null = null;
        // The first outcome wins; it is answered once the worker has exited, so the slot is free and nothing is left running.
        const finish = (answer: () => void) => {
          if (outcome) return;
          outcome = answer;
          clearTimeout(timer);
          void worker.terminate().catch(() => undefined);
        };
        const timer = setTimeout(() => finish(() => reject(tooLarge(`The PDF takes longer than ${Math.round(limits.pdfTimeoutMs / 1000)} s to read`))), limits.pdfTimeoutMs);
        worker.once('message', (message: PdfTextMessage) =>
          finish(() => {
            if ('pages' in message) resolve(message.pages.map((text, i) => ({ page: i + 1, text })));
            else if ('tooLarge' in message) reject(tooLarge(message.tooLarge));
            else reject(unreadable('PDF', message.unreadable));
          }),
        );
        worker.once('error', (error: Error & { code?: string }) =>
          finish(() => reject(error.code === 'ERR_WORKER_OUT_OF_MEMORY' ? tooLarge(`The PDF needs more than ${limits.pdfHeapMb} MB of memory to read`) : unreadable('PDF', error))),
        );
        worker.once('exit', () => {
          pdfWorkersAlive--;
          finish(() => reject(unreadable('PDF', 'its reader exited')));
          outcome!();
        });
      }),
  );
}

async function xlsxSections(bytes: Buffer, limits: ExtractLimits): Promise<ExtractedSection[]> {
  const sections: ExtractedSection[] = [];
  let chars = 0;
  try {
    const reader = new ExcelJS.stream.xlsx.WorkbookReader(Readable.from(bytes), { sharedStrings: 'cache', hyperlinks: 'ignore', styles: 'ignore', worksheets: 'emit', entries: 'ignore' });
    let sheet = 0;
    for await (const worksheet of reader) {
      sheet++;
      const lines: string[] = [];
      for await (const row of worksheet as AsyncIterable<ExcelJS.Row>) {
        const cells = (row.values as unknown[]).slice(1).map((c) => cellText(c).trim()).filter((c) => c !== '');
        if (!cells.length) continue;
        const line = cells.join(', ');
        chars += line.length + 1;
        if (chars > limits.maxTextChars) throw tooLarge(`The file holds more than ${limits.maxTextChars} characters of text`);
        lines.push(line);
      }
      sections.push({ page: sheet, text: lines.join('\n') });
    }
  } catch (error) {
    if (error instanceof AppError) throw error;
    throw unreadable('Excel', error);
  }
  return sections;
}

/** The text of an Excel cell as exceljs reads it: rich text, hyperlinks and formula results included, dates as YYYY-MM-DD. */
export function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (value instanceof Date) {
    // A workbook's dates carry no zone (exceljs reads them as UTC): the day, and the time when it has one.
    if (Number.isNaN(value.getTime())) return '';
    const iso = value.toISOString();
    return iso.endsWith('T00:00:00.000Z') ? iso.slice(0, 10) : iso.slice(0, 19).replace('T', ' ');
  }
  if (typeof value === 'object') {
    const v = value as { result?: unknown; text?: unknown; richText?: { text: string }[]; error?: unknown };
    if (v.richText) return v.richText.map((r) => r.text).join('');
    if (v.text !== undefined) return String(v.text);
    if (v.result !== undefined) return cellText(v.result);
    // An error value (#DIV/0!, #N/A): what the spreadsheet shows, so a row of them is not taken for an empty one.
    if (typeof v.error === 'string') return v.error;
    return '';
  }
  return String(value);
}

/**
 * The text of an upload, by its kind: PDF pages (unpdf), Word paragraphs
 * (mammoth), Excel rows streamed sheet by sheet (exceljs), CSV rows,
 * plain text. Zip containers are checked for decompression bombs before any
 * library opens them (mammoth reads the whole file, so the central-directory
 * check and the ratio limit are its guard; Excel is streamed with a text
 * cap). Whatever a library makes of broken input is 422, never a 500.
 */
export async function extractDocument(bytes: Buffer, filename: string, limits: ExtractLimits = DEFAULT_EXTRACT_LIMITS): Promise<ExtractedDocument> {
  if (bytes.length > limits.maxBytes) throw tooLarge(`The file is larger than ${Math.round(limits.maxBytes / 1024 / 1024)} MB`);
  if (bytes.length === 0) throw AppError.validation([{ loc: ['body', 'file'], msg: 'the file is empty', type: 'file' }], 'The file is empty');
  const kind = await detectDocumentKind(bytes, filename, limits);
  let sections: ExtractedSection[];
  if (kind === 'pdf') sections = await pdfSections(bytes, limits);
  else if (kind === 'docx') {
    try {
      sections = [{ page: 1, text: tidy((await mammoth.extractRawText({ buffer: bytes })).value) }];
    } catch (error) {
      throw unreadable('Word', error);
    }
  } else if (kind === 'xlsx') sections = await xlsxSections(bytes, limits);
  else {
    const text = decodeText(bytes)!;
    if (kind === 'csv') {
      let rows: string[][];
      try {
        rows = parseCsv(text, { relax_column_count: true, relax_quotes: true, skip_empty_lines: true, bom: true }) as string[][];
      } catch (error) {
        throw unreadable('CSV', error);
      }
      sections = [{ page: 1, text: rows.map((r) => r.map((c) => c.trim()).filter(Boolean).join(', ')).join('\n') }];
    } else sections = [{ page: 1, text: tidy(text.replace(/^\uFEFF/, '')) }];
  }
  const chars = sections.reduce((n, s) => n + s.text.length, 0);
  if (chars > limits.maxTextChars) throw tooLarge(`The file holds more than ${limits.maxTextChars} characters of text`);
  const pages = kind === 'pdf' || kind === 'xlsx' ? sections.length : 1;
  sections = sections.filter((s) => s.text.trim());
  if (!sections.length) {
    throw AppError.validation([{ loc: ['body', 'file'], msg: 'no extractable text (a scanned PDF?)', type: 'file' }], 'The file has no extractable text (a scanned PDF?)');
  }
  return { kind, mime: DOCUMENT_MIME[kind], pages, sections };
}

export interface Chunk {
  page: number;
  ordinal: number;
  text: string;
}

/**
 * Passages of about `targetChars` for the index, overlapping by about
 * `overlapChars`, cut at paragraph, sentence or word boundaries where there
 * is one; ordinals run across the document.
 */
export function chunkSections(sections: readonly ExtractedSection[], options: { targetChars?: number; overlapChars?: number } = {}): Chunk[] {
  const target = options.targetChars ?? 1000;
  const overlap = options.overlapChars ?? 150;
  const chunks: Chunk[] = [];
  for (const section of sections) {
    const text = section.text;
    let start = 0;
    while (start < text.length) {
      let end = Math.min(text.length, start + target);
      if (end < text.length) {
        const window = text.slice(start + Math.floor(target / 2), end);
        const cut = Math.max(window.lastIndexOf('\n\n'), window.lastIndexOf('. '), window.lastIndexOf('\n'));
        const space = window.lastIndexOf(' ');
        const at = cut >= 0 ? cut + 1 : space >= 0 ? space : -1;
        if (at >= 0) end = start + Math.floor(target / 2) + at + 1;
      }
      const piece = text.slice(start, end).trim();
      if (piece) chunks.push({ page: section.page, ordinal: chunks.length, text: piece });
      if (end >= text.length) break;
      // Step back for the overlap, to a word boundary.
      let next = Math.max(start + 1, end - overlap);
      const space = text.indexOf(' ', next);
      if (space !== -1 && space < end) next = space + 1;
      start = next;
    }
  }
  return chunks;
}
