import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261201000000Jobs } from './Migration20261201000000-jobs';

/** The job table's migrations; never edit one that has shipped. */
export const jobMigrations: MigrationObject[] = [{ name: 'Migration20261201000000Jobs', class: Migration20261201000000Jobs }];
