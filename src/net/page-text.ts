import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';

/**
 * The readable text of an HTML page: Readability on linkedom (boilerplate
 * dropped), falling back to the body's text when it finds no article.
 * Synchronous and CPU-bound, so page-fetch.ts runs it in a worker thread
 * (page-text.worker.ts): a heavy page costs that thread, not the server's
 * event loop, and the fetch's time limit can stop it.
 */

/** Why a page's markup was refused before parsing. */
export class PageTextRefused extends Error {}

/** Below this much article text, Readability is taken to have missed the page. */
const MIN_ARTICLE_CHARS = 200;
/**
 * Readability runs synchronously at ~30 µs per element on linkedom (a 2 MiB
 * page of 90,000 elements keeps its worker thread busy ~2.5 s); larger pages get
 * the plain body text. Its own maxElemsToParse cannot be used: it counts with
 * getElementsByTagName('*'), which linkedom answers with nothing.
 */
const MAX_READABILITY_ELEMENTS = 20_000;
/**
 * linkedom's parser does work proportional to the open-element depth for each
 * tag: 40,000 unclosed <div>s take ~1.3 s and 2 MiB of them minutes, blocking
 * its worker thread. Pages nested deeper than this are refused (browsers stop
 * nesting at 512 themselves).
 */
const MAX_NESTING = 1_000;

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

export function htmlText(html: string): { title: string; text: string; byline: string | null } {
  if (nestsDeeperThan(html, MAX_NESTING)) {
    throw new PageTextRefused(`the page's markup nests more than ${MAX_NESTING} elements deep`);
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

