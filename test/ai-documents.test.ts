import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { assertCode, call, gql, sql } from './admin-helper';
import { build, bearer } from './helper';
import { buildWithAi, moduleKey, modulesCast } from './ai-helper';
import { fakeOpenAi } from './fake-ai';
import { makeCsv, makeDocx, makePdf, makePdfBomb, makePng, makeXlsx, makeZipBomb, multipartBody, multipartForm } from './fixtures/document-files';
import { chunkSections, DEFAULT_EXTRACT_LIMITS, runningPdfWorkers } from '../src/domains/documents';
import { buildApp } from '../src/app';

function upload(app: FastifyInstance, key: string, file: Buffer, filename: string) {
  const { payload, headers } = multipartBody(file, filename);
  return app.inject({ method: 'POST', url: '/v1/rag/upload', payload, headers: { ...headers, ...bearer(key) } });
}

async function documentCount(app: FastifyInstance) {
  const rows = await sql<{ n: number }>(app, 'select (select count(*) from documents) + (select count(*) from document_chunks_fts) as n');
  return rows[0]!.n;
}

test('each upload type is read by its content: PDF pages, Word, Excel sheets, text and CSV', async (t) => {
  const app = await build(t);
  const { keys } = await modulesCast(app);
  const cases: [Buffer, string, string, number, RegExp][] = [
    [await makePdf(['The lighthouse keeper logs the tides.', 'Page two is about storms over the harbour.']), 'guide.pdf', 'pdf', 2, /storms/],
    [await makeDocx(['Quarterly report', 'Revenue grew by twelve percent in the north region.']), 'report.docx', 'docx', 1, /twelve percent/],
    [await makeXlsx({ Sales: [['Region', 'Revenue'], ['North', 1200]], Costs: [['Item', 'Amount'], ['Rent', 300]] }), 'book.xlsx', 'xlsx', 2, /Rent, 300/],
    [Buffer.from('\uFEFFPlain notes about the migration plan.\n\nSecond paragraph.'), 'notes.txt', 'txt', 1, /migration plan/],
    [makeCsv([['name', 'city'], ['Ada', 'London'], ['Grace', 'New York, NY']]), 'people.csv', 'csv', 1, /Grace, New York, NY/],
    [makeCsv([['name', 'city'], ['Ada', 'London']]), 'people', 'csv', 1, /Ada, London/],
  ];
  for (const [file, filename, type, pages, text] of cases) {
    const res = await upload(app, keys.ownerA.key, file, filename);
    assert.equal(res.statusCode, 201, `${filename}: ${res.body}`);
    const body = res.json();
    assert.equal(body.type, type, filename);
    assert.equal(body.pages, pages, filename);
    assert.ok(body.chunks >= 1);
    assert.equal(body.size_bytes, file.length);
    const passages = await sql<{ text: string; page: number }>(app, 'select text, page from document_chunks_fts where document_id = ?', [body.doc_id]);
    assert.match(passages.map((p) => p.text).join('\n'), text, filename);
  }
  const pdf = (await call(app, keys.ownerA.key, 'GET', '/v1/rag/docs')).json().documents.find((d: { filename: string }) => d.filename === 'guide.pdf');
  const pages = await sql<{ page: number }>(app, 'select page from document_chunks_fts where document_id = ? order by page', [pdf.doc_id]);
  assert.deepEqual(pages.map((p) => p.page), [1, 2]);
});

test('disguised and unsupported content is 415, nothing stored', async (t) => {
  const app = await build(t);
  const { keys } = await modulesCast(app);
  const pdf = await makePdf(['hello']);
  assertCode(await upload(app, keys.ownerA.key, makePng(), 'report.pdf'), 415, 'unsupported_media_type');
  assertCode(await upload(app, keys.ownerA.key, makePng(), 'image.png'), 415, 'unsupported_media_type');
  assertCode(await upload(app, keys.ownerA.key, pdf, 'notes.docx'), 415, 'unsupported_media_type');
  assertCode(await upload(app, keys.ownerA.key, await makeDocx(['x']), 'sheet.xlsx'), 415, 'unsupported_media_type');
  const JSZip = (await import('jszip')).default;
  const plainZip = await new JSZip().file('a.txt', 'hello').generateAsync({ type: 'nodebuffer' });
  assertCode(await upload(app, keys.ownerA.key, plainZip, 'archive.zip'), 415, 'unsupported_media_type');
  // Not multipart at all.
  assertCode(await app.inject({ method: 'POST', url: '/v1/rag/upload', payload: { file: 'x' }, headers: bearer(keys.ownerA.key) }), 415, 'unsupported_media_type');
  // A JSON route does not take multipart.
  const { payload, headers } = multipartBody(Buffer.from('x'), 'x.txt');
  assert.equal((await app.inject({ method: 'POST', url: '/v1/rag/query', payload, headers: { ...headers, ...bearer(keys.ownerA.key) } })).statusCode, 415);
  assert.equal(await documentCount(app), 0);
});

