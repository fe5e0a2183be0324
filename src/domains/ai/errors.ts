import { defineErrors } from '../../errors/catalog';

export const aiErrors = defineErrors({
  // The AI modules API's own spelling (ai-modules-api.md, Errors) of billing's 402s.
  CREDIT_EXHAUSTED: { status: 402, title: 'Credits exhausted' },
  BUDGET_EXHAUSTED: { status: 402, title: 'Budget exhausted' },
  ai_provider_error: { status: 502, title: 'AI provider error' },
  web_search_error: { status: 502, title: 'Web search error' },
  ai_provider_not_configured: { status: 503, title: 'AI provider not configured' },
  web_search_not_configured: { status: 503, title: 'Web search not configured' },
  ai_provider_timeout: { status: 504, title: 'AI provider timed out' },
  // Long-running work (research, bulk jobs).
  job_limit_reached: { status: 429, title: 'Too many running jobs' },
  job_not_finished: { status: 409, title: 'Job not finished' },
  job_failed: { status: 409, title: 'Job failed' },
  job_finished: { status: 409, title: 'Job already finished' },
});

declare module '../../errors/catalog' {
  interface ErrorCodes extends Record<keyof typeof aiErrors, ErrorEntry> {}
}
