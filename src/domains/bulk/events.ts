import type { BulkJobView } from './bulk.service';

export {};

declare module '../../events/event-bus' {
  interface EventMap {
    /** A bulk job changed state or counts (committed; at most a few a second per job); feeds the job-progress subscriptions. */
    'bulk.updated': { companyId: string; userId: string | null; job: BulkJobView };
    /** A bulk job processed all its rows, in the outbound-event envelope of platform-api.md. */
    'bulk.job.completed': {
      id: string;
      type: 'bulk.job.completed';
      created_at: string;
      company_id: string;
      data: { job_id: string; total_rows: number; rows_completed: number; rows_failed: number };
    };
  }
}
