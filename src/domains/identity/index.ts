import { UserDeletionHooks } from './user-deletion';
import { AccessTokens } from '../../auth/tokens';
import { defineDomain, type ApiOf } from '../../kernel/domain';
import { ConfigError } from '../../env';
import { isAppError, validationIssues } from '../../errors/catalog';
import { auditDomain } from '../audit';
import { billingDomain } from '../billing';
import { AccessService } from './access.service';
import { ACCOUNT_DELETION_SWEEP, AccountDeletionService } from './account-deletion.service';
import { ApiKeyAdminService } from './api-key-admin.service';
import { ApiKey } from './api-key.entity';
import { ApiKeyService } from './api-key.service';
import { ModuleKeyService } from './module-key.service';
import { AuthService } from './auth.service';
import { CompanyAdminService } from './company-admin.service';
import { Company } from './company.entity';
import { loadIdentityConfig } from './config';
import { EmailChangeService } from './email-change.service';
import {
  EXPIRED_LINK_CLEANUP,
  EXPIRED_LINK_CLEANUP_SECONDS,
  IdentityHousekeeping,
  SESSION_IDLE_EXPIRY,
  SESSION_IDLE_EXPIRY_SECONDS,
} from './housekeeping.service';
import { identityErrors } from './errors';
import { IdentityService } from './identity.service';
import { Invitation } from './invitation.entity';
import { InvitationService } from './invitation.service';
import { LoginThrottle } from './login-throttle.entity';
import { LoginThrottleService, loginThrottleKey } from './login-throttle.service';
import { MfaRecoveryCode } from './mfa-recovery-code.entity';
import { MfaService } from './mfa.service';
import { identityMigrations } from './migrations';
import { OneTimeToken } from './one-time-token.entity';
import { PASSWORD_RESET_MAIL, PasswordResetService, type PasswordResetMailJob } from './password-reset.service';
import { ProfileService } from './profile.service';
import { RefreshToken } from './refresh-token.entity';
import { SecurityPolicyEnforcer } from './security-policy.enforcer';
import { SecurityPolicy } from './security-policy.entity';
import { SecurityPolicyService } from './security-policy.service';
import { SessionCookieService } from './session-cookie.service';
import { Session } from './session.entity';
import { SessionService } from './session.service';
import { SsoMfaChallenge } from './sso-mfa-challenge.entity';
import { SsoState } from './sso-state.entity';
import { SsoService } from './sso.service';
import { StepUpService } from './step-up.service';
import { UserAdminService } from './user-admin.service';
import { UserIdentity } from './user-identity.entity';
import { User } from './user.entity';
import './events';

// The public API of the domain: what other domains, the subgraphs and the REST adapter may use.
export { AccessService, enrollmentRequired } from './access.service';
export { UserDeletionHooks, type UserDeletionHook } from './user-deletion';
export { AccountDeletionService, CANCEL_DELETION_PATH, type DeletionRun } from './account-deletion.service';
export { ApiKey } from './api-key.entity';
export { ApiKeyAdminService, API_KEYS_PER_PAGE, MAX_ACTIVE_API_KEYS } from './api-key-admin.service';
export { ApiKeyService } from './api-key.service';
export { ModuleKeyService, MAX_MODULE_KEYS_PER_USER, moduleKeyView, type ModuleKeyView } from './module-key.service';
export { AuthService, parseScopes, type LoginResult, type TokenPair } from './auth.service';
export { Company } from './company.entity';
export {
  CompanyAdminService,
  COMPANIES_PER_PAGE,
  COMPANY_AUDIT_PER_PAGE,
  type CompanyOverview,
  type CompanyPatch,
} from './company-admin.service';
export { type IdentityConfig, loadIdentityConfig } from './config';
export { EmailChangeService } from './email-change.service';
export { IdentityHousekeeping, type CleanupRun } from './housekeeping.service';
export { IdentityService, MIN_PASSWORD_LENGTH, normalizeEmail, type CompanyView, type UserView, type Viewer } from './identity.service';
export { Invitation, invitationStatuses, type InvitationStatus } from './invitation.entity';
export { InvitationService, MAX_BULK_INVITATIONS, type InvitationView, type BulkInvitationResult } from './invitation.service';
export { LoginThrottleService } from './login-throttle.service';
export { MfaService } from './mfa.service';
export { PasswordResetService } from './password-reset.service';
export { ProfileService } from './profile.service';
export { STEP_UP_MAX_AGE_SECONDS } from './recent-authentication';
export {
  SecurityPolicyService,
  API_KEY_MAX_AGE_BOUNDS,
  COMPANY_SESSIONS_PER_PAGE,
  IDLE_TIMEOUT_BOUNDS,
  POLICY_FIELDS,
  POLICY_MAX_PASSWORD_LENGTH,
  type CompanySessionView,
  type SecurityPolicyPatch,
} from './security-policy.service';
export { SecurityPolicyEnforcer, POLICY_MIN_PASSWORD_LENGTH, type SecurityPolicyView } from './security-policy.enforcer';
export { Session } from './session.entity';
export { SessionCookieService } from './session-cookie.service';
export { SessionService, SESSIONS_PER_PAGE, type SessionView } from './session.service';
export { SsoService } from './sso.service';
export { type SsoIntent } from './sso-state.entity';
export { StepUpService } from './step-up.service';
export {
  UserAdminService,
  ADMIN_USER_SORTS,
  ADMIN_USERS_PER_PAGE,
  SUSPEND_REASON_MAX,
  USAGE_DAYS_DEFAULT,
  USAGE_DAYS_MAX,
  type AdminUserPatch,
} from './user-admin.service';
export { User, roles, userStatuses, type Role, type UserStatus } from './user.entity';

