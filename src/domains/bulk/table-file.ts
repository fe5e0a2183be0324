import { guardCell, PLAIN_NUMBER } from '../../spreadsheet-cell';
import fs from 'node:fs';
import { once } from 'node:events';
import { pipeline } from 'node:stream/promises';
import type { Writable } from 'node:stream';
import { parse } from 'csv-parse';
import { stringify } from 'csv-stringify';
import ExcelJS from 'exceljs';
import { fileTypeFromBuffer } from 'file-type';
import { AppError } from '../../errors/catalog';
import { cellText, decodeTextAs, decodeWindows1252, fileExtension, namesBinaryType, zipEntries, type ExtractLimits, type TextEncoding } from '../documents';
import { clipText } from '../../clip-text';

export const tableKinds = ['csv', 'xlsx'] as const;
export type TableKind = (typeof tableKinds)[number];

export const TABLE_MIME: Record<TableKind, string> = {
  csv: 'text/csv; charset=utf-8',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
};

/** The bytes read to decide a file's kind and a CSV's delimiter. */
const SNIFF_BYTES = 64 * 1024;
/** Columns of a header; more is refused (a header row that is really data). */
export const MAX_COLUMNS = 500;
/** Characters of one cell kept. */
export const MAX_CELL_CHARS = 32_000;

/** C0 controls but tab, line feed and carriage return, and DEL. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g;

/**
 * A cell as it is stored and sent to the model: at most MAX_CELL_CHARS, with
 * NUL and the other control characters (tab and line breaks kept) as U+FFFD.
 * The upload's first bytes decide that it is text at all (a NUL there is a
 * binary file, 415); past them such a character is a damaged cell, shown as
 * damaged rather than cut at, or passed to the model.
 */
function cell(text: string): string {
  return clipText(text.replace(CONTROL, '\ufffd'), MAX_CELL_CHARS);
}

const unsupported = (what: string) => new AppError('unsupported_media_type', `${what}; bulk jobs take .xlsx or CSV`);
const unreadable = (kind: string) => AppError.validation([{ loc: ['body', 'file'], msg: `not a readable ${kind} file`, type: 'file' }], `The file is not a readable ${kind} file`);

/** A cell of a table: text, or a workbook's number (kept a number, so the result workbook has it as one). */
export type TableCell = string | number;

/** A cell as text: what fills `{text}` and what the rows stream shows. */
export function cellString(value: TableCell | undefined): string {
  return value === undefined ? '' : String(value);
}

const blank = (cells: readonly TableCell[]) => cells.every((c) => typeof c === 'string' && c.trim() === '');

export interface TableFormat {
  kind: TableKind;
  /** A CSV's field delimiter (, ; or tab), decided from its first line. */
  delimiter: string;
  /**
   * The CSV result starts with a byte-order mark: the input had one, or was
   * Windows-1252 (Excel reads a UTF-8 CSV without one as its legacy encoding).
   */
  bom: boolean;
}

