import fs from 'node:fs';
import path from 'node:path';
import type { Config } from './config';
import { openDatabase, type Orm } from './db/orm';
import { ReadStore } from './db/read-store';
import { runInUnitOfWork } from './db/unit-of-work';
import { EventBus } from './events/event-bus';
import { loadSecrets, type Secrets } from './secrets';
import { AccessTokens } from './auth/tokens';
import { AuditService } from './domains/audit/audit.service';
import { IdentityService } from './domains/identity/identity.service';
import { AuthService } from './domains/identity/auth.service';
import { ApiKeyService } from './domains/identity/api-key.service';
import { CatalogService, type ModelSeed } from './domains/catalog/catalog.service';
import { PlanService, type PlanSeed } from './domains/billing/plan.service';
import { FeedbackService } from './domains/feedback/feedback.service';
import { HealthService } from './domains/health.service';

/** The composition root: every core service, wired once per process. */
export interface Services {
  config: Config;
  orm: Orm;
  bus: EventBus;
  audit: AuditService;
  identity: IdentityService;
  auth: AuthService;
  apiKeys: ApiKeyService;
  catalog: CatalogService;
  plans: PlanService;
  feedback: FeedbackService;
  health: HealthService;
  close(): Promise<void>;
}

/** Seed data shipped in the repository's data/ folder. */
export const SEED_DIR = path.resolve(__dirname, '../../data');

function readSeed<T>(name: string): T {
  return JSON.parse(fs.readFileSync(path.join(SEED_DIR, name), 'utf8')) as T;
}

/** Runs `fn` in its own unit of work (outside an HTTP request: CLI, start-up, jobs). */
export function inContext<T>(orm: Orm, fn: () => Promise<T>): Promise<T> {
  return runInUnitOfWork(orm, fn);
}

export async function createServices(config: Config): Promise<Services> {
  const secrets: Secrets = loadSecrets(config.dataDir, config.jwtSecret ? { jwtSecret: config.jwtSecret } : {});
  const orm = await openDatabase(config.databaseFile, { migrate: config.migrate });
  const reads = new ReadStore(config.databaseFile);
  const bus = new EventBus();
  const audit = new AuditService(orm, bus);
  const tokens = new AccessTokens(secrets.jwtSecret, config.accessTokenTtlSeconds, config.publicUrl);
  const services: Services = {
    config,
    orm,
    bus,
    audit,
    identity: new IdentityService(orm, reads, config, audit),
    auth: new AuthService(orm, config, bus, audit, tokens),
    apiKeys: new ApiKeyService(orm, audit),
    catalog: new CatalogService(orm, reads),
    plans: new PlanService(orm, reads),
    feedback: new FeedbackService(orm, secrets.ipHashSalt),
    health: new HealthService(reads),
    close: async () => {
      reads.close();
      await orm.close();
    },
  };
  await inContext(orm, async () => {
    await services.plans.seed(readSeed<PlanSeed[]>('plans.json'));
    await services.catalog.seed(readSeed<ModelSeed[]>('models.json'));
    if (config.owner && (await services.identity.userCount()) === 0) {
      await services.identity.createCompanyWithOwner(config.owner);
    }
  });
  return services;
}
