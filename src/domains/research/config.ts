import { int, TIMER_MAX_SECONDS, type Env } from '../../env';

/** Research jobs (RESEARCH_*). */
export interface ResearchConfig {
  /** Research jobs a company may have queued or running at once (RESEARCH_MAX_CONCURRENT, 3); one more is 429. */
  maxConcurrent: number;
  /** A job not finished this long after its start fails and its hold is released (RESEARCH_TIMEOUT_SECONDS, 1800). */
  timeoutSeconds: number;
  /** Per page fetch, redirects included (RESEARCH_PAGE_TIMEOUT_SECONDS, 10). */
  pageTimeoutMs: number;
  /** Decoded bytes of one page at most (RESEARCH_PAGE_MAX_KB, 2048); larger pages are skipped. */
  pageMaxBytes: number;
  /** Characters of a page's text the summary reads (RESEARCH_PAGE_MAX_CHARS, 12000). */
  pageMaxChars: number;
}

export function loadResearchConfig(env: Env): { research: ResearchConfig } {
  return {
    research: {
      maxConcurrent: int(env, 'RESEARCH_MAX_CONCURRENT', 3, 1),
      timeoutSeconds: int(env, 'RESEARCH_TIMEOUT_SECONDS', 1800, 60, TIMER_MAX_SECONDS),
      pageTimeoutMs: int(env, 'RESEARCH_PAGE_TIMEOUT_SECONDS', 10, 1, TIMER_MAX_SECONDS) * 1000,
      pageMaxBytes: int(env, 'RESEARCH_PAGE_MAX_KB', 2048, 16) * 1024,
      pageMaxChars: int(env, 'RESEARCH_PAGE_MAX_CHARS', 12_000, 500),
    },
  };
}
