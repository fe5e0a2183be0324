import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { fetchPage, PageFetchError, type PageFetchFailure } from '../src/net/page-fetch';
import type { Resolver } from '../src/net/ssrf-guard';

// Only loopback traffic in this file: every "refused" case asserts the guard's
// decision, and host names resolve through an injected resolver.

const PARAGRAPH_1 =
  'The northern rivers freeze from the banks inward, and by midwinter the ice is thick enough to carry a loaded sledge. ' +
  'Villagers cut channels to keep the mills turning, and the sound of the saws carries for miles across the valley.';
const PARAGRAPH_2 =
  'When the thaw comes in April the channels close again within days. Old records kept by the mill owners show the same ' +
  'pattern for two hundred years, with the ice breaking a little earlier in each recent decade.';

const ARTICLE = `<!doctype html>
<html><head><title>Rivers of the North</title><meta name="author" content="Ada Lovelace"></head>
<body>
  <header><nav><a href="/">Home</a> <a href="/about">About us</a> <a href="/subscribe">Subscribe now</a></nav></header>
  <main><article>
    <h1>Rivers of the North</h1>
    <p>${PARAGRAPH_1}</p>
    <p>${PARAGRAPH_2}</p>
  </article></main>
  <script>window.tracker = "do-not-keep";</script>
  <footer><p>Copyright 2024 Example News. All rights reserved.</p></footer>
</body></html>`;

const requests: { url: string; host: string | undefined }[] = [];
let connections = 0;
const openSockets = new Set<import('node:net').Socket>();
/** The /slow requests (by their query) whose connection the server saw close. */
const closedSlow = new Set<string>();
let server: http.Server;
let port: number;
let bomb: Buffer;

const resolve: Resolver = async (hostname) => {
  const answers: Record<string, string> = { 'news.example.com': '127.0.0.1', 'internal.example.com': '10.0.0.1' };
  const address = answers[hostname];
  if (!address) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return [{ address, family: 4 }];
};

function route(req: http.IncomingMessage, res: http.ServerResponse) {
  const path = new URL(req.url ?? '/', 'http://localhost').pathname;
  const html = (body: string | Buffer, contentType = 'text/html; charset=utf-8') => {
    res.writeHead(200, { 'content-type': contentType });
    res.end(body);
  };
  const redirect = (status: number, location: string) => {
    res.writeHead(status, { location });
    res.end();
  };
  const loop = /^\/loop\/(\d+)$/.exec(path);
  if (loop) return redirect(302, `/loop/${Number(loop[1]) + 1}`);
  switch (path) {
    case '/article':
      return html(ARTICLE);
    case '/r1':
      return redirect(302, '/r2');
    case '/r2':
      return redirect(301, 'r3');
    case '/r3':
      return redirect(307, `http://news.example.com:${port}/article`);
    case '/to-internal':
      return redirect(302, `http://internal.example.com:${port}/article`);
    case '/to-metadata':
      return redirect(302, 'http://169.254.169.254/latest/meta-data/');
    case '/to-file':
      return redirect(302, 'file:///etc/passwd');
    case '/bomb':
      res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip', 'content-length': String(bomb.length) });
      return res.end(bomb);
    case '/huge':
      // Announces 10 MB, sends 1 KB and waits: the client must refuse on the header alone.
      res.writeHead(200, { 'content-type': 'text/html', 'content-length': '10000000' });
      return res.write('x'.repeat(1024));
    case '/chunked-large':
      res.writeHead(200, { 'content-type': 'text/plain' });
      return res.end('y'.repeat(64 * 1024));
    case '/slow':
      req.socket.on('close', () => closedSlow.add(req.url!));
      return; // never answers
    case '/stalled-body':
      // Headers and the start of the page, then nothing.
      res.writeHead(200, { 'content-type': 'text/html' });
      return res.write('<html><body><p>The beginning');
    case '/many-elements':
      return html(`<html><head><title>Index</title></head><body>${'<span>word</span> '.repeat(30_000)}</body></html>`);
    case '/deep':
      return html(`<html><body>${'<div>'.repeat(50_000)}deep</body></html>`);
    case '/deep-but-closed':
      // Deep only in a script's text and in sibling runs that close again: parsed normally.
      return html(`<html><head><title>Nested</title><script>var s = "${'<div>'.repeat(5000)}";</script></head><body>${'<div><span>x</span></div>'.repeat(3000)}<p>Readable end.</p></body></html>`);
    case '/pdf':
      res.writeHead(200, { 'content-type': 'application/pdf' });
      return res.end('%PDF-1.7');
    case '/missing':
      res.writeHead(404, { 'content-type': 'text/html' });
      return res.end('<html><body><p>Not found</p></body></html>');
    case '/latin1':
      return html(Buffer.from('<html><head><title>Menu</title></head><body><p>Un café, s\'il vous plaît.</p></body></html>', 'latin1'), 'text/html; charset=iso-8859-1');
    case '/meta-charset':
      return html(Buffer.from('<html><head><meta charset="windows-1252"><title>Carte</title></head><body><p>Crème brûlée au café.</p></body></html>', 'latin1'), 'text/html');
    case '/unknown-label':
      return html('<html><body><p>naïve text</p></body></html>', 'text/html; charset=no-such-charset');
    case '/no-type':
      res.writeHead(200);
      return res.end('<html><head><title>Sniffed</title></head><body><p>Markup without a content-type.</p></body></html>');
    case '/plain':
      return html('First line.\nSecond line.\n', 'text/plain; charset=utf-8');
    case '/little':
      return html('<html><head><title>Note</title></head><body><script>var secret = 1;</script><style>p{}</style><noscript>Enable JS</noscript><div>A short note.</div><div>Another line.</div></body></html>');
    case '/scripts-only':
      return html('<html><head><title>App</title></head><body><script>render()</script></body></html>');
    case '/gzip':
    case '/deflate':
    case '/br': {
      const encoded = path === '/gzip' ? zlib.gzipSync(ARTICLE) : path === '/deflate' ? zlib.deflateSync(ARTICLE) : zlib.brotliCompressSync(ARTICLE);
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-encoding': path.slice(1) });
      return res.end(encoded);
    }
    default:
      res.writeHead(500);
      return res.end();
  }
}