/**
 * Companies and their people: sign-in (password, SSO, MFA, step-up), sessions
 * and credentials, API keys, invitations, account changes, the security
 * policy (enforced and administered), and the administration of users and
 * companies.
 */
export const identityDomain = defineDomain({
  name: 'identity',
  requires: { audit: auditDomain, billing: billingDomain },
  entities: [
    Company,
    User,
    Session,
    RefreshToken,
    ApiKey,
    MfaRecoveryCode,
    SsoState,
    UserIdentity,
    Invitation,
    SsoMfaChallenge,
    LoginThrottle,
    OneTimeToken,
    SecurityPolicy,
  ],
  migrations: identityMigrations,
  errors: identityErrors,
  config: loadIdentityConfig,
  create: ({ kernel, config, deps }) => {
    const { orm, dialect, reads, changes, events, mailer, log } = kernel;
    const audit = deps.audit.log;
    const tokens = new AccessTokens(kernel.secrets.jwtSecret, config.accessTokenTtlSeconds, config.publicUrl);
    const policies = new SecurityPolicyEnforcer(orm, reads, changes, events);
    const mfa = new MfaService(orm, audit, kernel.secretBox);
    const throttle = new LoginThrottleService(orm, config.loginThrottle, audit, loginThrottleKey(kernel.secrets.ipHashSalt));
    const sessions = new SessionService(orm, events, audit, policies);
    const auth = new AuthService(orm, config, events, audit, tokens, mfa, throttle, policies);
    const sessionCookies = new SessionCookieService(orm, events, auth);
    const stepUp = new StepUpService(orm, audit, tokens, mfa, throttle);
    const passwordReset = new PasswordResetService(orm, config, events, audit, mailer, kernel.jobs, sessions, throttle, policies);
    const apiKeys = new ApiKeyService(orm, audit);
    const companies = new CompanyAdminService(orm, dialect, audit, deps.billing.plans, policies);
    const userDeletion = new UserDeletionHooks();
    return {
      accounts: new IdentityService(orm, reads, changes, config, audit, deps.billing),
      auth,
      access: new AccessService(auth, sessionCookies, policies),
      mfa,
      stepUp,
      sessions,
      sessionCookies,
      throttle,
      passwordReset,
      profiles: new ProfileService(orm, events, audit),
      sso: new SsoService(orm, config, audit, auth, sessionCookies, mfa, stepUp, policies),
      emailChange: new EmailChangeService(orm, config, events, audit, mailer),
      deletion: new AccountDeletionService(orm, config, events, audit, mailer, log, userDeletion),
      invitations: new InvitationService(orm, config, audit, mailer, auth, policies),
      apiKeys,
      apiKeyAdmin: new ApiKeyAdminService(orm, audit, events, apiKeys),
      moduleKeys: new ModuleKeyService(orm, audit, events),
      companies,
      users: new UserAdminService(orm, dialect, events, audit, sessions, passwordReset, mfa, throttle, mailer, deps.billing.usage, companies, userDeletion),
      /** Hooks of other domains run when a user is deleted (their jobs' final announcements). */
      userDeletion,
      policies,
      policyAdmin: new SecurityPolicyService(orm, events, audit, policies, companies),
      housekeeping: new IdentityHousekeeping(orm, events, log),
      /** The settings the domain was built with (the owner bootstrap, the deletion sweep). */
      config,
    };
  },
  seed: async (identity) => {
    const owner = identity.config.owner;
    if (!owner || (await identity.accounts.userCount()) !== 0) return;
    try {
      await identity.accounts.createCompanyWithOwner(owner);
    } catch (error) {
      // The variable to fix, as the CLI names its flag: the service's issues name only the field.
      const issues = isAppError(error) ? validationIssues(error) : undefined;
      if (!issues) throw error;
      const variable: Record<string, string> = { email: 'ATRIUM_OWNER_EMAIL', password: 'ATRIUM_OWNER_PASSWORD', company: 'ATRIUM_OWNER_COMPANY' };
      throw new ConfigError(issues.map((i) => `invalid ${variable[String(i.loc.at(-1))] ?? String(i.loc.at(-1))}: ${i.msg}`).join('; '));
    }
  },
  jobs: (identity) => ({
    [PASSWORD_RESET_MAIL]: (job: PasswordResetMailJob) => identity.passwordReset.mailRequested(job),
    [ACCOUNT_DELETION_SWEEP]: async () => void (await identity.deletion.executeDue()),
    [SESSION_IDLE_EXPIRY]: async () => void (await identity.housekeeping.expireIdleSessions()),
    [EXPIRED_LINK_CLEANUP]: async () => void (await identity.housekeeping.removeExpiredLinks()),
  }),
  schedules: (identity) => [
    ...(identity.config.accountDeletionIntervalSeconds > 0
      ? [{ kind: ACCOUNT_DELETION_SWEEP, everySeconds: identity.config.accountDeletionIntervalSeconds }]
      : []),
    { kind: SESSION_IDLE_EXPIRY, everySeconds: SESSION_IDLE_EXPIRY_SECONDS },
    { kind: EXPIRED_LINK_CLEANUP, everySeconds: EXPIRED_LINK_CLEANUP_SECONDS },
  ],
});

export type IdentityApi = ApiOf<typeof identityDomain>;
