import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { createClient } from 'graphql-ws';
import type { FastifyInstance } from 'fastify';
import ExcelJS from 'exceljs';
import { parse } from 'csv-parse/sync';
import { assertCode, call, gql, sql } from './admin-helper';
import { createCompanyKey } from './helper';
import { buildWithAi, moduleKey, modulesCast } from './ai-helper';
import { fakeOpenAi } from './fake-ai';
import { assertLedgerAddsUp } from './ledger-helper';
import { makeCsv, makePng, makeXlsx, makeZipBomb, multipartForm, withHiddenEntry, withSmuggledEntry } from './fixtures/document-files';
import { inContext } from '../src/boot';
import { AppError } from '../src/errors/catalog';
import { DEFAULT_EXTRACT_LIMITS, zipEntries } from '../src/domains/documents';
import { readTable } from '../src/domains/bulk';

const FIELDS = { input_column: 'review', prompt_template: 'Classify the sentiment of: {text}' };
const ROWS: (string | number)[][] = [
  ['id', 'review'],
  [1, 'Great product'],
  [2, 'Terrible service'],
  [3, 'It was fine'],
];

/** Answers "<SENTIMENT> for <input>" so every row's output names its input. */
const classify = () => (request: { messages: { content: string | null }[] }) => {
  const text = request.messages.at(-1)!.content!.replace('Classify the sentiment of: ', '');
  return { content: `label:${text}`, usage: { prompt: 10, completion: 5 } };
};

function submit(app: FastifyInstance, key: string, file: Buffer, filename: string, fields: Record<string, string> = FIELDS, url = '/v1/bulk/submit') {
  const form = multipartForm(fields, { content: file, filename });
  return app.inject({ method: 'POST', url, payload: form.payload, headers: { ...form.headers, authorization: `Bearer ${key}` } });
}

async function finished(app: FastifyInstance, key: string, id: string, url = `/v1/bulk/status/${id}`) {
  await app.kernel.worker.drain();
  const res = await call(app, key, 'GET', url);
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as Record<string, unknown>;
}

function uploads(app: FastifyInstance): string[] {
  const dir = path.join(app.config.dataDir, 'uploads');
  return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
}

test('CSV round trip: each row through the template, the result CSV carries the output and error columns, each row charged once', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { a, keys } = await modulesCast(app);
  const res = await submit(app, keys.ownerA.key, makeCsv(ROWS), 'reviews.csv');
  assert.equal(res.statusCode, 202, res.body);
  const { job_id: id } = res.json() as { job_id: string };
  assert.equal(res.json().format, 'csv');
  const status = await finished(app, keys.ownerA.key, id);
  assert.equal(status.status, 'completed');
  assert.equal(status.total_rows, 3);
  assert.equal(status.rows_completed, 3);
  assert.equal(status.rows_failed, 0);
  // 15 tokens at gpt-4o's 5 credits per 1,000: one credit a row, rounded up.
  assert.equal(status.credits_used, 3);
  assert.deepEqual(fake.seen.map((s) => s.messages.at(-1)!.content).sort(), ['Classify the sentiment of: Great product', 'Classify the sentiment of: It was fine', 'Classify the sentiment of: Terrible service']);

  const file = await call(app, keys.ownerA.key, 'GET', `/v1/bulk/download/${id}`);
  assert.equal(file.statusCode, 200);
  assert.match(file.headers['content-type'] as string, /^text\/csv/);
  assert.match(file.headers['content-disposition'] as string, /reviews-results\.csv/);
  assert.notEqual(file.rawPayload[0], 0xef, 'no byte-order mark the input did not have');
  const rows = parse(file.body) as string[][];
  assert.deepEqual(rows[0], ['id', 'review', 'AI_Result', 'AI_Result_error']);
  // UUIDs are case-insensitive: the same job upper-cased, on a raw route and a GraphQL-derived one.
  assert.equal((await call(app, keys.ownerA.key, 'GET', `/v1/bulk/download/${id.toUpperCase()}`)).body, file.body);
  assert.equal((await call(app, keys.ownerA.key, 'GET', `/v1/bulk/status/${id.toUpperCase()}`)).json().job_id, id);
  assert.deepEqual(rows.slice(1), [
    ['1', 'Great product', 'label:Great product', ''],
    ['2', 'Terrible service', 'label:Terrible service', ''],
    ['3', 'It was fine', 'label:It was fine', ''],
  ]);
  const usage = await sql<{ n: number; credits: number }>(app, "select count(*) as n, sum(credits) as credits from usage_records where feature = 'bulk'");
  assert.deepEqual(usage[0], { n: 3, credits: 3 });
  assert.equal(app.domains.billing.ledger.balance(a.companyId).available, 2000 - 3);
  assert.deepEqual(uploads(app), [], 'the upload is deleted once its rows are read');
  await assertLedgerAddsUp(app);
});

test('xlsx in gives xlsx out, with a custom output column; cells the model wrote cannot run as formulas', async (t) => {
  const fake = await fakeOpenAi(t, (request) => ({ content: request.messages.at(-1)!.content!.includes('evil') ? '=HYPERLINK("http://x.test","click")' : 'ok' }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  const workbook = await makeXlsx({ Sheet1: [['name', 'text'], ['a', 'fine'], ['b', 'evil']] });
  const res = await submit(app, keys.ownerA.key, workbook, 'input.xlsx', { input_column: 'text', prompt_template: 'Echo {text}', output_column: 'Answer' });
  assert.equal(res.statusCode, 202, res.body);
  const id = res.json().job_id as string;
  assert.equal(res.json().format, 'xlsx');
  assert.equal((await finished(app, keys.ownerA.key, id)).status, 'completed');
  const file = await app.inject({ method: 'GET', url: `/v1/bulk/download/${id}`, headers: { authorization: `Bearer ${keys.ownerA.key}` } });
  assert.equal(file.statusCode, 200);
  assert.equal(file.headers['content-type'], 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet');
  const book = new ExcelJS.Workbook();
  await book.xlsx.read(Readable.from(file.rawPayload));
  const sheet = book.worksheets[0]!;
  const values = sheet.getSheetValues().slice(1).map((r) => (r as unknown[]).slice(1));
  assert.deepEqual(values, [
    ['name', 'text', 'Answer', 'Answer_error'],
    ['a', 'fine', 'ok', ''].slice(0, 3),
    ['b', 'evil', '\'=HYPERLINK("http://x.test","click")'],
  ]);
  assert.equal(sheet.getCell('C3').formula, undefined, 'no cell is a formula');
});

test('no cell of a CSV result can run as a formula: the input\'s own cells and the caller\'s column names are guarded like the model\'s output', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: '@SUM(A1)' }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  const rows: (string | number)[][] = [
    ['id', '=review'],
    [1, '=1+2'],
    [2, '+cmd'],
    [-3, '@SUM(A1)'],
    [4, 'plain'],
  ];
  const res = await submit(app, keys.ownerA.key, makeCsv(rows), 'hostile.csv', { ...FIELDS, input_column: '=review', output_column: '=evil' });
  assert.equal(res.statusCode, 202, res.body);
  const { job_id: id } = res.json() as { job_id: string };
  assert.equal((await finished(app, keys.ownerA.key, id)).status, 'completed');
  const file = await call(app, keys.ownerA.key, 'GET', `/v1/bulk/download/${id}`);
  assert.equal(file.statusCode, 200, file.body);
  assert.deepEqual(parse(file.body) as string[][], [
    ['id', "'=review", "'=evil", "'=evil_error"],
    ['1', "'=1+2", "'@SUM(A1)", ''],
    ['2', "'+cmd", "'@SUM(A1)", ''],
    // A number is a number, not text a spreadsheet would read as a formula.
    ['-3', "'@SUM(A1)", "'@SUM(A1)", ''],
    ['4', 'plain', "'@SUM(A1)", ''],
  ]);
});

test('a carriage return inside a CSV result cell is quoted, so a spreadsheet splits no row and no formula after it runs', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'ok\r=2+2' }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  const res = await submit(app, keys.ownerA.key, Buffer.from('name,review\n"x\r=1+1",good\n'), 'cr.csv');
  assert.equal(res.statusCode, 202, res.body);
  const { job_id: id } = res.json() as { job_id: string };
  assert.equal((await finished(app, keys.ownerA.key, id)).status, 'completed');
  const file = await call(app, keys.ownerA.key, 'GET', `/v1/bulk/download/${id}`);
  assert.equal(file.statusCode, 200, file.body);
  // Read as Excel reads it: a bare CR ends a record too, unless it is inside quotes.
  assert.deepEqual(parse(file.body, { record_delimiter: ['\r\n', '\n', '\r'] }) as string[][], [
    ['name', 'review', 'AI_Result', 'AI_Result_error'],
    ['x\r=1+1', 'good', 'ok\r=2+2', ''],
  ]);
});

