import type http from 'node:http';
import { pipeline, type Readable } from 'node:stream';
import { TextDecoder } from 'node:util';
import zlib from 'node:zlib';
import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import { openPinnedRequest, resolveGuarded, SsrfBlockedError, type Resolver } from './ssrf-guard';

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
 *   the body's text when it finds no article.
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
/** Below this much article text, Readability is taken to have missed the page. */
const MIN_ARTICLE_CHARS = 200;
/**
 * Readability runs synchronously at ~30 µs per element on linkedom (a 2 MiB
 * page of 90,000 elements blocks the event loop for ~2.5 s); larger pages get
 * the plain body text. Its own maxElemsToParse cannot be used: it counts with
 * getElementsByTagName('*'), which linkedom answers with nothing.
 */
const MAX_READABILITY_ELEMENTS = 20_000;
/**
 * linkedom's parser does work proportional to the open-element depth for each
 * tag: 40,000 unclosed <div>s take ~1.3 s and 2 MiB of them minutes, blocking
 * the event loop. Pages nested deeper than this are refused (browsers stop
 * nesting at 512 themselves).
 */
const MAX_NESTING = 1_000;

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
    return toPage(raw, maxChars);
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

function toPage(raw: RawPage, maxChars: number): FetchedPage {
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
      ? htmlText(source)
      : { title: `${raw.url.hostname}${raw.url.pathname}`, text: source, byline: null };
  const text = truncate(page.text, maxChars);
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

/** The DOM surface the text walk needs (linkedom's nodes). */
interface DomNode {
  nodeType: number;
  nodeName: string;
  nodeValue: string | null;
  firstChild: DomNode | null;
  nextSibling: DomNode | null;
}

const SKIPPED = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'IFRAME', 'OBJECT', 'SVG', 'CANVAS']);
const BLOCKS = new Set([
  'ADDRESS', 'ARTICLE', 'ASIDE', 'BLOCKQUOTE', 'BR', 'CAPTION', 'DD', 'DETAILS', 'DIV', 'DL', 'DT', 'FIELDSET', 'FIGCAPTION',
  'FIGURE', 'FOOTER', 'FORM', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'HEADER', 'HR', 'LI', 'MAIN', 'NAV', 'OL', 'P', 'PRE',
  'SECTION', 'SUMMARY', 'TABLE', 'TR', 'UL',
]);

/**
 * Text of a subtree with a line break around every block, so paragraphs stay
 * apart. Iterative (deeply nested markup cannot overflow the stack) and by
 * firstChild/nextSibling: linkedom builds `childNodes` anew on every access,
 * which is quadratic on wide elements.
 */
function blockText(root: DomNode): string {
  const parts: string[] = [];
  // Nodes still to visit, and the line breaks that close blocks, in reverse order.
  const stack: (DomNode | string)[] = [root];
  while (stack.length) {
    const item = stack.pop()!;
    if (typeof item === 'string') {
      parts.push(item);
      continue;
    }
    if (item.nodeType === 3) {
      parts.push(item.nodeValue ?? '');
      continue;
    }
    if (item.nodeType !== 1 && item.nodeType !== 9 && item.nodeType !== 11) continue;
    const name = item.nodeName.toUpperCase();
    if (SKIPPED.has(name)) continue;
    if (BLOCKS.has(name)) {
      parts.push('\n');
      stack.push('\n');
    } else if (name === 'TD' || name === 'TH') parts.push(' ');
    const children: DomNode[] = [];
    for (let child = item.firstChild; child; child = child.nextSibling) children.push(child);
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
  }
  return tidy(parts.join(''));
}

/** Whitespace runs become one space; blank lines go, so paragraphs are separated by one newline. */
function tidy(raw: string): string {
  return raw
    .split('\n')
    .map((line) => line.replace(/\s+/g, ' ').trim())
    .filter(Boolean)
    .join('\n');
}

function htmlText(html: string): { title: string; text: string; byline: string | null } {
  if (nestsDeeperThan(html, MAX_NESTING)) {
    throw new PageFetchError('unsupported_type', `the page's markup nests more than ${MAX_NESTING} elements deep`);
  }
  const { document } = parseHTML(html);
  const documentTitle = tidy(document.title ?? '');
  let article: ReturnType<Readability<DomNode>['parse']> = null;
  const readable = (html.match(/<[a-z]/gi)?.length ?? 0) <= MAX_READABILITY_ELEMENTS;
  if (readable) {
    try {
      article = new Readability<DomNode>(document, { serializer: (node) => node as unknown as DomNode }).parse();
    } catch {
      article = null; // Readability can trip over odd markup; the plain text below still serves
    }
  }
  let text = article?.content ? blockText(article.content) : '';
  if (text.length < MIN_ARTICLE_CHARS) {
    // Readability rewrites the document it reads, so the fallback then reads a fresh one.
    const source = readable ? parseHTML(html).document : document;
    const fallback = blockText((source.body ?? source.documentElement ?? source) as unknown as DomNode);
    if (fallback.length > text.length) text = fallback;
  }
  return { title: tidy(article?.title ?? '') || documentTitle, text, byline: article?.byline?.trim() || null };
}

const VOID_ELEMENTS = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'keygen', 'link', 'meta', 'param', 'source', 'track', 'wbr']);
/** Closed by the parser when a sibling opens, so they do not pile up. */
const IMPLIED_END = new Set(['p', 'li', 'dt', 'dd', 'tr', 'td', 'th', 'option', 'optgroup', 'rb', 'rp', 'rt', 'rtc', 'thead', 'tbody', 'tfoot', 'colgroup', 'caption', 'html', 'head', 'body']);
/** Their content is text to the parser, not tags. */
const RAW_TEXT = new Set(['script', 'style', 'textarea', 'title']);
const TAG_NAME = /[a-z][^\s/>]*/y;

/**
 * Whether the parser would open more than `limit` elements inside each other:
 * one linear pass of a rough tokenizer (comments and script/style text
 * skipped, void and implied-end elements not counted, a close tag closing
 * everything opened after its element, as the parser does).
 */
function nestsDeeperThan(html: string, limit: number): boolean {
  const lower = html.toLowerCase();
  const stack: string[] = [];
  const openCount = new Map<string, number>();
  let i = 0;
  while ((i = lower.indexOf('<', i)) !== -1) {
    if (lower.startsWith('<!--', i)) {
      const end = lower.indexOf('-->', i + 4);
      if (end === -1) break;
      i = end + 3;
      continue;
    }
    const closing = lower[i + 1] === '/';
    TAG_NAME.lastIndex = i + (closing ? 2 : 1);
    const name = TAG_NAME.exec(lower)?.[0];
    // From the next '>' on, so the '<'s inside one tag are not scanned again.
    const end = lower.indexOf('>', i + 1);
    if (end === -1) break;
    i = end + 1;
    if (!name) continue;
    if (closing) {
      if (!openCount.get(name)) continue;
      for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
        openCount.set(top, openCount.get(top)! - 1);
        if (top === name) break;
      }
      continue;
    }
    if (VOID_ELEMENTS.has(name) || IMPLIED_END.has(name)) continue;
    if (RAW_TEXT.has(name)) {
      const close = lower.indexOf(`</${name}`, i);
      if (close === -1) break;
      i = close;
      continue;
    }
    stack.push(name);
    openCount.set(name, (openCount.get(name) ?? 0) + 1);
    if (stack.length > limit) return true;
  }
  return false;
}

/** At most `max` characters, never splitting a surrogate pair. */
function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max);
  return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut;
}