test('a name that disguises text is 415: trailing dots and spaces are ignored, and a binary type Atrium does not read contradicts text', async (t) => {
  const app = await build(t);
  const { keys } = await modulesCast(app);
  const text = Buffer.from('plain text');
  for (const name of ['x.pdf ', 'x.pdf.', 'x.PDF', 'x.Pdf. . ', 'report.png', 'x.doc', 'x.XLS', 'x.ppt', 'song.mp3', 'clip.mp4', 'setup.exe', 'a.zip', 'a.tar.gz', 'photo.JPEG.']) {
    assertCode(await upload(app, keys.ownerA.key, text, name), 415, 'unsupported_media_type');
  }
  assert.equal(await documentCount(app), 0);
  // Text under a text name, any name Atrium knows nothing about, or no extension still reads.
  for (const name of ['notes.txt. ', 'README', 'notes.log', 'data.json', 'page.html', 'v1.2']) {
    assert.equal((await upload(app, keys.ownerA.key, text, name)).statusCode, 201, name);
  }
});

test('a zip bomb is refused 413 before it is unpacked; an oversize file is 413; nothing stored', async (t) => {
  const app = await build(t, { documents: { ...DEFAULT_EXTRACT_LIMITS, maxBytes: 1024 * 1024 } });
  const { keys } = await modulesCast(app);
  for (const kind of ['docx', 'xlsx'] as const) {
    const bomb = await makeZipBomb(kind, 300 * 1024 * 1024);
    assert.ok(bomb.length < 1024 * 1024, `the bomb itself is small (${bomb.length} bytes)`);
    const rss = process.memoryUsage().rss;
    const started = Date.now();
    assertCode(await upload(app, keys.ownerA.key, bomb, `bomb.${kind}`), 413, 'payload_too_large');
    assert.ok(Date.now() - started < 3000, 'refused without unpacking');
    assert.ok(process.memoryUsage().rss - rss < 100 * 1024 * 1024, 'memory stayed bounded');
  }
  // Headers that understate the unpacked size (1 KB declared, 300 MB inside) are caught while unpacking, at the first byte past 1 KB.
  for (const kind of ['docx', 'xlsx'] as const) {
    const forged = await makeZipBomb(kind, 300 * 1024 * 1024, 1000);
    const rss = process.memoryUsage().rss;
    const started = Date.now();
    assertCode(await upload(app, keys.ownerA.key, forged, `forged.${kind}`), 413, 'payload_too_large');
    assert.ok(Date.now() - started < 3000, 'refused without unpacking it all');
    assert.ok(process.memoryUsage().rss - rss < 100 * 1024 * 1024, 'memory stayed bounded');
  }
  const big = Buffer.alloc(1024 * 1024 + 10, 'a');
  assertCode(await upload(app, keys.ownerA.key, big, 'big.txt'), 413, 'payload_too_large');
  assert.equal(await documentCount(app), 0);
});