test('a workbook\'s dates reach the model as dates, not day serials, and its numbers come back as numbers', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'ok' }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  const workbook = await makeXlsx({ Orders: [['when', 'amount', 'note'], [new Date(Date.UTC(2026, 0, 2)), 42.5, 'a'], [new Date(Date.UTC(2026, 0, 3, 14, 30)), 7, 'b']] });
  const res = await submit(app, keys.ownerA.key, workbook, 'orders.xlsx', { input_column: 'when', prompt_template: 'Day {text}' });
  assert.equal(res.statusCode, 202, res.body);
  const id = res.json().job_id as string;
  assert.equal((await finished(app, keys.ownerA.key, id)).status, 'completed');
  assert.deepEqual(fake.seen.map((r) => r.messages.at(-1)!.content).sort(), ['Day 2026-01-02', 'Day 2026-01-03 14:30:00']);
  const file = await app.inject({ method: 'GET', url: `/v1/bulk/download/${id}`, headers: { authorization: `Bearer ${keys.ownerA.key}` } });
  const book = new ExcelJS.Workbook();
  await book.xlsx.read(Readable.from(file.rawPayload));
  const values = book.worksheets[0]!.getSheetValues().slice(1).map((r) => (r as unknown[]).slice(1, 4));
  assert.deepEqual(values, [
    ['when', 'amount', 'note'],
    ['2026-01-02', 42.5, 'a'],
    ['2026-01-03 14:30:00', 7, 'b'],
  ]);
});

test('refused up front, nothing kept: a template without {text}, a missing column (the columns found listed), a PNG, an oversized file, no file', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url }, { documents: { maxBytes: 64 * 1024, maxUncompressedBytes: 1 << 20, maxZipEntries: 100, maxCompressionRatio: 100, maxTextChars: 1 << 20 } } as never);
  const { keys } = await modulesCast(app);
  const noPlaceholder = await submit(app, keys.ownerA.key, makeCsv(ROWS), 'r.csv', { input_column: 'review', prompt_template: 'Classify this' });
  assertCode(noPlaceholder, 422, 'validation_error');
  assert.match(noPlaceholder.body, /\{text\}/);
  const noColumn = await submit(app, keys.ownerA.key, makeCsv(ROWS), 'r.csv', { input_column: 'comment', prompt_template: '{text}' });
  assertCode(noColumn, 422, 'validation_error');
  assert.deepEqual(noColumn.json().columns, ['id', 'review']);
  assert.match(noColumn.json().detail, /its columns are: id, review/);
  const twice = await submit(app, keys.ownerA.key, makeCsv([['review', 'review'], ['a', 'b']]), 'r.csv');
  assertCode(twice, 422, 'validation_error');
  assert.match(twice.body, /more than one column \\"review\\"/);
  assertCode(await submit(app, keys.ownerA.key, makePng(), 'r.csv'), 415, 'unsupported_media_type');
  assertCode(await submit(app, keys.ownerA.key, makeCsv(ROWS), 'r.xlsx'), 415, 'unsupported_media_type');
  assertCode(await submit(app, keys.ownerA.key, Buffer.alloc(100 * 1024, 'a,b\n'), 'big.csv'), 413, 'payload_too_large');
  const form = multipartForm(FIELDS);
  const noFile = await app.inject({ method: 'POST', url: '/v1/bulk/submit', payload: form.payload, headers: { ...form.headers, authorization: `Bearer ${keys.ownerA.key}` } });
  assertCode(noFile, 422, 'validation_error');
  const json = await call(app, keys.ownerA.key, 'POST', '/v1/bulk/submit', { file: 'x' });
  assert.equal(json.statusCode, 415);
  assert.equal(fake.seen.length, 0);
  assert.deepEqual(uploads(app), []);
  assert.equal((await sql<{ n: number }>(app, 'select count(*) as n from bulk_jobs'))[0]!.n, 0);
});

test('a workbook whose headers understate its unpacked size (300 MB declared as 1 KB) is 413 at upload, nothing kept', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  const forged = await makeZipBomb('xlsx', 300 * 1024 * 1024, 1000);
  const rss = process.memoryUsage().rss;
  assertCode(await submit(app, keys.ownerA.key, forged, 'reviews.xlsx'), 413, 'payload_too_large');
  assert.ok(process.memoryUsage().rss - rss < 100 * 1024 * 1024, 'memory stayed bounded');
  assert.equal(fake.seen.length, 0);
  assert.deepEqual(uploads(app), []);
  assert.equal((await sql<{ n: number }>(app, 'select count(*) as n from bulk_jobs'))[0]!.n, 0);
});

test('a workbook with an entry its directory does not list is refused (422): a streaming reader would unpack what no check saw', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  const workbook = await makeXlsx({ Reviews: ROWS });
  assert.equal((await submit(app, keys.ownerA.key, workbook, 'r.xlsx')).statusCode, 202, 'the workbook as written is accepted');
  const hidden = withHiddenEntry(workbook, 'xl/sharedStrings.xml', Buffer.from('<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>hidden</t></si></sst>'));
  const refused = await submit(app, keys.ownerA.key, hidden, 'r.xlsx');
  assertCode(refused, 422, 'validation_error');
  assert.match(refused.json().detail, /not a readable zip file/);
  assert.equal((await sql<{ n: number }>(app, 'select count(*) as n from bulk_jobs'))[0]!.n, 1);
  // Listed, but ended early by a fake data descriptor inside it, so a streaming reader reads an entry hidden in its data:
  // caught whether the directory admits the descriptor (its signature in a stored entry) or not (the flags disagree).
  const strings = Buffer.from('<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>smuggled</t></si></sst>');
  for (const directoryFlags of [0x8, 0]) {
    const smuggled = withSmuggledEntry(workbook, 'xl/sharedStrings.xml', strings, directoryFlags);
    const answer = await submit(app, keys.ownerA.key, smuggled, 'r.xlsx');
    assertCode(answer, 422, 'validation_error');
    assert.match(answer.json().detail, /not a readable zip file/);
  }
  assert.equal((await sql<{ n: number }>(app, 'select count(*) as n from bulk_jobs'))[0]!.n, 1);
});

test('a CSV saved as Windows-1252 (Excel on Windows) is read as such: its accents, dashes and euro signs reach the model and the result file as written', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'ok' }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  const text = 'Café très bien – €5';
  // é è in Latin-1, the en dash 0x96 and the euro sign 0x80 in Windows-1252's own range: not UTF-8.
  const bytes = Buffer.concat([Buffer.from('id;review\r\n1;Caf', 'latin1'), Buffer.from([0xe9]), Buffer.from(' tr', 'latin1'), Buffer.from([0xe8]), Buffer.from('s bien ', 'latin1'), Buffer.from([0x96, 0x20, 0x80]), Buffer.from('5\r\n', 'latin1')]);
  const res = await submit(app, keys.ownerA.key, bytes, 'reviews.csv', { input_column: 'review', prompt_template: '{text}' });
  assert.equal(res.statusCode, 202, res.body);
  const id = res.json().job_id as string;
  assert.equal((await finished(app, keys.ownerA.key, id)).status, 'completed');
  assert.equal(fake.seen[0]!.messages.at(-1)!.content, text);
  const file = await app.inject({ method: 'GET', url: `/v1/bulk/download/${id}`, headers: { authorization: `Bearer ${keys.ownerA.key}` } });
  assert.match(file.body, new RegExp(`1;${text};ok`));
  // UTF-8 now, with a byte-order mark, so Excel on Windows reads it as UTF-8 rather than its legacy encoding.
  assert.deepEqual([...file.rawPayload.subarray(0, 3)], [0xef, 0xbb, 0xbf]);
});

test('a CSV whose first 64 KiB are ASCII and whose later rows are Windows-1252 is read as Windows-1252; UTF-16 big-endian with its BOM is read too', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'ok' }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url, RATE_LIMIT_MODULE_KEY: '1000' }, { bulk: { concurrency: 8, rowAttempts: 1, maxRows: 5000, maxConcurrent: 3 } } as never);
  const { keys } = await modulesCast(app);
  const plain = Array.from({ length: 1500 }, (_, i) => `${i + 1};plain row number ${i + 1} with some padding text to pass the first 64 KiB`).join('\r\n');
  const late = Buffer.concat([Buffer.from(`id;review\r\n${plain}\r\n1501;Caf`, 'latin1'), Buffer.from([0xe9, 0x20, 0x96, 0x20, 0x80]), Buffer.from('5\r\n', 'latin1')]);
  assert.ok(late.length > 64 * 1024);
  const res = await submit(app, keys.ownerA.key, late, 'late.csv', { input_column: 'review', prompt_template: '{text}' });
  assert.equal(res.statusCode, 202, res.body);
  assert.equal((await finished(app, keys.ownerA.key, res.json().job_id)).status, 'completed');
  assert.ok(fake.seen.some((r) => r.messages.at(-1)!.content === 'Café – €5'), 'the late row as written');
  const before = fake.seen.length;
  const utf16be = Buffer.from('\ufeffid,review\n1,Grüße aus Köln\n', 'utf16le').swap16();
  const be = await submit(app, keys.ownerA.key, utf16be, 'be.csv', { input_column: 'review', prompt_template: '{text}' });
  assert.equal(be.statusCode, 202, be.body);
  assert.equal((await finished(app, keys.ownerA.key, be.json().job_id)).status, 'completed');
  assert.deepEqual(fake.seen.slice(before).map((r) => r.messages.at(-1)!.content), ['Grüße aus Köln']);
});