async function head(path: string): Promise<Buffer> {
  const handle = await fs.promises.open(path, 'r');
  try {
    const buffer = Buffer.alloc(SNIFF_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, SNIFF_BYTES, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** Rewrites the text file at `path` from `encoding` to UTF-8 (without a byte-order mark), streamed. */
async function toUtf8(path: string, encoding: Exclude<TextEncoding, 'utf-8'>): Promise<void> {
  const converted = `${path}.utf8`;
  // UTF-16 code units may be split between chunks: its decoder keeps the rest for the next one (and drops the BOM).
  const decoder = encoding === 'windows-1252' ? null : new TextDecoder(encoding);
  try {
    await pipeline(
      fs.createReadStream(path),
      async function* (source: AsyncIterable<Buffer>) {
        for await (const chunk of source) yield decoder ? decoder.decode(chunk, { stream: true }) : decodeWindows1252(chunk);
        if (decoder) yield decoder.decode();
      },
      fs.createWriteStream(converted),
    );
    await fs.promises.rename(converted, path);
  } finally {
    await fs.promises.rm(converted, { force: true });
  }
}

/** Whether the whole file is UTF-8 (the first bytes were: the rest may not be). */
async function wholeFileIsUtf8(path: string): Promise<boolean> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  try {
    for await (const chunk of fs.createReadStream(path) as AsyncIterable<Buffer>) decoder.decode(chunk, { stream: true });
    decoder.decode();
    return true;
  } catch {
    return false;
  }
}

/** A UTF-8 prefix cut at a character boundary (a read of the first bytes may split one). */
function wholeCharacters(bytes: Buffer, complete: boolean): Buffer {
  if (complete) return bytes;
  let end = bytes.length;
  for (let back = 1; back <= 3 && end - back >= 0; back++) {
    const byte = bytes[end - back]!;
    if ((byte & 0xc0) === 0x80) continue; // a continuation byte
    if (byte >= 0xc0) end -= back; // the lead byte of a character that may be cut
    break;
  }
  return bytes.subarray(0, end);
}

/** The delimiter of a CSV's first line: whichever of , ; and tab occurs most outside quotes. */
export function sniffDelimiter(text: string): string {
  const counts: Record<string, number> = { ',': 0, ';': 0, '\t': 0 };
  let quoted = false;
  for (const ch of text) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && (ch === '\n' || ch === '\r')) break;
    else if (!quoted && ch in counts) counts[ch]!++;
  }
  const [best, count] = Object.entries(counts).sort((a, b) => b[1] - a[1])[0]!;
  return count > 0 ? best : ',';
}

/**
 * The kind of an uploaded table, decided by its bytes: a zip holding a
 * workbook is .xlsx (its central directory checked for decompression bombs
 * first), text is CSV, anything else is 415. The name may not contradict
 * the bytes.
 */
export async function sniffTable(path: string, filename: string, limits: ExtractLimits): Promise<TableFormat> {
  const bytes = await head(path);
  const size = (await fs.promises.stat(path)).size;
  if (!bytes.length) throw AppError.validation([{ loc: ['body', 'file'], msg: 'the file is empty', type: 'file' }], 'The file is empty');
  const extension = fileExtension(filename);
  let kind: TableKind;
  let delimiter = ',';
  let bom = false;
  if (bytes.length >= 4 && bytes.readUInt32LE(0) === 0x04034b50) {
    const names = await zipEntries(path, limits);
    if (!names.includes('xl/workbook.xml')) throw unsupported('The file is a zip archive, not an Excel workbook');
    kind = 'xlsx';
  } else {
    const decoded = decodeTextAs(wholeCharacters(bytes, bytes.length === size));
    if (decoded === null) {
      const type = await fileTypeFromBuffer(bytes);
      throw unsupported(type ? `The file is ${type.mime}` : 'The file is binary content of no accepted type');
    }
    let encoding = decoded.encoding;
    // The first 64 KiB, all ASCII, cannot tell UTF-8 from Windows-1252: the whole file does.
    if (encoding === 'utf-8' && bytes.length < size && !/[^\p{ASCII}]/u.test(decoded.text) && !(await wholeFileIsUtf8(path))) encoding = 'windows-1252';
    // Read as UTF-8 from here on (the rows, the result file): other text is converted once.
    if (encoding !== 'utf-8') await toUtf8(path, encoding);
    bom = encoding !== 'utf-8' || (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf);
    kind = 'csv';
    delimiter = sniffDelimiter(decoded.text.replace(/^\uFEFF/, ''));
  }
  const named = extension === 'xlsx' ? 'xlsx' : extension === 'csv' || extension === 'txt' || extension === 'tsv' ? 'csv' : undefined;
  // Text under the name of a binary type (setup.exe) or of a document bulk does not read (report.pdf) contradicts its name, as uploads to /rag do.
  const contradicted = (named && named !== kind) || (kind === 'csv' && extension && (namesBinaryType(extension) || extension === 'pdf' || extension === 'docx'));
  if (contradicted) throw unsupported(`The content is ${kind === 'xlsx' ? 'an Excel workbook' : 'text'} but the file name says .${extension}`);
  return { kind, delimiter, bom };
}