before(async () => {
  bomb = zlib.gzipSync(Buffer.alloc(50 * 1024 * 1024));
  server = http.createServer((req, res) => {
    requests.push({ url: req.url!, host: req.headers.host });
    route(req, res);
  });
  server.on('connection', (socket) => {
    connections += 1;
    openSockets.add(socket);
    socket.on('close', () => openSockets.delete(socket));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  port = (server.address() as AddressInfo).port;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((done) => server.close(done));
});

const local = (path: string) => `http://127.0.0.1:${port}${path}`;
const named = (path: string) => `http://news.example.com:${port}${path}`;

/** Asserts that `promise` fails with a PageFetchError of `reason`, and returns it. */
async function fails(promise: Promise<unknown>, reason: PageFetchFailure, message?: RegExp): Promise<PageFetchError> {
  let caught: unknown;
  await assert.rejects(promise, (error: unknown) => {
    caught = error;
    return true;
  });
  assert.ok(caught instanceof PageFetchError, `a PageFetchError, got ${String(caught)}`);
  assert.equal(caught.reason, reason, caught.message);
  if (message) assert.match(caught.message, message);
  return caught;
}

test('an article page becomes its readable text and title: navigation, footer and scripts are dropped, paragraphs stay apart', async () => {
  requests.length = 0;
  const page = await fetchPage(named('/article'), { allowLoopback: true, resolve });
  assert.equal(page.url, named('/article'));
  assert.equal(page.status, 200);
  assert.equal(page.title, 'Rivers of the North');
  assert.equal(page.byline, 'Ada Lovelace');
  assert.ok(page.text.includes(`${PARAGRAPH_1}\n${PARAGRAPH_2}`), page.text);
  for (const boilerplate of ['Subscribe now', 'About us', 'Copyright', 'do-not-keep']) assert.ok(!page.text.includes(boilerplate), boilerplate);
  assert.doesNotMatch(page.text, /[ \t]{2,}|\n\n/);
  // Connected to the resolved address, with the name kept in the Host header.
  assert.deepEqual(requests, [{ url: '/article', host: `news.example.com:${port}` }]);
});

test('maxChars bounds the text kept', async () => {
  const page = await fetchPage(local('/article'), { allowLoopback: true, maxChars: 50 });
  assert.equal(page.text, PARAGRAPH_1.slice(0, 50));
});

test('a redirect chain (302, relative 301, 307 to another host name) is followed and the final URL reported', async () => {
  requests.length = 0;
  const page = await fetchPage(local('/r1'), { allowLoopback: true, resolve });
  assert.equal(page.url, named('/article'));
  assert.equal(page.title, 'Rivers of the North');
  assert.deepEqual(requests.map((r) => r.url), ['/r1', '/r2', '/r3', '/article']);
});

test('a redirect to a name resolving to a private address, to cloud metadata or to file:// is refused, even with allowLoopback', async () => {
  for (const [path, why] of [
    ['/to-internal', /internal\.example\.com resolves to 10\.0\.0\.1, a private address/],
    ['/to-metadata', /169\.254\.169\.254 is a link_local address/],
    ['/to-file', /file scheme is not allowed/],
  ] as const) {
    requests.length = 0;
    await fails(fetchPage(local(path), { allowLoopback: true, resolve }), 'blocked', why);
    assert.deepEqual(requests.map((r) => r.url), [path], 'only the first hop reached a server');
  }
});

test('without allowLoopback a loopback page is refused before anything connects', async () => {
  await new Promise((done) => setTimeout(done, 20)); // connections of earlier tests settle
  requests.length = 0;
  const before = connections;
  for (const url of [local('/article'), `http://[::1]:${port}/article`, `http://2130706433:${port}/article`, `https://127.0.0.1:${port}/article`]) {
    await fails(fetchPage(url), 'blocked', /loopback/);
  }
  await fails(fetchPage(named('/article'), { resolve }), 'blocked', /resolves to 127\.0\.0\.1, a loopback address/);
  await new Promise((done) => setTimeout(done, 50));
  assert.equal(connections, before, 'no connection was made');
  assert.deepEqual(requests, []);
});

test('file:// and ftp:// URLs are refused', async () => {
  await fails(fetchPage('file:///etc/passwd', { allowLoopback: true }), 'blocked', /file scheme/);
  await fails(fetchPage('ftp://example.com/pub/file.txt', { allowLoopback: true }), 'blocked', /ftp scheme/);
  await fails(fetchPage('not a url'), 'blocked', /not a valid URL/);
});

test('a refused connection fails network', async () => {
  const closed = http.createServer();
  await new Promise<void>((done) => closed.listen(0, '127.0.0.1', done));
  const closedPort = (closed.address() as AddressInfo).port;
  await new Promise((done) => closed.close(done));
  await fails(fetchPage(`http://127.0.0.1:${closedPort}/`, { allowLoopback: true }), 'network', /ECONNREFUSED/);
});

test('more redirects than maxRedirects fail the fetch', async () => {
  requests.length = 0;
  await fails(fetchPage(local('/loop/0'), { allowLoopback: true, maxRedirects: 3 }), 'http_status', /more than 3 redirects/);
  assert.deepEqual(requests.map((r) => r.url), ['/loop/0', '/loop/1', '/loop/2', '/loop/3']);
});

test('a gzip bomb fails too_large as soon as the decoded size passes maxBytes, without inflating it all', async () => {
  assert.ok(bomb.length < 100 * 1024, 'the bomb is small on the wire');
  const started = Date.now();
  const memoryBefore = process.memoryUsage().arrayBuffers;
  await fails(fetchPage(local('/bomb'), { allowLoopback: true }), 'too_large', /over the limit of 2097152 bytes \(decoded\)/);
  assert.ok(Date.now() - started < 2000, `failed after ${Date.now() - started} ms`);
  assert.ok(process.memoryUsage().arrayBuffers - memoryBefore < 40 * 1024 * 1024, 'the 50 MB were never held');
});

test('a content-length over maxBytes fails too_large on the header, before the body arrives', async () => {
  const started = Date.now();
  await fails(fetchPage(local('/huge'), { allowLoopback: true }), 'too_large', /10000000 bytes, over the limit/);
  assert.ok(Date.now() - started < 2000);
  // Without a content-length the counted body is the limit.
  await fails(fetchPage(local('/chunked-large'), { allowLoopback: true, maxBytes: 16 * 1024 }), 'too_large');
});

test('a server that does not answer, a stalled body and a hanging DNS lookup fail timeout within timeoutMs', async () => {
  const started = Date.now();
  await fails(fetchPage(local('/slow?timeout'), { allowLoopback: true, timeoutMs: 300 }), 'timeout', /no complete answer within 300 ms/);
  const elapsed = Date.now() - started;
  assert.ok(elapsed >= 250 && elapsed < 2000, `failed after ${elapsed} ms`);
  await new Promise((done) => setTimeout(done, 50));
  assert.ok(closedSlow.has('/slow?timeout'), 'the server saw the connection close');
  // The limit covers the body and DNS as well.
  await fails(fetchPage(local('/stalled-body'), { allowLoopback: true, timeoutMs: 300 }), 'timeout');
  const hanging: Resolver = () => new Promise(() => {});
  await fails(fetchPage(named('/article'), { allowLoopback: true, timeoutMs: 200, resolve: hanging }), 'timeout');
});

test("aborting the caller's signal stops the fetch and closes its connection", async () => {
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 100);
  const started = Date.now();
  await fails(fetchPage(local('/slow?abort'), { allowLoopback: true, signal: controller.signal }), 'network', /aborted by its caller/);
  assert.ok(Date.now() - started < 2000);
  await new Promise((done) => setTimeout(done, 50));
  assert.ok(closedSlow.has('/slow?abort'), 'the server saw the connection close');
  // An already aborted signal sends nothing.
  requests.length = 0;
  await fails(fetchPage(local('/article'), { allowLoopback: true, signal: AbortSignal.abort() }), 'network', /aborted/);
  assert.deepEqual(requests, []);
});

test('content types other than HTML and plain text fail unsupported_type', async () => {
  await fails(fetchPage(local('/pdf'), { allowLoopback: true }), 'unsupported_type', /application\/pdf/);
});

test('a non-2xx answer fails http_status', async () => {
  await fails(fetchPage(local('/missing'), { allowLoopback: true }), 'http_status', /HTTP 404/);
});

test('charsets: iso-8859-1 from the header, windows-1252 from <meta>, unknown labels read as utf-8', async () => {
  const latin1 = await fetchPage(local('/latin1'), { allowLoopback: true });
  assert.equal(latin1.text, "Un café, s'il vous plaît.");
  const meta = await fetchPage(local('/meta-charset'), { allowLoopback: true });
  assert.equal(meta.text, 'Crème brûlée au café.');
  assert.equal(meta.title, 'Carte');
  const unknown = await fetchPage(local('/unknown-label'), { allowLoopback: true });
  assert.equal(unknown.text, 'naïve text');
});

test('gzip, deflate and br bodies are decoded', async () => {
  for (const path of ['/gzip', '/deflate', '/br']) {
    const page = await fetchPage(local(path), { allowLoopback: true });
    assert.ok(page.text.includes(PARAGRAPH_2), path);
  }
});

test('little article text falls back to the body text without scripts, styles and noscript; a page with no text fails empty', async () => {
  const little = await fetchPage(local('/little'), { allowLoopback: true });
  assert.equal(little.text, 'A short note.\nAnother line.');
  assert.equal(little.title, 'Note');
  await fails(fetchPage(local('/scripts-only'), { allowLoopback: true }), 'empty');
});

test('a page with more elements than Readability is given still yields its body text, truncated to maxChars', async () => {
  const started = Date.now();
  const page = await fetchPage(local('/many-elements'), { allowLoopback: true });
  assert.equal(page.title, 'Index');
  assert.equal(page.text.length, 20_000);
  assert.match(page.text, /^word word word/);
  assert.ok(Date.now() - started < 3000, `took ${Date.now() - started} ms`);
});

test('markup nested deeper than the parser handles in linear time is refused quickly; deep-looking script text is not', async () => {
  const started = Date.now();
  await fails(fetchPage(local('/deep'), { allowLoopback: true }), 'unsupported_type', /nests more than 1000 elements deep/);
  assert.ok(Date.now() - started < 1000, `took ${Date.now() - started} ms`);
  const page = await fetchPage(local('/deep-but-closed'), { allowLoopback: true });
  assert.match(page.text, /Readable end\.$/);
});

test('plain text is kept as it is, titled by host and path; a page without content-type is sniffed', async () => {
  const plain = await fetchPage(local('/plain'), { allowLoopback: true });
  assert.equal(plain.text, 'First line.\nSecond line.\n');
  assert.equal(plain.title, '127.0.0.1/plain');
  const sniffed = await fetchPage(local('/no-type'), { allowLoopback: true });
  assert.equal(sniffed.title, 'Sniffed');
  assert.equal(sniffed.text, 'Markup without a content-type.');
});

test('no socket stays open after the fetches', async () => {
  await new Promise((done) => setTimeout(done, 100));
  // /huge and /slow are held by the server side only until the client closes them.
  assert.equal(openSockets.size, 0, `${openSockets.size} sockets still open`);
});
