import path from 'node:path';
import { defineDomain, type ApiOf } from '../../kernel/domain';
import { aiDomain } from '../ai';
import { catalogDomain } from '../catalog';
import { documentsDomain } from '../documents';
import { identityDomain } from '../identity';
import { BulkJob, BulkRow } from './bulk-job.entity';
import { BULK_INGEST, BULK_PROCESS, BULK_UPLOAD_SWEEP, BulkService, UPLOAD_SWEEP_SECONDS } from './bulk.service';
import { loadBulkConfig } from './config';
import { bulkMigrations } from './migrations';
import './events';

export { BulkJob, BulkRow } from './bulk-job.entity';
export { BulkService, BULK_INGEST, BULK_PROCESS, PROMPT_TEMPLATE_MAX, COLUMN_NAME_MAX, type BulkJobView, type BulkRowView, type BulkSubmission } from './bulk.service';
export { sniffTable, readTable, writeTable, tableKinds, TABLE_MIME, type TableKind, type TableFormat } from './table-file';
export { type BulkConfig } from './config';

/**
 * Bulk jobs: a table's rows through a prompt template, durable row by row,
 * each under its own credit hold; results as NDJSON or a file in the
 * input's format. The upload limit is the documents' (UPLOAD_MAX_MB).
 */
export const bulkDomain = defineDomain({
  name: 'bulk',
  requires: { identity: identityDomain, ai: aiDomain, catalog: catalogDomain, documents: documentsDomain },
  entities: [BulkJob, BulkRow],
  migrations: bulkMigrations,
  config: loadBulkConfig,
  create: ({ kernel, config, deps }) => {
    const bulk = new BulkService(
      kernel.orm,
      kernel.writer,
      kernel.reads,
      kernel.jobs,
      kernel.events,
      deps.ai,
      deps.catalog.models,
      config.bulk,
      deps.documents.limits,
      path.join(kernel.config.dataDir, 'uploads'),
      kernel.log,
    );
    // A deleted user's jobs go with their row (cascade): their subscribers are told they ended.
    deps.identity.userDeletion.add(({ userId }) => bulk.endedWithUser(userId));
    return { config: config.bulk, limits: deps.documents.limits, bulk };
  },
  jobs: (api) => ({
    [BULK_INGEST]: (payload: { jobId: string }) => api.bulk.ingest(payload),
    [BULK_PROCESS]: (payload: { jobId: string }, run) => api.bulk.process(payload, run),
    [BULK_UPLOAD_SWEEP]: async () => void (await api.bulk.sweepUploads()),
  }),
  schedules: () => [{ kind: BULK_UPLOAD_SWEEP, everySeconds: UPLOAD_SWEEP_SECONDS }],
});

export type BulkApi = ApiOf<typeof bulkDomain>;