/**
 * The rows of a table, the header first, streamed: csv-parse for CSV,
 * exceljs's streaming reader for the first sheet of a workbook, whose
 * numbers stay numbers and whose dates (known by their cell style) are
 * ISO text rather than day serials. Empty rows are skipped. Unreadable
 * content is 422.
 */
export async function* readTable(path: string, format: TableFormat): AsyncGenerator<TableCell[]> {
  if (format.kind === 'csv') {
    const parser = fs.createReadStream(path).pipe(
      parse({ bom: true, delimiter: format.delimiter, relax_column_count: true, relax_quotes: true, skip_empty_lines: true, max_record_size: 4 * MAX_CELL_CHARS }),
    );
    try {
      for await (const record of parser as AsyncIterable<string[]>) {
        if (blank(record)) continue;
        yield record.map(cell);
      }
    } catch (error) {
      if (error instanceof AppError) throw error;
      throw unreadable('CSV');
    }
    return;
  }
  // Styles are read for their number formats: without them a date is a bare day serial (46024).
  const reader = new ExcelJS.stream.xlsx.WorkbookReader(fs.createReadStream(path), { sharedStrings: 'cache', hyperlinks: 'ignore', styles: 'cache', worksheets: 'emit', entries: 'ignore' });
  try {
    for await (const worksheet of reader) {
      for await (const row of worksheet as AsyncIterable<ExcelJS.Row>) {
        const values = row.values as unknown[];
        const cells: TableCell[] = [];
        for (let i = 1; i < values.length; i++) {
          const value = values[i];
          cells.push(typeof value === 'number' && Number.isFinite(value) ? value : cell(cellText(value)));
        }
        if (blank(cells)) continue;
        yield cells;
      }
      return; // the first sheet only
    }
  } catch (error) {
    if (error instanceof AppError) throw error;
    throw unreadable('Excel');
  }
}

/** The header row of a table (its first non-empty row), refused when there is none or it is too wide. */
export async function readHeader(path: string, format: TableFormat): Promise<string[]> {
  for await (const row of readTable(path, format)) {
    const header = row.map((c) => cellString(c).trim());
    if (header.length > MAX_COLUMNS) throw AppError.validation([{ loc: ['body', 'file'], msg: `more than ${MAX_COLUMNS} columns`, type: 'file' }]);
    return header;
  }
  throw AppError.validation([{ loc: ['body', 'file'], msg: 'the file has no header row', type: 'file' }], 'The file has no rows');
}

/**
 * Writes a table (the header, then each row) to `out` as CSV or .xlsx, streamed with back-pressure.
 * In CSV every text cell is guarded (`guardCell`): a spreadsheet opening it would run any of them as a
 * formula, the input's own cells included (a member's upload, downloaded by an admin), except a plain
 * number as the input had it ("-3"). A workbook's text cells are text and never run.
 */
export async function writeTable(out: Writable, format: TableFormat, header: string[], rows: AsyncIterable<TableCell[]>): Promise<void> {
  if (format.kind === 'csv') {
    // A bare CR ends a record for Excel and most readers: a cell holding one is quoted, as one holding LF is,
    // or the rest of it would start a row of its own, unguarded.
    const csv = stringify({ delimiter: format.delimiter, bom: format.bom, quoted_match: /\r/ });
    csv.pipe(out);
    const write = async (row: TableCell[]) => {
      if (!csv.write(row.map((cell) => (typeof cell === 'string' && !PLAIN_NUMBER.test(cell) ? guardCell(cell) : cell)))) await once(csv, 'drain');
    };
    await write(header);
    for await (const row of rows) await write(row);
    csv.end();
    await once(csv, 'end');
    return;
  }
  const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({ stream: out, useStyles: false, useSharedStrings: false });
  const sheet = workbook.addWorksheet('Results');
  sheet.addRow(header).commit();
  for await (const row of rows) {
    sheet.addRow(row).commit();
    // The writer pushes into `out`; wait when it is full.
    if (out.writableNeedDrain) await once(out, 'drain');
  }
  sheet.commit();
  await workbook.commit();
}
