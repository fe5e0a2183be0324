import fs from 'node:fs';
import path from 'node:path';
import type { Config } from './config';
import { openDatabase, type Orm } from './db/orm';
import { ReadStore, watchWrites } from './db/read-store';
import { runInUnitOfWork } from './db/unit-of-work';
import { EventBus } from './events/event-bus';
import { loadSecrets, type Secrets } from './secrets';
import { AccessTokens } from './auth/tokens';
import { AuditService } from './domains/audit/audit.service';
import { IdentityService } from './domains/identity/identity.service';
import { AuthService } from './domains/identity/auth.service';
import { ApiKeyService } from './domains/identity/api-key.service';
import { MfaService } from './domains/identity/mfa.service';
import { StepUpService } from './domains/identity/step-up.service';
import { SecretBox } from './crypto/secret-box';
import { SessionService } from './domains/identity/session.service';
import { ProfileService } from './domains/identity/profile.service';
import { SessionCookieService } from './domains/identity/session-cookie.service';
import { SsoService } from './domains/identity/sso.service';
import { CatalogService, type ModelSeed } from './domains/catalog/catalog.service';
import { PlanService, type PlanSeed } from './domains/billing/plan.service';
import { FeedbackService } from './domains/feedback/feedback.service';
import { HealthService } from './domains/health.service';
import { Mailer, stderrLogger } from './mail/mailer';
import { LoginThrottleService, loginThrottleKey } from './domains/identity/login-throttle.service';
import { PasswordResetService } from './domains/identity/password-reset.service';
import { EmailChangeService } from './domains/identity/email-change.service';
import { AccountDeletionService } from './domains/identity/account-deletion.service';
import { SecurityPolicyService } from './domains/admin/security-policy.service';
import { AdminUsersService } from './domains/admin/admin-users.service';
import { InvitationService } from './domains/admin/invitations.service';
import { CompanyAdminService } from './domains/admin/companies.service';
import { ModelAdminService } from './domains/admin/models.service';
import { ApiKeyAdminService } from './domains/admin/api-keys.service';
import { ConnectorService } from './domains/admin/connectors.service';

