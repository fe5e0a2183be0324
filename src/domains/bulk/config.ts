import { int, type Env } from '../../env';

/** Bulk jobs (BULK_*); the upload limit is UPLOAD_MAX_MB, shared with documents. */
export interface BulkConfig {
  /** Rows of one job sent to the model at once (BULK_CONCURRENCY, 8). */
  concurrency: number;
  /** Tries of one row on a provider failure (429, 5xx, time-out) before it fails (BULK_ROW_ATTEMPTS, 3). */
  rowAttempts: number;
  /** Rows a file may hold (BULK_MAX_ROWS, 200000); more fails the job. */
  maxRows: number;
  /** Bulk jobs a company may have queued or running at once (BULK_MAX_CONCURRENT, 3); one more is 429. */
  maxConcurrent: number;
}

export function loadBulkConfig(env: Env): { bulk: BulkConfig } {
  return {
    bulk: {
      concurrency: int(env, 'BULK_CONCURRENCY', 8, 1),
      rowAttempts: int(env, 'BULK_ROW_ATTEMPTS', 3, 1),
      maxRows: int(env, 'BULK_MAX_ROWS', 200_000, 1),
      maxConcurrent: int(env, 'BULK_MAX_CONCURRENT', 3, 1),
    },
  };
}