test("a UTF-8 CSV's byte-order mark is kept in its result file", async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'ok' }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  const res = await submit(app, keys.ownerA.key, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), makeCsv(ROWS)]), 'r.csv');
  assert.equal(res.statusCode, 202, res.body);
  const id = res.json().job_id as string;
  assert.equal((await finished(app, keys.ownerA.key, id)).status, 'completed');
  const file = await call(app, keys.ownerA.key, 'GET', `/v1/bulk/download/${id}`);
  assert.deepEqual([...file.rawPayload.subarray(0, 3)], [0xef, 0xbb, 0xbf]);
  assert.deepEqual((parse(file.body, { bom: true }) as string[][])[0], ['id', 'review', 'AI_Result', 'AI_Result_error']);
});

test('the zip checks take zip64 data descriptors (Python zipfile writing to a pipe): the entries are listed, not refused', async () => {
  const workbook = fs.readFileSync(path.resolve(__dirname, '../../test/fixtures/python-zip64-stream.xlsx'));
  assert.deepEqual(await zipEntries(workbook, DEFAULT_EXTRACT_LIMITS), ['[Content_Types].xml', '_rels/.rels', 'xl/workbook.xml', 'xl/_rels/workbook.xml.rels', 'xl/worksheets/sheet1.xml']);
});

test("a cell's $ sequences reach the model as written, not as replacement patterns of the template", async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  const cells = ['price $$5', 'a$&b', 'pre$`post', "x$'y"];
  const res = await submit(app, keys.ownerA.key, makeCsv([['id', 'review'], ...cells.map((c, i) => [i + 1, c])]), 'r.csv', { input_column: 'review', prompt_template: 'Q: {text} | again {text}' });
  assert.equal(res.statusCode, 202, res.body);
  assert.equal((await finished(app, keys.ownerA.key, res.json().job_id)).status, 'completed');
  const prompts = fake.seen.map((r) => r.messages.at(-1)!.content).sort();
  assert.deepEqual(prompts, cells.map((c) => `Q: ${c} | again ${c}`).sort());
});

test('without AI_BASE_URL a bulk job is refused with 503 and nothing is kept', async (t) => {
  const app = await buildWithAi(t, {});
  const { keys } = await modulesCast(app);
  assertCode(await submit(app, keys.ownerA.key, makeCsv(ROWS), 'r.csv'), 503, 'ai_provider_not_configured');
  assert.deepEqual(uploads(app), []);
});

test('an unreadable file fails the whole job (status failed with its error), charging nothing; its download is 409 job_failed', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  // A readable header, then a quote that never closes: csv-parse fails past the header.
  const broken = Buffer.from(`id,review\n1,"never closed\n${'x,y\n'.repeat(10)}`);
  const res = await submit(app, keys.ownerA.key, broken, 'broken.csv');
  assert.equal(res.statusCode, 202, res.body);
  const status = await finished(app, keys.ownerA.key, res.json().job_id);
  assert.equal(status.status, 'failed');
  assert.match(String(status.error), /not a readable CSV/);
  assert.equal(fake.seen.length, 0);
  const early = await call(app, keys.ownerA.key, 'GET', `/v1/bulk/download/${res.json().job_id}`);
  assertCode(early, 409, 'job_failed');
  assert.equal(early.json().status, 409, 'the problem keeps its own status');
  assert.equal(early.json().job_status, 'failed');
  assert.match(early.json().detail, /The job failed: .*not a readable CSV/);
});

test('when credits run out mid-job the remaining rows fail with CREDIT_EXHAUSTED, and the job still completes with counts that say so', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url, AI_MAX_OUTPUT_TOKENS: '16' }, { bulk: { concurrency: 1, rowAttempts: 1, maxRows: 1000, maxConcurrent: 3 } } as never);
  const { a, keys } = await modulesCast(app);
  // Leave 3 credits: each row holds 1 (its prompt and 16 output tokens at 5 credits per 1,000).
  await inContext(app.kernel.orm, () => app.domains.billing.ledger.revoke({ kind: 'user', isSuperadmin: true } as never, a.companyId, { credits: 1997, reason: 'test' }, 'revoke-1'));
  const rows = [['review'], ...Array.from({ length: 6 }, (_, i) => [`row ${i + 1}`])];
  const res = await submit(app, keys.ownerA.key, makeCsv(rows), 'r.csv');
  assert.equal(res.statusCode, 202, res.body);
  const status = await finished(app, keys.ownerA.key, res.json().job_id);
  assert.equal(status.status, 'completed');
  assert.equal(status.total_rows, 6);
  assert.equal(status.rows_completed, 3);
  assert.equal(status.rows_failed, 3);
  const failed = await sql<{ error: string }>(app, "select error from bulk_rows where status = 'failed'");
  assert.ok(failed.every((r) => /^CREDIT_EXHAUSTED: needs 1 credits; balance 0/.test(r.error)), JSON.stringify(failed));
  assert.equal(app.domains.billing.ledger.balance(a.companyId).available, 0);
  assert.equal((await sql<{ n: number }>(app, "select count(*) as n from credit_holds where status = 'held'"))[0]!.n, 0);
  await assertLedgerAddsUp(app);
});

test('rows refused credits while other rows hold theirs wait for those to settle: a job runs until what is left is less than a hold', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  // A row holds 3 credits (its prompt and up to 2,100 output tokens at 1 per 1,000) and spends 1 (15 tokens): eight at once hold more than the 20 left.
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url, AI_MAX_OUTPUT_TOKENS: '2100' }, { bulk: { concurrency: 8, rowAttempts: 1, maxRows: 1000, maxConcurrent: 3 } } as never);
  const { a, keys } = await modulesCast(app);
  await inContext(app.kernel.orm, () => app.domains.billing.ledger.revoke({ kind: 'user', isSuperadmin: true } as never, a.companyId, { credits: 1980, reason: 'test' }, 'revoke-1'));
  const rows = [['review'], ...Array.from({ length: 30 }, (_, i) => [`row ${i + 1}`])];
  const res = await submit(app, keys.ownerA.key, makeCsv(rows), 'r.csv');
  assert.equal(res.statusCode, 202, res.body);
  const status = await finished(app, keys.ownerA.key, res.json().job_id);
  const [{ hold }] = await sql<{ hold: number }>(app, 'select max(credits) as hold from credit_holds');
  assert.equal(hold, 3);
  const left = app.domains.billing.ledger.balance(a.companyId).available;
  assert.equal(status.status, 'completed');
  assert.ok(left < hold!, `the job stopped with ${left} credits left, enough for another row's hold`);
  assert.equal(status.rows_completed, 20 - left);
  assert.equal(status.rows_failed, 30 - (20 - left));
  assert.equal((await sql<{ n: number }>(app, "select count(*) as n from credit_holds where status = 'held'"))[0]!.n, 0);
  await assertLedgerAddsUp(app);
});

test('a row the provider keeps failing fails alone (retried first), its hold returned; the others complete', async (t) => {
  const fake = await fakeOpenAi(t, (request) => (request.messages.at(-1)!.content!.includes('bad') ? { status: 500 } : { content: 'fine', usage: { prompt: 10, completion: 5 } }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url }, { bulk: { concurrency: 2, rowAttempts: 2, maxRows: 1000, maxConcurrent: 3 } } as never);
  const { keys } = await modulesCast(app);
  const res = await submit(app, keys.ownerA.key, makeCsv([['review'], ['good'], ['bad'], ['good too']]), 'r.csv');
  const status = await finished(app, keys.ownerA.key, res.json().job_id);
  assert.deepEqual([status.status, status.rows_completed, status.rows_failed, status.credits_used], ['completed', 2, 1, 2]);
  assert.equal(fake.seen.filter((s) => s.messages.at(-1)!.content!.includes('bad')).length, 2, 'the failing row was tried twice');
  const [row] = await sql<{ error: string }>(app, "select error from bulk_rows where status = 'failed'");
  assert.match(row!.error, /^ai_provider_error/);
  assert.equal((await sql<{ n: number }>(app, "select count(*) as n from credit_holds where status = 'held'"))[0]!.n, 0);
  await assertLedgerAddsUp(app);
});