test('a PDF whose streams unpack past the limit, or with too many pages or too much text, is 413 before it is stored', async (t) => {
  const app = await build(t, { documents: { ...DEFAULT_EXTRACT_LIMITS, maxUncompressedBytes: 4 * 1024 * 1024, maxPdfPages: 20, maxTextChars: 50 } });
  const { keys } = await modulesCast(app);
  const bomb = makePdfBomb(8 * 1024 * 1024);
  assert.ok(bomb.length < 64 * 1024, `the bomb itself is small (${bomb.length} bytes)`);
  const res = await upload(app, keys.ownerA.key, bomb, 'bomb.pdf');
  assertCode(res, 413, 'payload_too_large');
  assert.match(res.json().detail, /unpacks to more than 4 MB/);
  // One page named 30 times: past the page limit.
  const pages = await upload(app, keys.ownerA.key, makePdfBomb(100, 30), 'pages.pdf');
  assertCode(pages, 413, 'payload_too_large');
  assert.match(pages.json().detail, /more than 20 pages/);
  // Eight times "Hello bomb" is past 50 characters: counted as the pages come in.
  const text = await upload(app, keys.ownerA.key, makePdfBomb(100, 8), 'text.pdf');
  assertCode(text, 413, 'payload_too_large');
  assert.match(text.json().detail, /more than 50 characters/);
  assert.equal(await documentCount(app), 0);
  assert.equal(runningPdfWorkers(), 0);
  // The same PDF within the limits is read as before.
  const ok = await upload(app, keys.ownerA.key, makePdfBomb(100, 2), 'fine.pdf');
  assert.equal(ok.statusCode, 201, ok.body);
  assert.equal(ok.json().pages, 2);
});

