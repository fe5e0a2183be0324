import type { ResearchJobView } from './research.service';

export {};

declare module '../../events/event-bus' {
  interface EventMap {
    /** A research job changed state or finished a step (committed); feeds the job-progress subscriptions. */
    'research.updated': { companyId: string; userId: string | null; job: ResearchJobView };
    /**
     * A research report reached completed, in the outbound-event envelope of
     * platform-api.md (id, type, created_at, company_id, data); webhook
     * delivery will carry it as it is.
     */
    'research.report.ready': {
      id: string;
      type: 'research.report.ready';
      created_at: string;
      company_id: string;
      data: { report_id: string; query: string; depth: string; content_length: number };
    };
  }
}