test('a row whose provider stalls after its headers fails with ai_provider_timeout within AI_TIMEOUT_SECONDS per try, its hold returned', async (t) => {
  const fake = await fakeOpenAi(t, (request) => (request.messages.at(-1)!.content!.includes('stuck') ? { content: 'never ends', stall: true } : { content: 'fine', usage: { prompt: 10, completion: 5 } }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url, AI_TIMEOUT_SECONDS: '1' }, { bulk: { concurrency: 2, rowAttempts: 2, maxRows: 1000, maxConcurrent: 3 } } as never);
  const { keys } = await modulesCast(app);
  const started = Date.now();
  const res = await submit(app, keys.ownerA.key, makeCsv([['review'], ['good'], ['stuck'], ['good too']]), 'r.csv');
  const status = await finished(app, keys.ownerA.key, res.json().job_id);
  assert.ok(Date.now() - started < 6000, `the job took ${Date.now() - started} ms`);
  assert.deepEqual([status.status, status.rows_completed, status.rows_failed], ['completed', 2, 1]);
  const [row] = await sql<{ error: string }>(app, "select error from bulk_rows where status = 'failed'");
  assert.match(row!.error, /^ai_provider_timeout/);
  assert.equal((await sql<{ n: number }>(app, "select count(*) as n from credit_holds where status = 'held'"))[0]!.n, 0);
  await assertLedgerAddsUp(app);
});

test('a row whose result and credits fail to commit fails as the server\'s fault, charged nothing, its hold returned, without calling the provider again', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'fine', usage: { prompt: 10, completion: 5 } }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url }, { bulk: { concurrency: 1, rowAttempts: 3, maxRows: 1000, maxConcurrent: 3 } } as never);
  const { keys } = await modulesCast(app);
  const ledger = app.domains.billing.ledger;
  const commit = ledger.commit.bind(ledger);
  let failed = false;
  ledger.commit = async (...args: Parameters<typeof ledger.commit>) => {
    if (!failed) {
      failed = true;
      throw AppError.validation([{ loc: ['credits'], msg: 'must be an integer from 0 to 1000000000', type: 'range' }]);
    }
    return commit(...args);
  };
  const res = await submit(app, keys.ownerA.key, makeCsv([['review'], ['first'], ['second']]), 'r.csv');
  const status = await finished(app, keys.ownerA.key, res.json().job_id);
  assert.deepEqual([status.status, status.rows_completed, status.rows_failed, status.credits_used], ['completed', 1, 1, 1]);
  assert.equal(fake.seen.length, 2, 'each row asked the model once');
  const [row] = await sql<{ error: string; credits: number }>(app, "select error, credits from bulk_rows where status = 'failed'");
  assert.match(row!.error, /^internal_error/);
  assert.equal(row!.credits, 0);
  assert.equal((await sql<{ n: number }>(app, "select count(*) as n from credit_holds where status = 'held'"))[0]!.n, 0);
  await assertLedgerAddsUp(app);
});

test('bulk form fields at their published maxLength in emoji are taken: lengths count characters (code points), as the form\'s schema does', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  const column = '\u{1F600}'.repeat(255);
  const template = `${'\u{1F600}'.repeat(7994)}{text}`;
  const res = await submit(app, keys.ownerA.key, makeCsv([[column], ['a row']]), 'r.csv', { input_column: column, prompt_template: template, output_column: '\u{1F4DD}'.repeat(255) });
  assert.equal(res.statusCode, 202, res.body);
});

test('a bulk model past 100 characters is 422 at model on both doors and over GraphQL, and no detail echoes more of a model name than that', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys, tokens } = await modulesCast(app);
  for (const [key, url] of [[keys.ownerA.key, '/v1/bulk/submit'], [tokens.ownerA, '/v1/bulk/jobs']] as const) {
    for (const model of ['m'.repeat(101), 'm'.repeat(20_000)]) {
      const res = await submit(app, key, makeCsv(ROWS), 'r.csv', { ...FIELDS, model }, url);
      assertCode(res, 422, 'validation_error');
      assert.deepEqual(res.json().errors.map((e: { loc: string[] }) => e.loc), [['body', 'model']]);
      assert.ok(res.body.length < 1000, `${url}: ${res.body.length} characters answered`);
    }
  }
  const gqlRes = await gql(app, tokens.ownerA, 'mutation($i: BulkCsvInput!) { submitBulkJob(input: $i) { id } }', {
    i: { csv: 'review\nx\n', inputColumn: 'review', promptTemplate: '{text}', model: 'm'.repeat(101) },
  });
  assert.equal(gqlRes.errors?.[0]?.extensions?.code, 'validation_error', JSON.stringify(gqlRes));
  assert.deepEqual((gqlRes.errors![0]!.extensions as unknown as { errors: { loc: string[] }[] }).errors.map((e) => e.loc), [['input', 'model']]);
  // A name within the bound is still answered by its catalog check, and a detail names at most 100 characters of any name.
  assertCode(await submit(app, keys.ownerA.key, makeCsv(ROWS), 'r.csv', { ...FIELDS, model: 'nope' }), 404, 'model_not_found');
  assert.throws(() => app.domains.catalog.models.resolve('m'.repeat(20_000)), (error: Error) => error.message.length < 200);
  assert.equal(fake.seen.length, 0);
  assert.deepEqual(uploads(app), []);
});

test('NDJSON rows: the stream follows a running job in row order and ends with it; ?after=N resumes after row N', async (t) => {
  const fake = await fakeOpenAi(t, (request) => ({ content: `out:${request.messages.at(-1)!.content}`, delayMs: 30, usage: { prompt: 5, completion: 5 } }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url }, { bulk: { concurrency: 3, rowAttempts: 1, maxRows: 1000, maxConcurrent: 3 } } as never);
  const { tokens } = await modulesCast(app);
  const form = multipartForm({ input_column: 'q', prompt_template: '{text}' }, { content: makeCsv([['q'], ...Array.from({ length: 12 }, (_, i) => [`q${i + 1}`])]), filename: 'q.csv' });
  const created = await app.inject({ method: 'POST', url: '/v1/bulk/jobs', payload: form.payload, headers: { ...form.headers, authorization: `Bearer ${tokens.ownerA}` } });
  assert.equal(created.statusCode, 202, created.body);
  const id = created.json().id as string;
  // A row number past what an integer parameter may be is 422, as page and per_page are, not an empty stream.
  for (const after of ['2147483648', '9'.repeat(400)]) {
    assertCode(await app.inject({ url: `/v1/bulk/jobs/${id}/rows?after=${after}`, headers: { authorization: `Bearer ${tokens.ownerA}` } }), 422, 'validation_error');
  }
  // Asked at once, while the job runs: the stream waits for rows and ends when the job does.
  const live = await app.inject({ method: 'GET', url: `/v1/bulk/jobs/${id}/rows`, headers: { authorization: `Bearer ${tokens.ownerA}` } });
  assert.equal(live.statusCode, 200);
  assert.match(live.headers['content-type'] as string, /^application\/x-ndjson/);
  const lines = live.body.trim().split('\n').map((l) => JSON.parse(l) as { row: number; status: string; input: string; output: string });
  assert.deepEqual(lines.map((l) => l.row), Array.from({ length: 12 }, (_, i) => i + 1));
  assert.ok(lines.every((l) => l.status === 'completed' && l.output === `out:${l.input}`));
  const job = await call(app, tokens.ownerA, 'GET', `/v1/bulk/jobs/${id}`);
  assert.equal(job.json().status, 'completed');
  const resumed = await app.inject({ method: 'GET', url: `/v1/bulk/jobs/${id}/rows?after=9`, headers: { authorization: `Bearer ${tokens.ownerA}` } });
  assert.deepEqual(resumed.body.trim().split('\n').map((l) => JSON.parse(l).row), [10, 11, 12]);
  assertCode(await call(app, tokens.ownerA, 'GET', `/v1/bulk/jobs/${id}/rows?after=-1`), 422, 'validation_error');
});

test('cancel: a running bulk job stops, its unsent rows cost nothing, no hold stays; cancelling again is 409', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'slow', delayMs: 150, usage: { prompt: 5, completion: 5 } }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url }, { bulk: { concurrency: 1, rowAttempts: 1, maxRows: 1000, maxConcurrent: 3 } } as never);
  const { a, keys } = await modulesCast(app);
  const res = await submit(app, keys.ownerA.key, makeCsv([['review'], ...Array.from({ length: 20 }, (_, i) => [`r${i}`])]), 'r.csv');
  const id = res.json().job_id as string;
  for (let i = 0; i < 100 && fake.seen.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
  const cancelled = await call(app, keys.ownerA.key, 'POST', `/v1/bulk/cancel/${id}`);
  assert.equal(cancelled.statusCode, 200, cancelled.body);
  assert.equal(cancelled.json().status, 'cancelled');
  await app.kernel.worker.drain();
  const status = await finished(app, keys.ownerA.key, id);
  assert.equal(status.status, 'cancelled');
  assert.ok((status.rows_completed as number) < 20);
  assert.equal((await sql<{ n: number }>(app, "select count(*) as n from credit_holds where status = 'held'"))[0]!.n, 0);
  assert.equal(app.domains.billing.ledger.balance(a.companyId).available, 2000 - (status.credits_used as number));
  assertCode(await call(app, keys.ownerA.key, 'POST', `/v1/bulk/cancel/${id}`), 409, 'job_finished');
  // A cancelled job's file holds what was done; the rest say so.
  const file = parse((await call(app, keys.ownerA.key, 'GET', `/v1/bulk/download/${id}`)).body) as string[][];
  assert.equal(file.length, 21);
  assert.ok(file.slice(1).some((r) => r[1] === '' && /cancelled/.test(r[2]!)), JSON.stringify(file));
  await assertLedgerAddsUp(app);
});