test('a slow PDF is read off the event loop: /v1/health answers meanwhile; past the PDF time limit it is 413 and its worker is ended', async (t) => {
  const app = await build(t, { documents: { ...DEFAULT_EXTRACT_LIMITS, pdfTimeoutMs: 1000 } });
  const { keys } = await modulesCast(app);
  // Ten MiB of content read for each of 30 page references: seconds of pdf.js work.
  const slow = makePdfBomb(10 * 1024 * 1024, 30);
  let done = false;
  const latencies: number[] = [];
  const probe = (async () => {
    while (!done) {
      const started = Date.now();
      assert.equal((await app.inject({ method: 'GET', url: '/v1/health' })).statusCode, 200);
      latencies.push(Date.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const started = Date.now();
  const res = await upload(app, keys.ownerA.key, slow, 'slow.pdf');
  done = true;
  await probe;
  assert.ok(latencies.length >= 3, `the health check ran meanwhile (${latencies.length} times)`);
  assert.ok(Math.max(...latencies) < 1000, `the health check answered promptly (at most ${Math.max(...latencies)} ms)`);
  assertCode(res, 413, 'payload_too_large');
  assert.match(res.json().detail, /longer than 1 s to read/);
  assert.ok(Date.now() - started < 5000, `refused at its deadline (${Date.now() - started} ms)`);
  assert.equal(runningPdfWorkers(), 0, 'the worker was ended');
  assert.equal(await documentCount(app), 0);
});

test('a PDF whose reader runs out of memory is 413, never a 500, and the server keeps serving', async (t) => {
  // A heap far too small for pdf.js itself: the worker dies for memory on any PDF.
  const app = await build(t, { documents: { ...DEFAULT_EXTRACT_LIMITS, pdfHeapMb: 4 } });
  const { keys } = await modulesCast(app);
  const res = await upload(app, keys.ownerA.key, await makePdf(['hello']), 'hello.pdf');
  assertCode(res, 413, 'payload_too_large');
  assert.match(res.json().detail, /more than 4 MB of memory/);
  assert.equal(runningPdfWorkers(), 0);
  assert.equal((await app.inject({ method: 'GET', url: '/v1/health' })).statusCode, 200);
  assert.equal(await documentCount(app), 0);
});

test('empty, textless and corrupt files are 422, never a 500', async (t) => {
  const app = await build(t);
  const { keys } = await modulesCast(app);
  assert.equal((await upload(app, keys.ownerA.key, Buffer.alloc(0), 'empty.txt')).statusCode, 422);
  assert.equal((await upload(app, keys.ownerA.key, Buffer.from('   \n\n  '), 'blank.txt')).statusCode, 422);
  assert.equal((await upload(app, keys.ownerA.key, Buffer.from('%PDF-1.7\n garbage garbage'), 'broken.pdf')).statusCode, 422);
  assert.equal((await upload(app, keys.ownerA.key, await makePdf(['']), 'scan.pdf')).statusCode, 422);
  const { payload, headers } = multipartBody(Buffer.from('hello'), 'a.txt', 'document');
  assert.equal((await app.inject({ method: 'POST', url: '/v1/rag/upload', payload, headers: { ...headers, ...bearer(keys.ownerA.key) } })).statusCode, 422);
  assert.equal(await documentCount(app), 0);
});

test('without a provider /rag/query answers extractively from the best passages, labelled so, and free', async (t) => {
  const app = await build(t);
  const { a, keys } = await modulesCast(app);
  const doc = (await upload(app, keys.ownerA.key, await makeDocx(['The boiler needs service every spring.', 'Invoices are paid within thirty days.', 'The garden is watered on Tuesdays.']), 'house.docx')).json();
  await upload(app, keys.ownerA.key, Buffer.from('Unrelated notes on the Roman empire and its roads.'), 'history.txt');
  const res = await call(app, keys.ownerA.key, 'POST', '/api/v1/rag/query', { query: 'When are invoices paid?' });
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json();
  assert.equal(body.engine, 'extractive');
  assert.match(body.answer, /Invoices are paid within thirty days/);
  assert.equal(body.sources[0].doc_id, doc.doc_id);
  assert.equal(body.sources[0].filename, 'house.docx');
  assert.ok(body.sources[0].score > 0);
  assert.equal(body.credits_used, 0);
  assert.equal(app.domains.billing.ledger.balance(a.companyId).available, 2000);
  // Query syntax is only words: quotes and operators cannot break the search.
  assert.equal((await call(app, keys.ownerA.key, 'POST', '/v1/rag/query', { query: 'NEAR("x" OR *) AND -invoices"' })).statusCode, 200);
});

test('/rag/query finds Chinese, Japanese and Korean text, by a word or a whole question; snippets keep the text as uploaded', async (t) => {
  const app = await build(t);
  const { keys } = await modulesCast(app);
  const japanese = '東京は日本の首都です。大阪は大きな都市です。';
  const chinese = '北京是中国的首都。上海是一个大城市。';
  const korean = '서울은 한국의 수도입니다. 부산은 항구 도시입니다.';
  const docs: Record<string, string> = {};
  for (const [text, name] of [[japanese, 'ja.txt'], [chinese, 'zh.txt'], [korean, 'ko.txt'], ['Tokyo is the capital of Japan.', 'en.txt']] as const) {
    const res = await upload(app, keys.ownerA.key, Buffer.from(text), name);
    assert.equal(res.statusCode, 201, res.body);
    docs[name] = res.json().doc_id;
  }
  for (const [query, name] of [
    ['東京', 'ja.txt'],
    ['東京は日本の首都ですか', 'ja.txt'],
    ['大阪', 'ja.txt'],
    ['北京', 'zh.txt'],
    ['中国的首都是哪里？', 'zh.txt'],
    ['서울', 'ko.txt'],
    ['한국의 수도는?', 'ko.txt'],
    ['capital of Japan', 'en.txt'],
  ] as const) {
    const body = (await call(app, keys.ownerA.key, 'POST', '/v1/rag/query', { query })).json();
    assert.equal(body.sources[0]?.doc_id, docs[name], `${query}: ${JSON.stringify(body)}`);
  }
  const ja = (await call(app, keys.ownerA.key, 'POST', '/v1/rag/query', { query: '東京' })).json();
  assert.equal(ja.sources.length, 1, 'one character of a word in common is no match');
  assert.equal(ja.sources[0].snippet, japanese);
  assert.match(ja.answer, /東京は日本の首都です。/);
  // A run in another order is not the word asked for.
  assert.deepEqual((await call(app, keys.ownerA.key, 'POST', '/v1/rag/query', { query: '京東' })).json().sources, []);
});

test('passages indexed before CJK text was segmented are reindexed by the migration, and found after the upgrade', async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-cjk-'));
  t.after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const open = () => buildApp({ env: { DATA_DIR: dataDir, SCRYPT_COST: '1024' }, logger: false });
  const first = await open();
  const { keys } = await modulesCast(first);
  const text = '東京は日本の首都です。';
  const doc = (await upload(first, keys.ownerA.key, Buffer.from(text), 'old.txt')).json();
  const latin = (await upload(first, keys.ownerA.key, Buffer.from('Invoices are paid within thirty days.'), 'terms.txt')).json();
  // As the code before the migration stored them: the text as extracted, one token per run of CJK characters.
  await sql(first, 'update document_chunks_fts set text = ? where document_id = ?', [text, doc.doc_id]);
  await sql(first, "delete from mikro_orm_migrations where name = 'Migration20261210000000CjkPassages'");
  assert.deepEqual((await call(first, keys.ownerA.key, 'POST', '/v1/rag/query', { query: '東京' })).json().sources, []);
  await first.close();
  const second = await open();
  t.after(() => second.close());
  const found = (await call(second, keys.ownerA.key, 'POST', '/v1/rag/query', { query: '東京' })).json();
  assert.equal(found.sources[0]?.doc_id, doc.doc_id, JSON.stringify(found));
  assert.equal(found.sources[0].snippet, text);
  const unchanged = await sql<{ text: string }>(second, 'select text from document_chunks_fts where document_id = ?', [latin.doc_id]);
  assert.equal(unchanged[0]!.text, 'Invoices are paid within thirty days.');
});

test('with a provider /rag/query is grounded in the passages and costs its tokens', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'Within thirty days [1].', usage: { prompt: 900, completion: 100 } }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { a, keys } = await modulesCast(app);
  await upload(app, keys.ownerA.key, Buffer.from('Invoices are paid within thirty days of receipt.'), 'terms.txt');
  const res = await call(app, keys.ownerA.key, 'POST', '/v1/rag/query', { query: 'when are invoices paid', model: 'gpt-4o' });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().engine, 'model');
  assert.equal(res.json().answer, 'Within thirty days [1].');
  assert.equal(res.json().credits_used, 5);
  assert.match(fake.seen[0]!.messages[0]!.content!, /\[1\] terms\.txt, page 1:\nInvoices are paid within thirty days/);
  assert.equal(app.domains.billing.ledger.balance(a.companyId).available, 1995);
  // No passage matches: Atrium says so itself, labelled extractive, and the model is not called.
  const none = await call(app, keys.ownerA.key, 'POST', '/v1/rag/query', { query: 'zebra migration' });
  assert.equal(none.statusCode, 200, none.body);
  assert.deepEqual([none.json().engine, none.json().sources, none.json().credits_used], ['extractive', [], 0]);
  assert.equal(fake.seen.length, 1);
});

