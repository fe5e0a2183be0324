import type http from 'node:http';
import { pipeline, type Readable } from 'node:stream';
import { TextDecoder } from 'node:util';
import zlib from 'node:zlib';
import { Worker } from 'node:worker_threads';
import path from 'node:path';
import { openPinnedRequest, resolveGuarded, SsrfBlockedError, type Resolver } from './ssrf-guard';
import { clipText } from '../clip-text';

/**
 * Fetches one web page (a URL from search results, or one a user gave) and
 * keeps its readable text, through the SSRF guard:
 *
 * - every hop, the first URL and each redirect's Location, is decided by
 *   `resolveGuarded` and connected to the checked address only, so a redirect
 *   or a DNS answer cannot lead into the private network or to cloud metadata;
 * - http and https are accepted (`allowHttp`); loopback only with the
 *   test-only `allowLoopback`;
 * - the body is bounded after decompression (a gzip bomb stops at `maxBytes`),
 *   the whole fetch by `timeoutMs` and the caller's `signal`;
 * - HTML becomes text with Readability (boilerplate dropped), falling back to
 *   the body's text when it finds no article, in a worker thread (page-text.ts).
 */

export interface PageFetchOptions {
  /** Test-only: loopback addresses may be fetched (SSRF_ALLOW_LOOPBACK). */
  allowLoopback?: boolean;
  /** The whole fetch, redirects included; default 10000. */
  timeoutMs?: number;
  /** Largest body after decompression; default 2 MiB. */
  maxBytes?: number;
  /** Redirects followed before the fetch fails; default 3. */
  maxRedirects?: number;
  /** Characters of text kept; default 20000. */
  maxChars?: number;
  /** DNS, injectable for tests. */
  resolve?: Resolver;
  /** Aborting it stops the fetch and closes the connection. */
  signal?: AbortSignal;
  userAgent?: string;
}

export interface FetchedPage {
  /** The final URL, after redirects. */
  url: string;
  status: number;
  title: string;
  text: string;
  byline?: string | null;
}

export type PageFetchFailure = 'blocked' | 'timeout' | 'too_large' | 'http_status' | 'unsupported_type' | 'network' | 'empty';

export class PageFetchError extends Error {
  constructor(
    readonly reason: PageFetchFailure,
    message: string,
  ) {
    super(message);
    this.name = 'PageFetchError';
  }
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const ACCEPT = 'text/html,application/xhtml+xml,text/plain;q=0.8';
const DEFAULT_USER_AGENT = 'Atrium/0.1 (research page fetch)';

export async function fetchPage(url: string, options: PageFetchOptions = {}): Promise<FetchedPage> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const maxChars = options.maxChars ?? 20_000;
  // One signal bounds every step; its reason is the error the fetch fails with.
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(new PageFetchError('timeout', `no complete answer within ${timeoutMs} ms`)), timeoutMs);
  const onCallerAbort = () => stop.abort(new PageFetchError('network', 'the fetch was aborted by its caller'));
  if (options.signal?.aborted) onCallerAbort();
  else options.signal?.addEventListener('abort', onCallerAbort, { once: true });
  try {
    const raw = await download(url, options, stop.signal);
    return await toPage(raw, maxChars, stop.signal);
  } catch (error) {
    if (stop.signal.aborted) throw stop.signal.reason;
    if (error instanceof PageFetchError) throw error;
    if (error instanceof SsrfBlockedError) throw new PageFetchError('blocked', error.message);
    const { code, message } = error as NodeJS.ErrnoException;
    throw new PageFetchError('network', `the page could not be fetched: ${code && !message.includes(code) ? `${code} ` : ''}${message}`);
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onCallerAbort);
  }
}

interface RawPage {
  url: URL;
  status: number;
  kind: 'html' | 'text' | 'unknown';
  charset: string | null;
  body: Buffer;
}