test('a cancelled bulk job counts the rows it will never run in rows_cancelled: completed + failed + cancelled = total on both doors and over GraphQL', async (t) => {
  // Rows named ok answer at once; the others stall until the cancellation aborts them.
  const fake = await fakeOpenAi(t, (request) => (/ok-/.test(request.messages.at(-1)!.content!) ? { content: 'done', usage: { prompt: 5, completion: 5 } } : { stall: true }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url }, { bulk: { concurrency: 2, rowAttempts: 1, maxRows: 1000, maxConcurrent: 3 } } as never);
  const { keys, tokens } = await modulesCast(app);
  // Row 2 is empty: it fails without a call.
  const cells = ['ok-1', '', 'ok-3', ...Array.from({ length: 7 }, (_, i) => `slow-${i + 4}`)];
  const res = await submit(app, keys.ownerA.key, makeCsv([['id', 'review'], ...cells.map((c, i) => [i + 1, c])]), 'r.csv');
  assert.equal(res.statusCode, 202, res.body);
  const id = res.json().job_id as string;
  // Two rows done, one failed, two stalled in flight.
  for (let i = 0; i < 250 && fake.seen.length < 4; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(fake.seen.length, 4);
  const cancelled = await call(app, keys.ownerA.key, 'POST', `/v1/bulk/cancel/${id}`);
  assert.equal(cancelled.statusCode, 200, cancelled.body);
  await app.kernel.worker.drain();
  const adds = (job: Record<string, unknown>, names = ['rows_completed', 'rows_failed', 'rows_cancelled', 'total_rows']) => {
    const [completed, failed, cancelledRows, total] = names.map((n) => job[n]);
    assert.deepEqual([completed, failed, cancelledRows, total], [2, 1, 7, 10], JSON.stringify(job));
  };
  const modules = await finished(app, keys.ownerA.key, id);
  assert.equal(modules.status, 'cancelled');
  adds(modules);
  adds((await call(app, tokens.ownerA, 'GET', `/v1/bulk/jobs/${id}`)).json());
  adds((await call(app, keys.ownerA.key, 'GET', '/v1/bulk/list')).json().items[0]);
  const graphql = await gql(app, tokens.ownerA, 'query($id: ID!) { bulkJob(id: $id) { rowsCompleted rowsFailed rowsCancelled totalRows } }', { id });
  adds(graphql.data!.bulkJob as Record<string, unknown>, ['rowsCompleted', 'rowsFailed', 'rowsCancelled', 'totalRows']);
  await assertLedgerAddsUp(app);
});

test('a bulk job cancelled before its file was read still downloads its input rows, each marked not processed, as one cancelled while running does', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  // No worker: the job stays queued, its file unread, until the ingest below runs as the worker would run it.
  await app.kernel.worker.stop();
  const res = await submit(app, keys.ownerA.key, makeCsv(ROWS), 'queued.csv');
  assert.equal(res.statusCode, 202, res.body);
  const id = res.json().job_id as string;
  const cancelled = await call(app, keys.ownerA.key, 'POST', `/v1/bulk/cancel/${id}`);
  assert.equal(cancelled.json().status, 'cancelled', cancelled.body);
  // Until its rows are read, the file is not there to give: asked again shortly, not answered with a table of nothing.
  assertCode(await call(app, keys.ownerA.key, 'GET', `/v1/bulk/download/${id}`), 409, 'job_not_finished');
  await app.domains.bulk.bulk.ingest({ jobId: id });
  const status = (await call(app, keys.ownerA.key, 'GET', `/v1/bulk/status/${id}`)).json();
  assert.equal(status.status, 'cancelled');
  assert.equal(status.total_rows, 3);
  assert.equal(status.rows_completed, 0);
  assert.equal(status.rows_cancelled, 3, 'every row read is one that will never run');
  const file = await call(app, keys.ownerA.key, 'GET', `/v1/bulk/download/${id}`);
  assert.equal(file.statusCode, 200, file.body);
  assert.deepEqual(parse(file.body) as string[][], [
    ['id', 'review', 'AI_Result', 'AI_Result_error'],
    ...ROWS.slice(1).map(([n, review]) => [String(n), String(review), '', 'not processed: the job was cancelled']),
  ]);
  assert.deepEqual(uploads(app), [], 'the upload is gone once read');
  assert.equal(fake.seen.length, 0, 'no row was sent');
  await assertLedgerAddsUp(app);
});

test('cancelling a job whose file no ingest will read any more (its bulk.ingest dead-lettered) removes the upload at once, not on an operator\'s retry', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  await app.kernel.worker.stop();
  const res = await submit(app, keys.ownerA.key, makeCsv(ROWS), 'dead.csv');
  assert.equal(res.statusCode, 202, res.body);
  const id = res.json().job_id as string;
  assert.equal(uploads(app).length, 1);
  // The ingest's attempts ran out (an unreadable disk, say): it is dead-lettered, as the worker leaves it.
  await sql(app, "update jobs set dead_lettered_at = ?, attempts = max_attempts, last_error = 'EIO' where kind = 'bulk.ingest'", [Date.now()]);
  const cancelled = await call(app, keys.ownerA.key, 'POST', `/v1/bulk/cancel/${id}`);
  assert.equal(cancelled.statusCode, 200, cancelled.body);
  assert.deepEqual(uploads(app), [], 'the upload went with the cancellation');
  const status = (await call(app, keys.ownerA.key, 'GET', `/v1/bulk/status/${id}`)).json();
  assert.equal(status.status, 'cancelled');
  assert.match(status.error, /^not read: /);
  // Its file is the header alone, now rather than "ask again shortly" for ever.
  const file = await call(app, keys.ownerA.key, 'GET', `/v1/bulk/download/${id}`);
  assert.equal(file.statusCode, 200, file.body);
  assert.deepEqual(parse(file.body) as string[][], [['id', 'review', 'AI_Result', 'AI_Result_error']]);
  // An operator's retry of the dead ingest then finds nothing to read.
  await inContext(app.kernel.orm, () => app.domains.bulk.bulk.ingest({ jobId: id }));
  assert.equal((await call(app, keys.ownerA.key, 'GET', `/v1/bulk/status/${id}`)).json().total_rows, 0);
});

test('a job cancelled while its file was being read, whose ingest then gave up, lets go of the file at the next upload sweep, not on an operator\'s retry', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  await app.kernel.worker.stop();
  const res = await submit(app, keys.ownerA.key, makeCsv(ROWS), 'late.csv');
  assert.equal(res.statusCode, 202, res.body);
  const id = res.json().job_id as string;
  // Cancelled while its ingest is live: the ingest still reads the file, so the file stays.
  assert.equal((await call(app, keys.ownerA.key, 'POST', `/v1/bulk/cancel/${id}`)).statusCode, 200);
  assert.equal(uploads(app).length, 1);
  assert.equal(await app.domains.bulk.bulk.sweepUploads(), 0);
  assert.equal(uploads(app).length, 1, 'a live ingest still holds it');
  // Then the ingest's attempts run out.
  await sql(app, "update jobs set dead_lettered_at = ?, attempts = max_attempts, last_error = 'EIO' where kind = 'bulk.ingest'", [Date.now()]);
  await app.domains.bulk.bulk.sweepUploads();
  assert.deepEqual(uploads(app), [], 'the sweep let go of it');
  const status = (await call(app, keys.ownerA.key, 'GET', `/v1/bulk/status/${id}`)).json();
  assert.equal(status.status, 'cancelled');
  assert.match(status.error, /^not read: /);
  const file = await call(app, keys.ownerA.key, 'GET', `/v1/bulk/download/${id}`);
  assert.equal(file.statusCode, 200, file.body);
});

test('an upload no job holds is removed once untouched for an hour (a kill mid-upload, a job deleted with its user); one still arriving or held by a job stays', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  await app.kernel.worker.stop();
  const res = await submit(app, keys.ownerA.key, makeCsv(ROWS), 'held.csv');
  assert.equal(res.statusCode, 202, res.body);
  const dir = path.join(app.config.dataDir, 'uploads');
  const [held] = uploads(app);
  assert.ok(held);
  const orphan = path.join(dir, 'left-by-a-kill.upload');
  const arriving = path.join(dir, 'still-arriving.upload');
  fs.writeFileSync(orphan, 'id,review\n1,x\n');
  fs.writeFileSync(arriving, 'id,rev');
  const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
  for (const file of [orphan, path.join(dir, held)]) fs.utimesSync(file, twoHoursAgo, twoHoursAgo);
  assert.equal(await app.domains.bulk.bulk.sweepUploads(), 1);
  assert.deepEqual(uploads(app).sort(), [held, 'still-arriving.upload'].sort());
  // The held file is still the job's: its rows are read from it.
  await inContext(app.kernel.orm, () => app.domains.bulk.bulk.ingest({ jobId: res.json().job_id as string }));
  assert.equal((await call(app, keys.ownerA.key, 'GET', `/v1/bulk/status/${res.json().job_id}`)).json().total_rows, 3);
});

