import type { MigrationObject } from '@mikro-orm/core';
import { openDatabase, type Orm } from '../db/orm';
import { ReadStore, watchWrites } from '../db/read-store';
import { MemoryEventBus, type EventBus } from '../events/event-bus';
import { Mailer } from '../mail/mailer';
import { MailOutbox } from '../mail/outbox.entity';
import { mailMigrations } from '../mail/migrations';
import { Migration20261122000000Initial } from '../db/migrations/Migration20261122000000-initial';
import { Job } from '../jobs/job.entity';
import type { JobQueue } from '../jobs/job-queue';
import { jobMigrations } from '../jobs/migrations';
import { SqliteJobQueue } from '../jobs/sqlite-job-queue';
import { JobWorker } from '../jobs/worker';
import { MemoryRateLimiter, type RateLimitStore } from '../rate-limit/rate-limiter';
import { SecretBox } from '../crypto/secret-box';
import { loadSecrets, type Secrets } from '../secrets';
import type { KernelConfig } from './config';
import type { EntityClass } from './domain';
import { stderrLogger, SwitchableLogger } from './logger';

/**
 * What every domain builds on: the database and its unit of work, the hot
 * read path, the ports (event bus, rate-limit store, job queue) with their
 * single-node adapters, the job worker, the mail transport, secrets, and the
 * process's logger. The kernel imports no domain.
 */
export interface Kernel {
  config: KernelConfig;
  orm: Orm;
  reads: ReadStore;
  events: EventBus;
  rateLimits: RateLimitStore;
  mailer: Mailer;
  /** Durable background jobs: `jobs.enqueue` joins the caller's unit of work. */
  jobs: JobQueue;
  /** Runs the jobs; started by a serving process only (boot with `background`). */
  worker: JobWorker;
  secrets: Secrets;
  secretBox: SecretBox;
  log: SwitchableLogger;
  close(): Promise<void>;
}

/** The kernel's own tables (the mail outbox, the jobs) and the first, cross-domain baseline migration. */
export const kernelSchema: { entities: EntityClass[]; migrations: MigrationObject[] } = {
  entities: [MailOutbox, Job],
  migrations: [{ name: 'Migration20261122000000Initial', class: Migration20261122000000Initial }, ...mailMigrations, ...jobMigrations],
};

export async function createKernel(
  config: KernelConfig,
  schema: { entities: readonly EntityClass[]; migrations: readonly MigrationObject[] },
): Promise<Kernel> {
  const secrets = loadSecrets(config.dataDir, {
    ...(config.jwtSecret ? { jwtSecret: config.jwtSecret } : {}),
    ...(config.encryptionKeys ? { encryptionKeys: config.encryptionKeys } : {}),
  });
  const log = new SwitchableLogger(stderrLogger(config.logLevel));
  const orm = await openDatabase(
    config.databaseFile,
    { entities: [...kernelSchema.entities, ...schema.entities], migrations: [...kernelSchema.migrations, ...schema.migrations] },
    { migrate: config.migrate },
  );
  const reads = new ReadStore(config.databaseFile);
  watchWrites(orm, reads);
  const mailer = new Mailer(orm, { smtpUrl: config.smtpUrl, from: config.mailFrom, logger: log });
  const jobs = new SqliteJobQueue(orm, { maxAttempts: config.jobs.maxAttempts });
  const worker = new JobWorker(orm, jobs, config.jobs, log);
  return {
    config,
    orm,
    reads,
    events: new MemoryEventBus(),
    rateLimits: new MemoryRateLimiter(config.rateLimit.windowSeconds),
    mailer,
    jobs,
    worker,
    secrets,
    secretBox: SecretBox.fromKeyrings(secrets.encryptionKeys),
    log,
    async close() {
      await worker.stop();
      await mailer.close();
      reads.close();
      await orm.close();
    },
  };
}