/** Follows redirects hop by hop, each through the guard, and reads the final body. */
async function download(start: string, options: PageFetchOptions, signal: AbortSignal): Promise<RawPage> {
  const maxBytes = options.maxBytes ?? 2 * 1024 * 1024;
  const maxRedirects = options.maxRedirects ?? 3;
  const headers = { accept: ACCEPT, 'accept-encoding': 'gzip, deflate, br', 'user-agent': options.userAgent ?? DEFAULT_USER_AGENT };
  let active: http.ClientRequest | undefined;
  // Aborting destroys the open request, which ends its socket and its response.
  const onAbort = () => active?.destroy(signal.reason as Error);
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    let current: string = start;
    for (let redirects = 0; ; redirects++) {
      const target = await untilAborted(
        resolveGuarded(current, { allowHttp: true, allowLoopback: options.allowLoopback, resolve: options.resolve }),
        signal,
      );
      if (signal.aborted) throw signal.reason;
      const request = openPinnedRequest(target, { method: 'GET', headers });
      active = request;
      const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
        request.on('response', resolve);
        request.on('error', reject);
        request.end();
      });
      // Errors after this surface through the body reader; none may go unhandled once the fetch is over.
      response.on('error', () => {});
      const status = response.statusCode ?? 0;
      if (REDIRECT_STATUSES.has(status)) {
        const location = response.headers.location;
        if (!location) throw new PageFetchError('http_status', `${target.url.host} answered HTTP ${status} without a Location`);
        if (redirects >= maxRedirects) throw new PageFetchError('http_status', `more than ${maxRedirects} redirects`);
        try {
          current = new URL(location, target.url).href;
        } catch {
          throw new PageFetchError('http_status', `${target.url.host} redirected to an invalid URL`);
        }
        request.destroy(); // the redirect's body is not read
        continue;
      }
      if (status < 200 || status > 299) throw new PageFetchError('http_status', `${target.url.host} answered HTTP ${status}`);
      const { kind, charset } = contentType(response.headers['content-type']);
      const length = Number(response.headers['content-length']);
      if (Number.isFinite(length) && length > maxBytes) {
        throw new PageFetchError('too_large', `the page is ${length} bytes, over the limit of ${maxBytes}`);
      }
      const body = await readBody(response, maxBytes);
      return { url: target.url, status, kind, charset, body };
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    // agent: false, so this closes the socket; harmless once the body was read.
    active?.destroy();
  }
}

/** Resolver calls cannot be cancelled; the fetch stops waiting for them instead. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

function contentType(header: string | undefined): { kind: RawPage['kind']; charset: string | null } {
  const [type = '', ...params] = (header ?? '').split(';');
  const mediaType = type.trim().toLowerCase();
  const charsetParam = params.map((p) => /^\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(p)).find(Boolean);
  const charset = charsetParam?.[1] ?? null;
  if (mediaType === 'text/html' || mediaType === 'application/xhtml+xml') return { kind: 'html', charset };
  if (mediaType === 'text/plain') return { kind: 'text', charset };
  if (mediaType === '') return { kind: 'unknown', charset };
  throw new PageFetchError('unsupported_type', `${mediaType} is not a web page`);
}

/** A decompressor for one content-coding (zlib streams, so output is produced only as it is read). */
function decoderFor(coding: string): zlib.Gunzip | zlib.Unzip | zlib.BrotliDecompress {
  if (coding === 'gzip' || coding === 'x-gzip') return zlib.createGunzip();
  // HTTP's deflate is zlib-wrapped; Unzip also takes a mislabelled gzip body.
  if (coding === 'deflate') return zlib.createUnzip();
  if (coding === 'br') return zlib.createBrotliDecompress();
  throw new PageFetchError('unsupported_type', `unsupported content-encoding ${coding}`);
}