test('isolation: another company\'s bulk job is 404 on every path, a member sees only their own, and lists hold only one\'s own', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { a, keys, tokens } = await modulesCast(app);
  const res = await submit(app, keys.ownerA.key, makeCsv(ROWS), 'r.csv');
  const id = res.json().job_id as string;
  await app.kernel.worker.drain();
  for (const [method, url] of [
    ['GET', `/v1/bulk/status/${id}`],
    ['GET', `/v1/bulk/download/${id}`],
    ['POST', `/v1/bulk/cancel/${id}`],
  ] as const) {
    assertCode(await call(app, keys.ownerB.key, method, url), 404, 'not_found');
    assertCode(await call(app, keys.memberA.key, method, url), 404, 'not_found');
  }
  for (const [method, url] of [
    ['GET', `/v1/bulk/jobs/${id}`],
    ['GET', `/v1/bulk/jobs/${id}/rows`],
    ['GET', `/v1/bulk/jobs/${id}/download`],
    ['POST', `/v1/bulk/jobs/${id}/cancel`],
  ] as const) {
    assertCode(await call(app, tokens.ownerB, method, url), 404, 'not_found');
    assertCode(await call(app, tokens.memberA, method, url), 404, 'not_found');
  }
  // The company's owner sees it over the platform API; a company key too.
  assert.equal((await call(app, tokens.ownerA, 'GET', `/v1/bulk/jobs/${id}`)).statusCode, 200);
  const companyKey = await createCompanyKey(app, a.companyId);
  assert.equal((await call(app, companyKey.key, 'GET', `/v1/bulk/jobs/${id}`)).statusCode, 200);
  // The AI-modules API names a job job_id in its list too, as in its submit, status and cancel answers.
  const listed = (await call(app, keys.ownerA.key, 'GET', '/v1/bulk/list')).json();
  assert.equal(listed.total, 1);
  assert.equal(listed.items[0].job_id, id);
  assert.equal('id' in listed.items[0], false);
  assert.equal((await call(app, keys.memberA.key, 'GET', '/v1/bulk/list')).json().total, 0);
  assert.equal((await call(app, tokens.ownerB, 'GET', '/v1/bulk/jobs')).json().total, 0);
  // The surfaces keep their credentials: a module key on the platform path and a user token on the modules path are 401.
  assert.equal((await call(app, keys.ownerA.key, 'GET', `/v1/bulk/jobs/${id}`)).statusCode, 401);
  assert.equal((await call(app, tokens.ownerA, 'GET', `/v1/bulk/status/${id}`)).statusCode, 401);
  // A key without the bulk scope is 403.
  const chatOnly = await moduleKey(app, tokens.ownerA, ['chat'], 'chat only');
  const refused = await submit(app, chatOnly.key, makeCsv(ROWS), 'r.csv');
  assertCode(refused, 403, 'insufficient_scope');
  assertCode(await call(app, chatOnly.key, 'GET', `/v1/bulk/status/${id}`), 403, 'insufficient_scope');
  assert.deepEqual(uploads(app), []);
});

test('the platform API takes CSV from a company key, answers the job as id (not the AI-modules API\'s job_id) and refuses .xlsx (415); bulk.job.completed carries the counts', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { a } = await modulesCast(app);
  const companyKey = await createCompanyKey(app, a.companyId);
  const events: unknown[] = [];
  const stop = app.kernel.events.subscribe('bulk.job.completed', (e) => events.push(e));
  t.after(stop);
  assertCode(await submit(app, companyKey.key, await makeXlsx({ S: [['review'], ['x']] }), 'r.xlsx', FIELDS, '/v1/bulk/jobs'), 415, 'unsupported_media_type');
  const res = await submit(app, companyKey.key, makeCsv(ROWS), 'r.csv', FIELDS, '/v1/bulk/jobs');
  assert.equal(res.statusCode, 202, res.body);
  // The platform API names a job id, as GET /bulk/jobs/{id}, POST /research and GraphQL do; job_id is the AI-modules API's name.
  assert.deepEqual(Object.keys(res.json()).sort(), ['filename', 'format', 'id', 'status']);
  const id = res.json().id as string;
  const status = await finished(app, companyKey.key, id, `/v1/bulk/jobs/${id}`);
  assert.equal(status.status, 'completed');
  assert.equal((await call(app, companyKey.key, 'GET', '/v1/bulk/jobs')).json().total, 1);
  assert.equal(events.length, 1);
  const event = events[0] as { type: string; company_id: string; data: unknown; id: string; created_at: string };
  assert.equal(event.type, 'bulk.job.completed');
  assert.equal(event.company_id, a.companyId);
  assert.deepEqual(event.data, { job_id: id, total_rows: 3, rows_completed: 3, rows_failed: 0 });
  assert.ok(event.id && !Number.isNaN(Date.parse(event.created_at)));
});

test('GraphQL: a signed-in user submits CSV text, reads the job and its rows, through the same service', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { tokens } = await modulesCast(app);
  const created = await gql(app, tokens.ownerA, 'mutation($i: BulkCsvInput!) { submitBulkJob(input: $i) { id status format } }', {
    i: { csv: makeCsv(ROWS).toString(), inputColumn: 'review', promptTemplate: 'Classify the sentiment of: {text}' },
  });
  assert.equal(created.errors, undefined, JSON.stringify(created.errors));
  const id = (created.data!.submitBulkJob as { id: string }).id;
  await app.kernel.worker.drain();
  const read = await gql(app, tokens.ownerA, 'query($id: ID!) { bulkJob(id: $id) { status rowsCompleted } bulkJobRows(id: $id, after: 1) { row output } }', { id });
  assert.deepEqual(read.data, { bulkJob: { status: 'completed', rowsCompleted: 3 }, bulkJobRows: [{ row: 2, output: 'label:Terrible service' }, { row: 3, output: 'label:It was fine' }] });
  const bad = await gql(app, tokens.ownerA, 'mutation($i: BulkCsvInput!) { submitBulkJob(input: $i) { id } }', { i: { csv: 'a,b\n1,2', inputColumn: 'c', promptTemplate: '{text}' } });
  assert.equal(bad.errors?.[0]?.extensions?.code, 'validation_error');
});

test('GraphQL submitBulkJob names an empty or unreadable CSV at its argument ["input", "csv"], while the REST upload keeps ["body", "file"]', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys, tokens } = await modulesCast(app);
  const mutation = 'mutation($i: BulkCsvInput!) { submitBulkJob(input: $i) { id } }';
  for (const csv of ['', '\n\n']) {
    const bad = await gql(app, tokens.ownerA, mutation, { i: { csv, inputColumn: 'review', promptTemplate: 'X {text}' } });
    assert.equal(bad.errors?.[0]?.extensions?.code, 'validation_error', JSON.stringify(bad.errors));
    const issues = (bad.errors![0]!.extensions as unknown as { errors: { loc: unknown[] }[] }).errors;
    assert.deepEqual(issues.map((i) => i.loc), [['input', 'csv']], JSON.stringify(csv));
  }
  const rest = await submit(app, keys.ownerA.key, Buffer.alloc(0), 'empty.csv');
  assert.equal(rest.statusCode, 422, rest.body);
  assert.deepEqual((rest.json() as { errors: { loc: unknown[] }[] }).errors.map((i) => i.loc), [['body', 'file']]);
});

test('companyJobProgress over graphql-ws: bulk counts at most four times a second, the final state always, nothing to another company', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'ok', delayMs: 10, usage: { prompt: 5, completion: 5 } }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url }, { bulk: { concurrency: 2, rowAttempts: 1, maxRows: 1000, maxConcurrent: 3 } } as never);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as AddressInfo).port;
  const { keys, tokens } = await modulesCast(app);
  const socket = (token: string) => {
    const client = createClient({ url: `ws://127.0.0.1:${port}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${token}` }, retryAttempts: 0, lazy: true });
    t.after(() => client.dispose());
    return client;
  };
  const updates: { at: number; status: string; bulk: { rowsCompleted: number; totalRows: number } }[] = [];
  const theirs: unknown[] = [];
  const subscribed = (client: ReturnType<typeof socket>, sink: (v: unknown) => void) =>
    new Promise<void>((resolve) => {
      client.on('connected', () => setTimeout(resolve, 100));
      client.subscribe({ query: 'subscription { companyJobProgress { kind status bulk { rowsCompleted totalRows } } }' }, { next: (v) => sink(v.data), error: () => undefined, complete: () => undefined });
    });
  await subscribed(socket(tokens.ownerA), (v) => updates.push({ at: Date.now(), ...(v as { companyJobProgress: Omit<(typeof updates)[number], 'at'> }).companyJobProgress }));
  await subscribed(socket(tokens.ownerB), (v) => theirs.push(v));
  const started = Date.now();
  const res = await submit(app, keys.ownerA.key, makeCsv([['review'], ...Array.from({ length: 80 }, (_, i) => [`r${i}`])]), 'r.csv');
  assert.equal(res.statusCode, 202, res.body);
  await app.kernel.worker.drain();
  for (let i = 0; i < 100 && updates.at(-1)?.status !== 'completed'; i++) await new Promise((r) => setTimeout(r, 20));
  const seconds = (Date.now() - started) / 1000;
  assert.equal(updates.at(-1)!.status, 'completed');
  assert.equal(updates.at(-1)!.bulk.rowsCompleted, 80);
  const counting = updates.filter((u) => u.status === 'running');
  assert.ok(counting.length >= 1, 'counts were reported while running');
  // State changes (queued, running, completed) plus at most four count updates a second.
  assert.ok(counting.length <= Math.ceil(seconds * 4) + 2, `${counting.length} running updates in ${seconds.toFixed(2)} s`);
  assert.deepEqual(theirs, []);
});

