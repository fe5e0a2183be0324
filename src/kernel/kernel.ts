import { sqliteDialect, type SqlDialect } from '../db/dialect';
import type { MigrationEntry } from '../db/migrations';
import { openDatabase, type Orm } from '../db/orm';
import { ReadStore } from '../db/read-store';
import { Checkpointer } from '../db/checkpointer';
import { SqliteWriter } from '../db/sqlite-writer';
import { SqliteChangeSignal, watchWrites, type ChangeSignal } from '../db/change-signal';
import { MemoryEventBus, type EventBus } from '../events/event-bus';
import { MAIL_DELIVER, MAIL_HOUSEKEEPING, Mailer } from '../mail/mailer';
import { MailOutbox } from '../mail/outbox.entity';
import { mailMigrations } from '../mail/migrations';
import { Job } from '../jobs/job.entity';
import type { JobQueue } from '../jobs/job-queue';
import { jobMigrations } from '../jobs/migrations';
import { SqliteJobQueue } from '../jobs/sqlite-job-queue';
import { JobWorker, type JobSchedule } from '../jobs/worker';
import { MemoryRateLimiter } from '../rate-limit/rate-limiter';
import { SqliteDailyCounts } from '../rate-limit/daily-counts';
import { DailyRequestCount } from '../rate-limit/daily-count.entity';
import { rateLimitMigrations } from '../rate-limit/migrations';
import { Budgets } from '../rate-limit/budgets';
import { SecretBox } from '../crypto/secret-box';
import { loadSecrets, type Secrets } from '../secrets';
import type { KernelConfig } from './config';
import { checkDataDirs } from './data-dir';
import type { EntityClass } from './domain';
import { stderrLogger, SwitchableLogger } from './logger';

/**
 * What every domain builds on: the database and its unit of work, the hot
 * read path, the ports (SQL dialect, event bus, rate-limit store, job queue)
 * with their SQLite and single-node adapters, the job worker, the mail
 * transport, secrets, and the
 * process's logger. The kernel imports no domain.
 */
export interface Kernel {
  config: KernelConfig;
  orm: Orm;
  /** The SQL of the opened database that the ORM does not write portably. */
  dialect: SqlDialect;
  reads: ReadStore;
  /** SQLite's WAL checkpoints, off the event loop. */
  checkpointer: Checkpointer;
  /** Synchronous SQL on the write connection, for the few writes that must be atomic and fast (the credit ledger). */
  writer: SqliteWriter;
  /** Tells the caches of hot reads that data may have changed (a port; SQLite's data_version here). */
  changes: ChangeSignal;
  events: EventBus;
  /** Rate-limit budgets over the store port (memory on one node). */
  budgets: Budgets;
  mailer: Mailer;
  /** Durable background jobs: `jobs.enqueue` joins the caller's unit of work. */
  jobs: JobQueue;
  /** Runs the jobs; started by a serving process only (boot with `background`). */
  worker: JobWorker;
  /** The kernel's own recurring jobs (the domains bring theirs). */
  schedules: readonly JobSchedule[];
  secrets: Secrets;
  secretBox: SecretBox;
  log: SwitchableLogger;
  close(): Promise<void>;
}

/** The kernel's own tables (the mail outbox, the jobs) and their migrations. */
export const kernelSchema: { entities: EntityClass[]; migrations: MigrationEntry[] } = {
  entities: [MailOutbox, Job, DailyRequestCount],
  migrations: [...mailMigrations, ...jobMigrations, ...rateLimitMigrations],
};

export async function createKernel(
  config: KernelConfig,
  schema: { entities: readonly EntityClass[]; migrations: readonly MigrationEntry[] },
): Promise<Kernel> {
  checkDataDirs(config);
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
  const checkpointer = new Checkpointer(config.databaseFile, log);
  const changes = new SqliteChangeSignal(reads);
  watchWrites(orm, changes);
  const writer = new SqliteWriter(orm);
  const dailyCounts = new SqliteDailyCounts(reads, writer);
  const jobs = new SqliteJobQueue(orm, { maxAttempts: config.jobs.maxAttempts });
  const worker = new JobWorker(orm, jobs, config.jobs, log);
  const retry = config.mailRetrySeconds;
  const mailer = new Mailer(orm, jobs, { smtpUrl: config.smtpUrl, from: config.mailFrom, logger: log, retrySeconds: retry });
  // A failed delivery is retried every MAIL_RETRY_SECONDS (with jitter), not with the jobs' doubling backoff.
  worker.register(MAIL_DELIVER, (payload: { mailId: string }) => mailer.deliver(payload.mailId), retry > 0 ? { baseSeconds: retry, maxSeconds: retry } : undefined);
  worker.register(MAIL_HOUSEKEEPING, async () => void (await mailer.forgetExpiredSecrets()));
  return {
    config,
    orm,
    dialect: sqliteDialect,
    reads,
    checkpointer,
    writer,
    changes,
    events: new MemoryEventBus(),
    budgets: new Budgets(new MemoryRateLimiter(config.rateLimit.windowSeconds, dailyCounts), config.rateLimit),
    mailer,
    jobs,
    worker,
    schedules: config.mailRetrySeconds > 0 ? [{ kind: MAIL_HOUSEKEEPING, everySeconds: config.mailRetrySeconds }] : [],
    secrets,
    secretBox: SecretBox.fromKeyrings(secrets.encryptionKeys),
    log,
    async close() {
      await worker.stop();
      await dailyCounts.close();
      mailer.close();
      reads.close();
      await checkpointer.close();
      await orm.close();
    },
  };
}
