import { sqliteDialect, type SqlDialect } from '../db/dialect';
import type { MigrationEntry } from '../db/migrations';
import { openDatabase, type Orm } from '../db/orm';
import { ReadStore, watchWrites } from '../db/read-store';
import { MemoryEventBus, type EventBus } from '../events/event-bus';
import { Mailer } from '../mail/mailer';
import { MailOutbox } from '../mail/outbox.entity';
import { mailMigrations } from '../mail/migrations';
import { MemoryRateLimiter } from '../rate-limit/rate-limiter';
import { Budgets } from '../rate-limit/budgets';
import { SecretBox } from '../crypto/secret-box';
import { loadSecrets, type Secrets } from '../secrets';
import type { KernelConfig } from './config';
import type { EntityClass } from './domain';
import { stderrLogger, SwitchableLogger } from './logger';

/**
 * What every domain builds on: the database and its unit of work, the hot
 * read path, the ports (SQL dialect, event bus, rate-limit store) with their
 * SQLite and single-node adapters, the mail transport, secrets, and the
 * process's logger. The kernel imports no domain.
 */
export interface Kernel {
  config: KernelConfig;
  orm: Orm;
  /** The SQL of the opened database that the ORM does not write portably. */
  dialect: SqlDialect;
  reads: ReadStore;
  events: EventBus;
  /** Rate-limit budgets over the store port (memory on one node). */
  budgets: Budgets;
  mailer: Mailer;
  secrets: Secrets;
  secretBox: SecretBox;
  log: SwitchableLogger;
  close(): Promise<void>;
}

/** The kernel's own tables (the mail outbox) and their migrations. */
export const kernelSchema: { entities: EntityClass[]; migrations: MigrationEntry[] } = {
  entities: [MailOutbox],
  migrations: mailMigrations,
};

export async function createKernel(
  config: KernelConfig,
  schema: { entities: readonly EntityClass[]; migrations: readonly MigrationEntry[] },
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
  return {
    config,
    orm,
    dialect: sqliteDialect,
    reads,
    events: new MemoryEventBus(),
    budgets: new Budgets(new MemoryRateLimiter(config.rateLimit.windowSeconds), config.rateLimit),
    mailer,
    secrets,
    secretBox: SecretBox.fromKeyrings(secrets.encryptionKeys),
    log,
    async close() {
      await mailer.close();
      reads.close();
      await orm.close();
    },
  };
}