test('stopping the server mid-job does not wait for every row: the job stays running with its rows pending for the next start, nothing charged twice', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'ok', delayMs: 25, usage: { prompt: 5, completion: 5 } }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url }, { bulk: { concurrency: 1, rowAttempts: 1, maxRows: 1000, maxConcurrent: 3 } } as never);
  const { keys } = await modulesCast(app);
  const res = await submit(app, keys.ownerA.key, makeCsv([['review'], ...Array.from({ length: 400 }, (_, i) => [`r${i}`])]), 'r.csv');
  const id = res.json().job_id as string;
  for (let i = 0; i < 200 && fake.seen.length < 5; i++) await new Promise((r) => setTimeout(r, 10));
  const started = Date.now();
  await app.kernel.worker.stop();
  assert.ok(Date.now() - started < 2000, `stop took ${Date.now() - started} ms`);
  const [job] = await sql<{ status: string; rows_completed: number }>(app, 'select status, rows_completed from bulk_jobs where id = ?', [id]);
  assert.equal(job!.status, 'running');
  assert.ok(job!.rows_completed < 400);
  const [run] = await sql<{ completed_at: number | null; last_error: string | null }>(app, "select completed_at, last_error from jobs where kind = 'bulk.process'");
  assert.equal(run!.completed_at, null, 'the job is not marked done: the next start goes on with it');
  assert.match(run!.last_error ?? '', /stopped before its rows were done/);
  const committed = (await sql<{ n: number }>(app, "select count(*) as n from credit_holds where feature = 'bulk' and status = 'committed'"))[0]!.n;
  assert.equal(committed, job!.rows_completed);
  await assertLedgerAddsUp(app);
});

test('a model blocked after a job was submitted fails the job with model_blocked instead of retrying it', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  const res = await submit(app, keys.ownerA.key, makeCsv(ROWS), 'r.csv', { ...FIELDS, model: 'gpt-4o-mini' });
  const id = res.json().job_id as string;
  await app.kernel.worker.drain();
  // The job as it would stand had a restart come between its submission and its run.
  await app.kernel.orm.em.fork().getConnection().execute("update bulk_jobs set status = 'running' where id = ?", [id]);
  await app.kernel.orm.em.fork().getConnection().execute("update models set blocked = 1 where id = 'gpt-4o-mini'");
  const signal = new AbortController().signal;
  await app.domains.bulk.bulk.process({ jobId: id }, { id: 'x', kind: 'bulk.process', attempt: 1, maxAttempts: 100, signal });
  const status = await finished(app, keys.ownerA.key, id);
  assert.equal(status.status, 'failed');
  assert.match(String(status.error), /^model_blocked/);
});

test('a result file whose name holds characters beyond Latin-1 downloads, under an ASCII fallback and its exact UTF-8 name', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  const res = await submit(app, keys.ownerA.key, makeCsv(ROWS), '报告 q1.csv');
  assert.equal(res.statusCode, 202, res.body);
  assert.equal((await finished(app, keys.ownerA.key, res.json().job_id)).status, 'completed');
  const download = await call(app, keys.ownerA.key, 'GET', `/v1/bulk/download/${res.json().job_id}`);
  assert.equal(download.statusCode, 200, download.body);
  assert.equal(
    download.headers['content-disposition'],
    `attachment; filename="__ q1-results.csv"; filename*=UTF-8''${encodeURIComponent('报告 q1-results.csv')}`,
  );
  assert.equal(parse(download.rawPayload, { columns: true }).length, 3);
});

test('bulk multipart text is checked like JSON: U+0000 in a field is 422 at that field, control characters leave the file name, a second file is 422', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  const nul = await submit(app, keys.ownerA.key, makeCsv(ROWS), 'reviews.csv', { ...FIELDS, prompt_template: 'Classify\u0000: {text}' });
  assertCode(nul, 422, 'validation_error');
  assert.deepEqual(nul.json().errors.map((e: { loc: string[]; type: string }) => [e.loc.join('.'), e.type]), [['body.prompt_template', 'string_nul_character']]);
  const form = multipartForm(FIELDS, [
    { content: makeCsv(ROWS), filename: 'one.csv' },
    { content: makeCsv(ROWS), filename: 'two.csv' },
  ]);
  const two = await app.inject({ method: 'POST', url: '/v1/bulk/submit', payload: form.payload, headers: { ...form.headers, authorization: `Bearer ${keys.ownerA.key}` } });
  assertCode(two, 422, 'validation_error');
  assert.equal(two.json().errors[0].loc.join('.'), 'body.file');
  assert.deepEqual(uploads(app), [], 'nothing kept');
  const [{ n }] = await sql<{ n: number }>(app, 'select count(*) as n from bulk_jobs');
  assert.equal(n, 0);
  const named = await submit(app, keys.ownerA.key, makeCsv(ROWS), 'r\u0001x.csv');
  assert.equal(named.statusCode, 202, named.body);
  assert.equal(named.json().filename, 'r_x.csv');
});

test('a page number beyond a 32-bit integer is 422 at query.page on the job lists', async (t) => {
  const app = await buildWithAi(t);
  const { keys } = await modulesCast(app);
  const res = await call(app, keys.ownerA.key, 'GET', '/v1/bulk/list?page=2147483648');
  assertCode(res, 422, 'validation_error');
  assert.equal(res.json().errors[0].loc.join('.'), 'query.page');
});

test('an output_column the file already has (or its _error twin) is 422, so the result file never repeats a column', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  for (const output of ['review', 'id']) {
    const res = await submit(app, keys.ownerA.key, makeCsv(ROWS), 'reviews.csv', { ...FIELDS, output_column: output });
    assertCode(res, 422, 'validation_error');
    assert.equal(res.json().errors[0].loc.join('.'), 'body.output_column');
  }
  const twin = await submit(app, keys.ownerA.key, makeCsv([['x', 'out_error'], ['1', 'a']]), 'twin.csv', { input_column: 'x', prompt_template: '{text}', output_column: 'out' });
  assertCode(twin, 422, 'validation_error');
  assert.deepEqual(uploads(app), []);
});

test('cancelling a job gives back the holds of its rows in flight even when the worker running them is gone (another process, a crash)', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { a, keys } = await modulesCast(app);
  const res = await submit(app, keys.ownerA.key, makeCsv(ROWS), 'r.csv');
  const id = res.json().job_id as string;
  // Rows held by a worker in another process, which then died (rows past the file: never the local worker's); one hold of another job stays.
  for (const key of [`bulk:${id}:1000`, `bulk:${id}:1001`, 'bulk:another-job:1']) {
    await inContext(app.kernel.orm, () => app.domains.billing.ledger.reserve({ companyId: a.companyId, credits: 7, key, feature: 'bulk' }));
  }
  assert.equal(app.domains.billing.ledger.balance(a.companyId).held, 21);
  const cancelled = await call(app, keys.ownerA.key, 'POST', `/v1/bulk/cancel/${id}`);
  assert.equal(cancelled.statusCode, 200, cancelled.body);
  assert.equal(app.domains.billing.ledger.balance(a.companyId).held, 7, 'only the other job keeps its hold');
  const held = await sql<{ idempotency_key: string }>(app, "select idempotency_key from credit_holds where status = 'held'");
  assert.deepEqual(held.map((h) => h.idempotency_key), ['bulk:another-job:1']);
  await app.kernel.worker.drain();
  await assertLedgerAddsUp(app);
});