test('a text file saved as Windows-1252 is read as such, its euro signs and accents intact', async (t) => {
  const app = await build(t);
  const { keys } = await modulesCast(app);
  const bytes = Buffer.concat([Buffer.from('The menu of the caf', 'latin1'), Buffer.from([0xe9]), Buffer.from(' costs ', 'latin1'), Buffer.from([0x80]), Buffer.from('5 ', 'latin1'), Buffer.from([0x96]), Buffer.from(' lunch included.', 'latin1')]);
  const res = await upload(app, keys.ownerA.key, bytes, 'menu.txt');
  assert.equal(res.statusCode, 201, res.body);
  const query = await call(app, keys.ownerA.key, 'POST', '/v1/rag/query', { query: 'menu lunch' });
  assert.equal(query.statusCode, 200, query.body);
  assert.match(query.json().sources[0].snippet, /café costs €5 – lunch included/);
});

test("documents never cross users or companies: lists, queries, doc_ids and deletes", async (t) => {
  const app = await build(t);
  const { keys, tokens } = await modulesCast(app);
  const mine = (await upload(app, keys.ownerA.key, Buffer.from('The secret launch date is in March.'), 'plan.txt')).json();
  for (const other of [keys.memberA.key, keys.ownerB.key]) {
    assert.deepEqual((await call(app, other, 'GET', '/v1/rag/docs')).json().documents, []);
    const q = await call(app, other, 'POST', '/v1/rag/query', { query: 'secret launch date' });
    assert.deepEqual(q.json().sources, []);
    assertCode(await call(app, other, 'POST', '/v1/rag/query', { query: 'launch', doc_ids: [mine.doc_id] }), 404, 'not_found');
    assertCode(await call(app, other, 'DELETE', `/v1/rag/docs/${mine.doc_id}`), 404, 'not_found');
  }
  // The owner signed in sees it over GraphQL; the member does not.
  const own = await gql(app, tokens.ownerA, '{ documentList { docId filename } }');
  assert.deepEqual(own.data!.documentList, [{ docId: mine.doc_id, filename: 'plan.txt' }]);
  assert.deepEqual((await gql(app, tokens.memberA, '{ documentList { docId } }')).data!.documentList, []);
  assert.equal((await call(app, keys.ownerA.key, 'DELETE', `/v1/rag/docs/${mine.doc_id}`)).statusCode, 204);
  assert.equal(await documentCount(app), 0, 'the passages went with the document');
  const ragless = await moduleKey(app, tokens.ownerA, ['chat']);
  assertCode(await upload(app, ragless.key, Buffer.from('x y z'), 'a.txt'), 403, 'insufficient_scope');
});