/** The decoded body, failing as soon as more than `maxBytes` have been decoded. */
async function readBody(response: http.IncomingMessage, maxBytes: number): Promise<Buffer> {
  const codings = (response.headers['content-encoding'] ?? '')
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c && c !== 'identity');
  if (codings.length > 2) throw new PageFetchError('unsupported_type', `too many content-encodings (${codings.join(', ')})`);
  let source: Readable = response;
  // Codings are listed in the order they were applied: undo the last first.
  for (const coding of codings.reverse()) {
    // pipeline destroys every stream on an error; the loop below sees it on the last one.
    source = pipeline(source, decoderFor(coding), () => {});
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of source as AsyncIterable<Buffer>) {
    size += chunk.length;
    // Leaving the loop destroys the streams: nothing more is read or inflated.
    if (size > maxBytes) throw new PageFetchError('too_large', `the page is over the limit of ${maxBytes} bytes (decoded)`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

async function toPage(raw: RawPage, maxChars: number, signal: AbortSignal): Promise<FetchedPage> {
  let kind = raw.kind;
  if (kind === 'unknown') {
    // No content-type: markup is HTML, anything without NUL bytes is text, the rest is refused.
    const head = raw.body.subarray(0, 1024);
    if (head.toString('latin1').replace(/^\xEF\xBB\xBF/, '').trimStart().startsWith('<')) kind = 'html';
    else if (!head.includes(0)) kind = 'text';
    else throw new PageFetchError('unsupported_type', 'the page has no content-type and is not text');
  }
  const source = decode(raw.body, raw.charset, kind === 'html');
  const page =
    kind === 'html'
      ? await htmlTextInWorker(source, signal)
      : { title: `${raw.url.hostname}${raw.url.pathname}`, text: source, byline: null };
  const text = clipText(page.text, maxChars);
  if (!text.trim()) throw new PageFetchError('empty', `${raw.url.href} has no readable text`);
  return { url: raw.url.href, status: raw.status, title: page.title, text, byline: page.byline };
}

/** A byte-order mark, else the header's charset, else a <meta> one in the first KiB; unknown labels read as utf-8. */
function decode(body: Buffer, headerCharset: string | null, html: boolean): string {
  let label = bomCharset(body) ?? headerCharset;
  if (!label && html) {
    label = /<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)/i.exec(body.subarray(0, 1024).toString('latin1'))?.[1] ?? null;
    // A page that could declare its charset in ASCII markup is not UTF-16 (as browsers decide).
    if (label && /^utf-?16/i.test(label)) label = 'utf-8';
  }
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(label ?? 'utf-8');
  } catch {
    decoder = new TextDecoder('utf-8');
  }
  return decoder.decode(body);
}

function bomCharset(body: Buffer): string | null {
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return 'utf-8';
  if (body[0] === 0xfe && body[1] === 0xff) return 'utf-16be';
  if (body[0] === 0xff && body[1] === 0xfe) return 'utf-16le';
  return null;
}

const WORKER = path.join(__dirname, 'page-text.worker.js');

/**
 * The page's text from a worker thread started for it: parsing and
 * Readability are CPU-bound (about half a second a MiB on a heavy page), so
 * they run off the event loop, with a heap cap, and the fetch's time limit
 * or its caller's abort terminates them.
 */
function htmlTextInWorker(html: string, signal: AbortSignal): Promise<{ title: string; text: string; byline: string | null }> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER, { workerData: { html }, resourceLimits: { maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: 32 } });
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      void worker.terminate();
      fn();
    };
    const onAbort = () => finish(() => reject(signal.reason));
    signal.addEventListener('abort', onAbort, { once: true });
    worker.once('message', (m: { page?: { title: string; text: string; byline: string | null }; refused?: string; failed?: string }) =>
      finish(() => {
        if (m.page) resolve(m.page);
        else if (m.refused) reject(new PageFetchError('unsupported_type', m.refused));
        else reject(new PageFetchError('empty', `the page could not be read: ${m.failed}`));
      }),
    );
    worker.once('error', (error) => finish(() => reject(new PageFetchError('too_large', `the page was too heavy to read: ${error.message}`))));
    worker.once('exit', () => finish(() => reject(new PageFetchError('empty', 'the page could not be read'))));
  });
}