test('NUL and control characters in cells past the sniffed start reach neither the database nor the model: they become U+FFFD', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  // 70 KiB of clean rows first: the damaged cell lies past the first 64 KiB the upload is judged by.
  const filler = Array.from({ length: 700 }, (_, i) => [`${'clean review '.repeat(7)}${i}`]);
  const csv = Buffer.concat([makeCsv([['review'], ...filler]), Buffer.from('\nbad\u0000cell\u0007here\tand\u001btabs\n')]);
  assert.ok(csv.indexOf(0) > 64 * 1024, 'the NUL lies past the sniffed start');
  const res = await submit(app, keys.ownerA.key, csv, 'r.csv');
  assert.equal(res.statusCode, 202, res.body);
  const status = await finished(app, keys.ownerA.key, res.json().job_id as string);
  assert.equal(status.status, 'completed');
  const stored = await sql<{ cells: string }>(app, "select cells from bulk_rows where cells like '%cell%here%'");
  assert.deepEqual(JSON.parse(stored[0]!.cells), ['bad\ufffdcell\ufffdhere\tand\ufffdtabs']);
  const prompts = fake.seen.map((s) => s.messages.map((m) => m.content ?? '').join('\n'));
  assert.ok(prompts.some((p) => p.includes('bad\ufffdcell\ufffdhere\tand\ufffdtabs')), 'the damaged row still ran, marked');
  // eslint-disable-next-line no-control-regex -- looking for control characters
  assert.ok(prompts.every((p) => !/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(p)), 'no control character reached the model');
});

test("deleting a user stops their running bulk job: no row is sent or charged after the deletion, and no hold stays", async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'slow', delayMs: 100, usage: { prompt: 5, completion: 5 } }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url }, { bulk: { concurrency: 2, rowAttempts: 1, maxRows: 1000, maxConcurrent: 3 } } as never);
  const { a, memberA, tokens, keys } = await modulesCast(app);
  const res = await submit(app, keys.memberA.key, makeCsv([['review'], ...Array.from({ length: 30 }, (_, i) => [`r${i}`])]), 'r.csv');
  assert.equal(res.statusCode, 202, res.body);
  for (let i = 0; i < 200 && fake.seen.length < 3; i++) await new Promise((r) => setTimeout(r, 20));
  const deleted = await call(app, tokens.ownerA, 'DELETE', `/v1/admin/users/${memberA.userId}`);
  assert.equal(deleted.statusCode, 204, deleted.body);
  const sentBefore = fake.seen.length;
  const charged = async () => (await sql<{ n: number; credits: number }>(app, "select count(*) as n, coalesce(sum(credits), 0) as credits from usage_records where feature = 'bulk'"))[0]!;
  const chargedBefore = await charged();
  await app.kernel.worker.drain();
  await new Promise((r) => setTimeout(r, 300));
  // The rows in flight at the deletion (at most BULK_CONCURRENCY) finish their calls; nothing starts after them.
  assert.ok(fake.seen.length - sentBefore <= 2, `${fake.seen.length - sentBefore} rows sent after the deletion`);
  assert.deepEqual(await charged(), chargedBefore, 'a row was charged after its job was deleted');
  assert.equal((await sql<{ n: number }>(app, "select count(*) as n from credit_holds where status = 'held'"))[0]!.n, 0);
  assert.equal(app.domains.billing.ledger.balance(a.companyId).available, 2000 - chargedBefore.credits);
  await assertLedgerAddsUp(app);
});

test("a workbook's error values (#DIV/0!, #N/A) are read as the spreadsheet shows them, so a row of them is a row, not an empty one skipped", async (t) => {
  const workbook = new ExcelJS.Workbook();
  const sheet = workbook.addWorksheet('Data');
  sheet.addRow(['review']);
  sheet.addRow(['Great product']);
  sheet.addRow([{ error: '#DIV/0!' }]);
  sheet.addRow([{ error: '#N/A' }]);
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-xlsx-errors-')), 'errors.xlsx');
  t.after(() => fs.rmSync(path.dirname(file), { recursive: true, force: true }));
  await workbook.xlsx.writeFile(file);
  const rows: (string | number)[][] = [];
  for await (const row of readTable(file, { kind: 'xlsx', delimiter: ',', bom: false })) rows.push(row);
  assert.deepEqual(rows, [['review'], ['Great product'], ['#DIV/0!'], ['#N/A']]);
});

test('a bulk form\'s text field in bytes that are not UTF-8 is 422 at the field, a field given twice is 422 and a form in a content coding 415, on both doors: nothing kept, sent or spent; UTF-8 text arrives as sent', async (t) => {
  const fake = await fakeOpenAi(t, (request) => ({ content: `seen:${request.messages.at(-1)!.content}`, usage: { prompt: 5, completion: 5 } }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys, tokens } = await modulesCast(app);
  const boundary = '----atrium-bytes';
  const field = (name: string, value: Buffer | string) =>
    Buffer.concat([Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n`), Buffer.from(value), Buffer.from('\r\n')]);
  const send = (url: string, credential: string, ...fields: Buffer[]) =>
    app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, authorization: `Bearer ${credential}` },
      payload: Buffer.concat([
        ...fields,
        Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="r.csv"\r\nContent-Type: text/csv\r\n\r\n`),
        makeCsv(ROWS),
        Buffer.from(`\r\n--${boundary}--\r\n`),
      ]),
    });
  const column = field('input_column', 'review');
  for (const [url, credential] of [['/v1/bulk/submit', keys.ownerA.key], ['/v1/bulk/jobs', tokens.ownerA]] as const) {
    // "résumé {text}" as Windows-1252 bytes: a loose decoder would send "r\uFFFDsum\uFFFD {text}" to the model.
    const latin1 = await send(url, credential, column, field('prompt_template', Buffer.from('r\xe9sum\xe9 {text}', 'latin1')));
    assertCode(latin1, 422, 'validation_error');
    assert.deepEqual(latin1.json().errors.map((e: { loc: string[] }) => e.loc), [['body', 'prompt_template']]);
    const twice = await send(url, credential, column, field('prompt_template', '{text}'), field('prompt_template', 'Other: {text}'));
    assertCode(twice, 422, 'validation_error');
    assert.deepEqual(twice.json().errors.map((e: { loc: string[] }) => e.loc), [['body', 'prompt_template']]);
  }
  // A form in a content coding is not read at all (README: 415 on every route that takes a body, uploads included).
  const coded = multipartForm(FIELDS, { content: makeCsv(ROWS), filename: 'r.csv' });
  for (const [url, credential] of [['/v1/bulk/submit', keys.ownerA.key], ['/v1/bulk/jobs', tokens.ownerA], ['/v1/rag/upload', keys.ownerA.key]] as const) {
    const res = await app.inject({ method: 'POST', url, payload: coded.payload, headers: { ...coded.headers, 'content-encoding': 'gzip', authorization: `Bearer ${credential}` } });
    assertCode(res, 415, 'unsupported_media_type');
  }
  assert.equal((await call(app, tokens.ownerA, 'GET', '/v1/bulk/jobs')).json().total, 0);
  assert.deepEqual((await call(app, keys.ownerA.key, 'GET', '/v1/rag/docs')).json().documents, []);
  assert.deepEqual(uploads(app), []);

  const accepted = await send('/v1/bulk/submit', keys.ownerA.key, column, field('prompt_template', 'résumé: {text}'));
  assert.equal(accepted.statusCode, 202, accepted.body);
  await app.kernel.worker.drain();
  assert.equal(fake.seen.length, 3);
  assert.ok(fake.seen.some((request) => request.messages.at(-1)!.content === 'résumé: Great product'), 'the template as sent');
  await assertLedgerAddsUp(app);
});

test('CSV text under the name of a binary type or of a document bulk does not read (setup.exe, photo.png, report.pdf, "data.exe. ") is 415 on both doors and over GraphQL, as /rag/upload refuses it; nothing kept', async (t) => {
  const fake = await fakeOpenAi(t, classify());
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys, tokens } = await modulesCast(app);
  for (const filename of ['setup.exe', 'photo.png', 'report.pdf', 'letter.docx', 'data.exe. ']) {
    assertCode(await submit(app, keys.ownerA.key, makeCsv(ROWS), filename), 415, 'unsupported_media_type');
    assertCode(await submit(app, tokens.ownerA, makeCsv(ROWS), filename, FIELDS, '/v1/bulk/jobs'), 415, 'unsupported_media_type');
    const graphql = await gql(app, tokens.ownerA, 'mutation($i: BulkCsvInput!) { submitBulkJob(input: $i) { id } }', {
      i: { csv: makeCsv(ROWS).toString(), filename, inputColumn: 'review', promptTemplate: '{text}' },
    });
    assert.equal(graphql.errors?.[0]?.extensions?.code, 'unsupported_media_type', `${filename}: ${JSON.stringify(graphql)}`);
  }
  // Text names stay text.
  for (const filename of ['rows.csv', 'rows.txt', 'rows.tsv', 'rows', 'rows.csv.']) {
    assert.equal((await submit(app, keys.ownerA.key, makeCsv(ROWS), filename)).statusCode, 202, filename);
  }
  await app.kernel.worker.drain();
  assert.equal((await call(app, tokens.ownerA, 'GET', '/v1/bulk/jobs')).json().total, 5);
  assert.deepEqual(uploads(app), []);
});