test('passages cut at boundaries with overlap, numbered across the document, none empty', () => {
  const text = Array.from({ length: 60 }, (_, i) => `Sentence number ${i} talks about topic ${i % 7}.`).join(' ');
  const chunks = chunkSections([{ page: 1, text }, { page: 2, text: 'x'.repeat(2500) }, { page: 3, text: '   ' }]);
  assert.deepEqual(chunks.map((c) => c.ordinal), chunks.map((_, i) => i));
  assert.ok(chunks.every((c) => c.text.trim() && c.text.length <= 1000));
  const first = chunks.filter((c) => c.page === 1);
  assert.ok(first.length >= 2);
  assert.ok(first[0]!.text.endsWith('.'), 'cut at a sentence');
  const tail = first[0]!.text.slice(-60);
  assert.ok(first[1]!.text.includes(tail.slice(tail.indexOf(' ') + 1, tail.indexOf(' ') + 20)), 'the next passage overlaps');
  assert.equal(chunks.filter((c) => c.page === 2).length, 3, 'text without spaces is still cut');
});

test("a deleted user's documents, passages, chat history and keys go with the user", async (t) => {
  const fake = await fakeOpenAi(t);
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys, memberA } = await modulesCast(app);
  await upload(app, keys.memberA.key, Buffer.from('Private notes of the member.'), 'mine.txt');
  await call(app, keys.memberA.key, 'POST', '/v1/chat', { message: 'remember this', agent: 'general', session_id: 'x' });
  await upload(app, keys.ownerA.key, Buffer.from('The owner keeps this.'), 'owner.txt');
  await sql(app, 'delete from users where id = ?', [memberA.userId]);
  const left = async (table: string) => (await sql<{ n: number }>(app, `select count(*) as n from ${table}`))[0]!.n;
  assert.equal(await left('documents'), 1);
  assert.equal(await left('document_chunks_fts'), 1);
  assert.equal(await left('chat_sessions'), 0);
  assert.equal(await left('chat_messages'), 0);
  assert.equal((await sql(app, 'select id from api_keys where user_id = ?', [memberA.userId])).length, 0);
});

test('a file of one to three bytes is read like any other, and a second file in the form is 422, not dropped', async (t) => {
  const app = await build(t);
  const { keys } = await modulesCast(app);
  for (const content of ['a', 'hi', '\ufeff']) {
    const res = await upload(app, keys.ownerA.key, Buffer.from(content), 'note.txt');
    assert.ok(res.statusCode === 201 || res.statusCode === 422, `${JSON.stringify(content)}: ${res.statusCode} ${res.body}`);
  }
  const form = multipartForm({}, [
    { content: Buffer.from('first document text'), filename: 'one.txt' },
    { content: Buffer.from('second document text'), filename: 'two.txt' },
  ]);
  const two = await app.inject({ method: 'POST', url: '/v1/rag/upload', payload: form.payload, headers: { ...form.headers, authorization: `Bearer ${keys.ownerA.key}` } });
  assertCode(two, 422, 'validation_error');
  assert.equal(two.json().errors[0].loc.join('.'), 'body.file');
});

test('a long file name is cut between characters, never inside a surrogate pair: what the upload answers is what is stored and listed', async (t) => {
  const app = await build(t);
  const { keys } = await modulesCast(app);
  // 254 letters, then an emoji (two UTF-16 units) that the 255-unit limit would split.
  const filename = `${'a'.repeat(254)}\u{1F600}.csv`;
  const res = await upload(app, keys.ownerA.key, makeCsv([['name'], ['Ada']]), filename);
  assert.equal(res.statusCode, 201, res.body);
  const answered = res.json().filename as string;
  assert.equal(answered, 'a'.repeat(254));
  assert.ok(answered.isWellFormed());
  const [stored] = await sql<{ filename: string }>(app, 'select filename from documents where id = ?', [res.json().doc_id]);
  assert.equal(stored!.filename, answered);
  const listed = (await call(app, keys.ownerA.key, 'GET', '/v1/rag/docs')).json();
  assert.equal(JSON.stringify(listed).includes('\ufffd'), false, 'no replacement characters');
});
