import type { MigrationEntry } from '../../db/migrations';
import { Migration20261127120000DailyRequestCounts } from './Migration20261127120000-daily-request-counts';

/** The rate limiter's table; a migration that has shipped never changes the schema it builds. */
export const rateLimitMigrations: MigrationEntry[] = [{ name: 'Migration20261127120000DailyRequestCounts', class: Migration20261127120000DailyRequestCounts }];