/** The composition root: every core service, wired once per process. */
export interface Services {
  config: Config;
  orm: Orm;
  bus: EventBus;
  audit: AuditService;
  identity: IdentityService;
  auth: AuthService;
  apiKeys: ApiKeyService;
  /** TOTP second factor: enrolment, checks at login and step-up, recovery codes. */
  mfa: MfaService;
  /** Step-up and `requireRecentAuthentication` for sensitive operations. */
  stepUp: StepUpService;
  /** AES-256-GCM for secrets at rest (ENCRYPTION_KEYS or a key generated into DATA_DIR). */
  secretBox: SecretBox;
  sessions: SessionService;
  /** Per-address delays and lock after failed password logins; admin unlock. */
  loginThrottle: LoginThrottleService;
  /** Password reset by a single-use mailed link (public request and confirm; `sendResetFor` for admins). */
  passwordReset: PasswordResetService;
  profiles: ProfileService;
  /** The `service_token` browser-session cookie (issued by single sign-on). */
  sessionCookies: SessionCookieService;
  /** Single sign-on over OpenID Connect (google, microsoft). */
  sso: SsoService;
  catalog: CatalogService;
  plans: PlanService;
  feedback: FeedbackService;
  health: HealthService;
  /** Outgoing mail: SMTP with an outbox table in front (src/mail). */
  mailer: Mailer;
  /** Changing a user's email: request (step-up), confirmation link to the new address. */
  emailChange: EmailChangeService;
  /** Self-service account deletion after a grace period; `executeDue` runs on a timer. */
  accountDeletion: AccountDeletionService;
  /** Invitations to join a company: create (single and bulk), list, resend, revoke; public accept. */
  invitations: InvitationService;
  /** Company administration: list, read, update, audit log, overview counts. */
  adminCompanies: CompanyAdminService;
  /** The platform-wide model catalog: admins read, superadmins create and edit. */
  adminModels: ModelAdminService;
  /** A company's API keys: list, create, revoke (effective at once). */
  adminApiKeys: ApiKeyAdminService;
  /** Administration of a company's users: list, edit, suspend, delete, force-logout, disable MFA, sessions, usage. */
  adminUsers: AdminUsersService;
  /** Company security policies: administration and the cached checks run on every request. */
  securityPolicy: SecurityPolicyService;
  /** A company's cloud-storage connector settings (google_drive, onedrive): read, change, test. */
  connectors: ConnectorService;
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
  const secrets: Secrets = loadSecrets(config.dataDir, {
    ...(config.jwtSecret ? { jwtSecret: config.jwtSecret } : {}),
    ...(config.encryptionKeys ? { encryptionKeys: config.encryptionKeys } : {}),
  });
  const secretBox = SecretBox.fromKeyrings(secrets.encryptionKeys);
  const orm = await openDatabase(config.databaseFile, { migrate: config.migrate });
  const reads = new ReadStore(config.databaseFile);
  watchWrites(orm, reads);
  const bus = new EventBus();
  const audit = new AuditService(orm, bus);
  const mailer = new Mailer(orm, { smtpUrl: config.smtpUrl, from: config.mailFrom, logger: stderrLogger(config.logLevel) });
  const tokens = new AccessTokens(secrets.jwtSecret, config.accessTokenTtlSeconds, config.publicUrl);
  const mfa = new MfaService(orm, audit, secretBox);
  const loginThrottle = new LoginThrottleService(orm, config.loginThrottle, audit, loginThrottleKey(secrets.ipHashSalt));
  const sessions = new SessionService(orm, bus, audit);
  const securityPolicy = new SecurityPolicyService(orm, reads, bus, audit);
  const passwordReset = new PasswordResetService(orm, config, bus, audit, mailer, sessions, loginThrottle, stderrLogger(config.logLevel), securityPolicy);
  const accountDeletion = new AccountDeletionService(orm, config, bus, audit, mailer);
  const sessionCookies = new SessionCookieService(orm, bus);
  const apiKeys = new ApiKeyService(orm, audit);
  let sso: SsoService | undefined;
  let invitations: InvitationService | undefined;
  const services: Services = {
    config,
    orm,
    bus,
    audit,
    identity: new IdentityService(orm, reads, config, audit),
    auth: new AuthService(orm, config, bus, audit, tokens, mfa, loginThrottle, securityPolicy),
    apiKeys,
    mfa,
    stepUp: new StepUpService(orm, audit, tokens, mfa),
    secretBox,
    sessions,
    loginThrottle,
    passwordReset,
    profiles: new ProfileService(orm, bus, audit),
    sessionCookies,
    // Built on first use: it signs in through `auth` (and checks MFA, steps up) through siblings in this object.
    get sso(): SsoService {
      return (sso ??= new SsoService(orm, config, audit, this.auth, sessionCookies, this.mfa, this.stepUp, securityPolicy));
    },
    catalog: new CatalogService(orm, reads),
    plans: new PlanService(orm, reads),
    feedback: new FeedbackService(orm, secrets.ipHashSalt),
    health: new HealthService(reads),
    mailer,
    emailChange: new EmailChangeService(orm, config, bus, audit, mailer),
    accountDeletion,
    securityPolicy,
    // Built on first use: accepting signs the new user in through `auth`.
    get invitations(): InvitationService {
      return (invitations ??= new InvitationService(orm, config, audit, mailer, this.auth, securityPolicy));
    },
    adminCompanies: new CompanyAdminService(orm, audit),
    adminModels: new ModelAdminService(orm, audit),
    adminApiKeys: new ApiKeyAdminService(orm, audit, bus, apiKeys),
    adminUsers: new AdminUsersService(orm, bus, audit, sessions, passwordReset, mfa, loginThrottle, mailer),
    connectors: new ConnectorService(orm, audit, secretBox, config.connectors),
    close: async () => {
      await passwordReset.idle();
      await accountDeletion.stop();
      await mailer.close();
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
  // Failed mail is retried in the background while the process runs (no-op without SMTP).
  mailer.startHousekeeping(config.mailRetrySeconds);
  // Due account deletions are executed in the background (0: off; unref'd, stopped by close()).
  accountDeletion.start(config.accountDeletionIntervalSeconds);
  return services;
}
