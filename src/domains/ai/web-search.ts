import { AppError } from '../../errors/catalog';
import type { AiConfig } from './config';
import { clipText } from '../../clip-text';

export interface SearchResult {
  url: string;
  title: string;
  content: string;
}

const SEARCH_TIMEOUT_MS = 10_000;
const MAX_RESPONSE_BYTES = 2 * 1024 * 1024;

/**
 * A SearXNG-compatible search (`GET {WEB_SEARCH_URL}/search?q=…&format=json`
 * answering `results[{url, title, content}]`). The endpoint is the
 * operator's, so it is trusted (loopback included); the result URLs are not,
 * and nothing here fetches them.
 */
export class WebSearch {
  constructor(private readonly config: AiConfig) {}

  get configured(): boolean {
    return this.config.webSearchUrl !== null;
  }

  requireConfigured(): string {
    if (!this.config.webSearchUrl) {
      throw new AppError(
        'web_search_not_configured',
        'Web search is not configured: set WEB_SEARCH_URL to a SearXNG-compatible endpoint (JSON output enabled) and restart',
      );
    }
    return this.config.webSearchUrl;
  }

  async search(query: string, signal?: AbortSignal): Promise<SearchResult[]> {
    const base = this.requireConfigured();
    const url = `${base}/search?q=${encodeURIComponent(query)}&format=json`;
    let response: Response;
    try {
      response = await fetch(url, {
        headers: { accept: 'application/json' },
        signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(SEARCH_TIMEOUT_MS)]) : AbortSignal.timeout(SEARCH_TIMEOUT_MS),
      });
    } catch (error) {
      throw new AppError('web_search_error', 'The web search endpoint could not be reached in time', { cause: error });
    }
    if (!response.ok) throw new AppError('web_search_error', `The web search endpoint answered ${response.status}`);
    const text = await response.text();
    if (text.length > MAX_RESPONSE_BYTES) throw new AppError('web_search_error', 'The web search answer is too large');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new AppError('web_search_error', 'The web search endpoint did not answer JSON (is format=json enabled?)');
    }
    const results = (body as { results?: unknown }).results;
    if (!Array.isArray(results)) throw new AppError('web_search_error', 'The web search answer has no results list');
    const out: SearchResult[] = [];
    for (const r of results as Record<string, unknown>[]) {
      if (typeof r?.url !== 'string' || !/^https?:\/\//i.test(r.url)) continue;
      out.push({
        url: r.url.slice(0, 2000),
        title: typeof r.title === 'string' ? clipText(r.title, 300) : r.url,
        content: typeof r.content === 'string' ? clipText(r.content, 1000) : '',
      });
      if (out.length >= this.config.webSearchResults) break;
    }
    return out;
  }
}
