import { BlockList, isIPv4, isIPv6 } from 'node:net';
import type { Orm } from '../../db/orm';
import type { EventBus } from '../../events/event-bus';
import { AppError, type ValidationIssue } from '../../errors/catalog';
import { requireAuthenticated } from '../../auth/policy';
import type { Principal, RequestMeta, UserPrincipal } from '../../auth/principal';
import { currentEm } from '../../db/unit-of-work';
import type { AuditService, Page } from '../audit/audit.service';
import { Company } from '../identity/company.entity';
import { Session } from '../identity/session.entity';
import { describeUserAgent } from '../identity/user-agent';
import { ssoProviderNames } from '../identity/sso.config';
import { SecurityPolicy } from './security-policy.entity';
import { VersionedCache, type ReadStore } from '../../db/read-store';

/** The shortest password any policy may allow (and the default). */
export const POLICY_MIN_PASSWORD_LENGTH = 12;
export const POLICY_MAX_PASSWORD_LENGTH = 128;
export const IDLE_TIMEOUT_BOUNDS = { min: 5, max: 43_200 } as const;
export const API_KEY_MAX_AGE_BOUNDS = { min: 1, max: 3650 } as const;
const MAX_LIST_ENTRIES = 100;
/** Default page size of the company session list. */
export const COMPANY_SESSIONS_PER_PAGE = 50;

/** A company's policy as the API shows it (camelCase; REST maps to snake_case). */
export interface SecurityPolicyView {
  companyId: string;
  mfaRequired: boolean;
  minPasswordLength: number;
  sessionIdleTimeoutMinutes: number | null;
  allowedSsoProviders: string[];
  ssoSignupEmailDomains: string[];
  ipAllowlist: string[];
  apiKeyMaxAgeDays: number | null;
  /** Null while the company has never changed its policy (all defaults). */
  updatedAt: Date | null;
  updatedBy: string | null;
}

/** The fields an update may set; a field left out (undefined) keeps its value. */
export interface SecurityPolicyPatch {
  mfaRequired?: boolean | null;
  minPasswordLength?: number | null;
  sessionIdleTimeoutMinutes?: number | null;
  allowedSsoProviders?: string[] | null;
  ssoSignupEmailDomains?: string[] | null;
  ipAllowlist?: string[] | null;
  apiKeyMaxAgeDays?: number | null;
}

type PolicyField = keyof SecurityPolicyPatch;

/** Documented (REST) names, used in validation `loc` and in the audit record. */
export const POLICY_FIELDS: Record<PolicyField, string> = {
  mfaRequired: 'mfa_required',
  minPasswordLength: 'min_password_length',
  sessionIdleTimeoutMinutes: 'session_idle_timeout_minutes',
  allowedSsoProviders: 'allowed_sso_providers',
  ssoSignupEmailDomains: 'sso_signup_email_domains',
  ipAllowlist: 'ip_allowlist',
  apiKeyMaxAgeDays: 'api_key_max_age_days',
};

/** One active session of a company, as the administrators' list shows it. */
export interface CompanySessionView {
  id: string;
  userId: string;
  email: string;
  device: string | null;
  userAgent: string | null;
  ip: string | null;
  createdAt: Date;
  lastSeenAt: Date;
}

/** A policy ready for the hot path: the allow-list parsed once per policy version. */
export interface CompiledPolicy {
  view: SecurityPolicyView;
  version: number;
  allowlist: BlockList | null;
}

export function defaultPolicy(companyId: string): SecurityPolicyView {
  return {
    companyId,
    mfaRequired: false,
    minPasswordLength: POLICY_MIN_PASSWORD_LENGTH,
    sessionIdleTimeoutMinutes: null,
    allowedSsoProviders: [...ssoProviderNames],
    ssoSignupEmailDomains: [],
    ipAllowlist: [],
    apiKeyMaxAgeDays: null,
    updatedAt: null,
    updatedBy: null,
  };
}

/** A parsed CIDR (a bare address is a /32 or /128), or null when it is not one. */
export function parseCidr(value: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } | null {
  const [address, prefixText, ...rest] = value.trim().split('/');
  if (rest.length || !address) return null;
  const family = isIPv4(address) ? 'ipv4' : isIPv6(address) ? 'ipv6' : null;
  if (!family) return null;
  const max = family === 'ipv4' ? 32 : 128;
  if (prefixText === undefined) return { address, prefix: max, family };
  if (!/^\d{1,3}$/.test(prefixText)) return null;
  const prefix = Number(prefixText);
  return prefix <= max ? { address, prefix, family } : null;
}

/** An IPv4-mapped IPv6 address (::ffff:10.1.2.3) is checked as the IPv4 address. */
function normalizeIp(ip: string): { address: string; family: 'ipv4' | 'ipv6' } | null {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  const address = mapped ? mapped[1]! : ip;
  if (isIPv4(address)) return { address, family: 'ipv4' };
  if (isIPv6(address)) return { address, family: 'ipv6' };
  return null;
}

function compileAllowlist(cidrs: string[]): BlockList | null {
  if (!cidrs.length) return null;
  const list = new BlockList();
  for (const cidr of cidrs) {
    const parsed = parseCidr(cidr);
    if (parsed) list.addSubnet(parsed.address, parsed.prefix, parsed.family);
  }
  return list;
}

/** 403 ip_not_allowed when the policy has an allow-list and `ip` is outside it, else null. */
export function ipRefusal(policy: CompiledPolicy, ip: string): AppError | null {
  if (ipAllowed(policy.allowlist, ip)) return null;
  return new AppError('ip_not_allowed', `Your company only accepts requests from its allowed networks; ${ip} is not one of them`);
}

/** The idle timeout of the policy's sessions in milliseconds, or null for none. */
export function idleTimeoutMs(policy: CompiledPolicy): number | null {
  const minutes = policy.view.sessionIdleTimeoutMinutes;
  return minutes === null ? null : minutes * 60_000;
}

/** 401 token_invalid when a company key created at `createdAt` is older than the policy allows, else null. */
export function keyAgeRefusal(policy: CompiledPolicy, createdAt: number, now: number): AppError | null {
  const days = policy.view.apiKeyMaxAgeDays;
  if (days === null || now - createdAt <= days * 86_400_000) return null;
  return new AppError(
    'token_invalid',
    `This API key is older than the ${days} days your company's security policy allows; create a new key`,
  );
}

export function ipAllowed(allowlist: BlockList | null, ip: string): boolean {
  if (!allowlist) return true;
  const normalized = normalizeIp(ip);
  return normalized !== null && allowlist.check(normalized.address, normalized.family);
}

const DOMAIN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/;

/**
 * Company security policies: read and change them (owners, admins, company
 * keys; a superadmin for any company), and the checks the rest of the core
 * runs on the hot path. Policies are cached per company and dropped on the
 * `security_policy.changed` event, which every update publishes.
 */
export class SecurityPolicyService {
  private readonly cache = new Map<string, CompiledPolicy>();
  /** Bumped on invalidation, so a load that raced a change is not cached. */
  private readonly epochs = new Map<string, number>();
  /** Each user's MFA flag, until the next write to the database. */
  private readonly mfaEnabled: VersionedCache<boolean>;

  constructor(
    private readonly orm: Orm,
    private readonly reads: ReadStore,
    private readonly bus: EventBus,
    private readonly audit: AuditService,
  ) {
    this.mfaEnabled = new VersionedCache(reads);
    bus.subscribe('security_policy.changed', ({ companyId }) => this.invalidate(companyId));
  }

  // ---- administration -------------------------------------------------------------

  async get(principal: Principal, companyId?: string | null): Promise<SecurityPolicyView> {
    const target = await this.targetCompany(principal, companyId);
    return (await this.load(target)).view;
  }

  /** Partial update: fields left out keep their value. Audited `security_policy.updated` with the changes. */
  async update(principal: Principal, patch: SecurityPolicyPatch, meta: RequestMeta, companyId?: string | null): Promise<SecurityPolicyView> {
    const target = await this.targetCompany(principal, companyId);
    const caller = requireAuthenticated(principal);
    const next = validatePatch(patch);
    if (next.ipAllowlist?.length && target === caller.companyId && !ipAllowed(compileAllowlist(next.ipAllowlist), meta.ip)) {
      throw AppError.validation([
        {
          loc: ['body', 'ip_allowlist'],
          msg: `must include the address of this request (${meta.ip}), or you would lock yourself out`,
          type: 'value_error',
        },
      ]);
    }
    const em = currentEm(this.orm);
    let row = await em.findOne(SecurityPolicy, { company: target });
    const before = row ? viewOf(row) : defaultPolicy(target);
    const changes: Record<string, { from: unknown; to: unknown }> = {};
    for (const key of Object.keys(next) as PolicyField[]) {
      const to = next[key];
      if (JSON.stringify(before[key]) !== JSON.stringify(to)) changes[POLICY_FIELDS[key]] = { from: before[key], to };
    }
    if (!Object.keys(changes).length) return before;
    row ??= em.create(SecurityPolicy, { company: em.getReference(Company, target) });
    Object.assign(row, next);
    row.version += 1;
    row.updatedAt = new Date();
    row.updatedBy = caller.kind === 'user' ? caller.userId : caller.keyId;
    await em.flush();
    this.bus.publish('security_policy.changed', { companyId: target, version: row.version });
    await this.audit.record({
      action: 'security_policy.updated',
      companyId: target,
      principal,
      meta,
      targetType: 'company',
      targetId: target,
      data: { changes, version: row.version },
    });
    return viewOf(row);
  }

  /** The company's active sessions (not revoked, unexpired, not idle past the policy), newest first. */
  async listSessions(
    principal: Principal,
    options: { page: number; perPage: number; companyId?: string | null },
  ): Promise<Page<CompanySessionView>> {
    const target = await this.targetCompany(principal, options.companyId);
    const policy = await this.load(target);
    const now = Date.now();
    const idle = policy.view.sessionIdleTimeoutMinutes;
    const [sessions, total] = await currentEm(this.orm).findAndCount(
      Session,
      {
        company: target,
        revokedAt: null,
        expiresAt: { $gt: new Date(now) },
        ...(idle === null ? {} : { lastSeenAt: { $gt: new Date(now - idle * 60_000) } }),
      },
      {
        populate: ['user'],
        orderBy: { createdAt: 'desc', id: 'desc' },
        limit: options.perPage,
        offset: (options.page - 1) * options.perPage,
      },
    );
    const items = sessions.map((s) => ({
      id: s.id,
      userId: s.user.id,
      email: s.user.email,
      device: describeUserAgent(s.userAgent),
      userAgent: s.userAgent,
      ip: s.ip,
      createdAt: s.createdAt,
      lastSeenAt: s.lastSeenAt,
    }));
    return { items, page: options.page, perPage: options.perPage, total };
  }

  // ---- enforcement (hot path; cached) ----------------------------------------------

  /** The company's policy, from the cache when it has it. */
  async policyOf(companyId: string): Promise<CompiledPolicy> {
    return this.cache.get(companyId) ?? this.load(companyId);
  }

  /** The company's policy when it is cached: the hot path's synchronous answer; undefined means call policyOf. */
  cachedPolicy(companyId: string): CompiledPolicy | undefined {
    return this.cache.get(companyId);
  }

  /** 401 token_invalid when a company key is older than the policy's maximum age. */
  async checkKeyAge(companyId: string, createdAt: number, now: number): Promise<void> {
    const refusal = keyAgeRefusal(await this.policyOf(companyId), createdAt, now);
    if (refusal) throw refusal;
  }

  /** Whether the signed-in user must still enrol in MFA before using the API (mfa_required, MFA off). */
  async mfaEnrollmentPending(principal: UserPrincipal): Promise<boolean> {
    return this.enrollmentPendingUnder(await this.policyOf(principal.companyId), principal);
  }

  /** mfaEnrollmentPending from memory and the read cache; undefined when the policy is not cached yet. */
  cachedMfaEnrollmentPending(principal: UserPrincipal): boolean | undefined {
    const policy = this.cache.get(principal.companyId);
    return policy && this.enrollmentPendingUnder(policy, principal);
  }

  private enrollmentPendingUnder(policy: CompiledPolicy, principal: UserPrincipal): boolean {
    if (!policy.view.mfaRequired) return false;
    const enabled = this.mfaEnabled.get(principal.userId, () => {
      const row = this.reads.get<{ mfa_enabled: number }>('select mfa_enabled from users where id = ?', principal.userId);
      // A deleted user has no session left to use; only an existing user without MFA owes enrolment.
      return row === undefined || row.mfa_enabled === 1;
    });
    return !enabled;
  }

  /** 422 when `password` is shorter than the company's minimum (counted in characters). */
  async checkPasswordLength(companyId: string, password: string, loc: (string | number)[]): Promise<void> {
    const min = (await this.policyOf(companyId)).view.minPasswordLength;
    if ([...password].length >= min) return;
    throw AppError.validation(
      [{ loc, msg: `must be at least ${min} characters (your company's security policy)`, type: 'string_too_short' }],
      'The new password was not accepted',
    );
  }

  /** Why a provider sign-in of a user of the company is refused by its policy, or null. */
  async ssoRefusal(companyId: string, provider: string, signUpEmail?: string): Promise<{ reason: string; error: AppError } | null> {
    const { view } = await this.policyOf(companyId);
    if (!view.allowedSsoProviders.includes(provider)) {
      return {
        reason: 'provider_not_allowed',
        error: new AppError('forbidden', `Your company does not allow signing in with ${provider}; use another sign-in method`),
      };
    }
    if (signUpEmail !== undefined && view.ssoSignupEmailDomains.length) {
      const domain = signUpEmail.slice(signUpEmail.lastIndexOf('@') + 1).toLowerCase();
      if (!view.ssoSignupEmailDomains.includes(domain)) {
        return {
          reason: 'email_domain_not_allowed',
          error: new AppError('forbidden', `Your company does not allow signing up by single sign-on with an address at ${domain}`),
        };
      }
    }
    return null;
  }

  private invalidate(companyId: string): void {
    this.cache.delete(companyId);
    this.epochs.set(companyId, (this.epochs.get(companyId) ?? 0) + 1);
  }

  private async load(companyId: string): Promise<CompiledPolicy> {
    const epoch = this.epochs.get(companyId) ?? 0;
    const row = await this.orm.em.fork().findOne(SecurityPolicy, { company: companyId });
    const view = row ? viewOf(row) : defaultPolicy(companyId);
    const compiled: CompiledPolicy = { view, version: row?.version ?? 0, allowlist: compileAllowlist(view.ipAllowlist) };
    if ((this.epochs.get(companyId) ?? 0) === epoch) {
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(companyId, compiled);
    }
    return compiled;
  }

  /**
   * The company an administration call is about: the caller's own (owners,
   * admins, company keys), or with `companyId` any company for a superadmin.
   */
  private async targetCompany(principal: Principal, companyId?: string | null): Promise<string> {
    const caller = requireAuthenticated(principal);
    const superadmin = caller.kind === 'user' && caller.isSuperadmin;
    if (companyId && companyId !== caller.companyId) {
      if (!superadmin) throw new AppError('forbidden', "Only a superadmin may manage another company's security");
      if (!(await currentEm(this.orm).count(Company, { id: companyId }))) throw new AppError('not_found', 'No such company');
      return companyId;
    }
    if (!superadmin && caller.role !== 'admin' && caller.role !== 'owner') throw new AppError('forbidden', 'Admin role required');
    return caller.companyId;
  }
}

function viewOf(row: SecurityPolicy): SecurityPolicyView {
  return {
    companyId: row.company.id,
    mfaRequired: row.mfaRequired,
    minPasswordLength: row.minPasswordLength,
    sessionIdleTimeoutMinutes: row.sessionIdleTimeoutMinutes,
    allowedSsoProviders: [...row.allowedSsoProviders],
    ssoSignupEmailDomains: [...row.ssoSignupEmailDomains],
    ipAllowlist: [...row.ipAllowlist],
    apiKeyMaxAgeDays: row.apiKeyMaxAgeDays,
    updatedAt: row.version ? row.updatedAt : null,
    updatedBy: row.updatedBy,
  };
}

function intIn(value: unknown, min: number, max: number): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}

/** Checks every given field (all problems at once) and returns the normalized values. */
export function validatePatch(patch: SecurityPolicyPatch): Partial<Omit<SecurityPolicyView, 'companyId' | 'updatedAt' | 'updatedBy'>> {
  const issues: ValidationIssue[] = [];
  const out: Partial<Omit<SecurityPolicyView, 'companyId' | 'updatedAt' | 'updatedBy'>> = {};
  const loc = (field: PolicyField, ...rest: (string | number)[]) => ['body', POLICY_FIELDS[field], ...rest];
  const given = (field: PolicyField) => Object.prototype.hasOwnProperty.call(patch, field) && patch[field] !== undefined;
  const notNull = (field: PolicyField) => issues.push({ loc: loc(field), msg: 'must not be null', type: 'none_not_allowed' });
  const list = (field: 'allowedSsoProviders' | 'ssoSignupEmailDomains' | 'ipAllowlist', check: (item: string) => string | null, msg: string) => {
    const value = patch[field];
    if (!Array.isArray(value)) return notNull(field);
    if (value.length > MAX_LIST_ENTRIES) {
      issues.push({ loc: loc(field), msg: `must have at most ${MAX_LIST_ENTRIES} entries`, type: 'too_long' });
      return;
    }
    const seen = new Set<string>();
    value.forEach((item, index) => {
      const normalized = typeof item === 'string' ? check(item) : null;
      if (normalized === null) issues.push({ loc: loc(field, index), msg, type: 'value_error' });
      else seen.add(normalized);
    });
    out[field] = [...seen];
  };

  if (given('mfaRequired')) {
    if (typeof patch.mfaRequired !== 'boolean') issues.push({ loc: loc('mfaRequired'), msg: 'must be a boolean', type: 'bool_type' });
    else out.mfaRequired = patch.mfaRequired;
  }
  if (given('minPasswordLength')) {
    if (!intIn(patch.minPasswordLength, POLICY_MIN_PASSWORD_LENGTH, POLICY_MAX_PASSWORD_LENGTH)) {
      issues.push({
        loc: loc('minPasswordLength'),
        msg: `must be an integer from ${POLICY_MIN_PASSWORD_LENGTH} to ${POLICY_MAX_PASSWORD_LENGTH}`,
        type: 'range',
      });
    } else out.minPasswordLength = patch.minPasswordLength!;
  }
  if (Object.prototype.hasOwnProperty.call(patch, 'sessionIdleTimeoutMinutes') && patch.sessionIdleTimeoutMinutes !== undefined) {
    const value = patch.sessionIdleTimeoutMinutes;
    if (value !== null && !intIn(value, IDLE_TIMEOUT_BOUNDS.min, IDLE_TIMEOUT_BOUNDS.max)) {
      issues.push({
        loc: loc('sessionIdleTimeoutMinutes'),
        msg: `must be null or an integer from ${IDLE_TIMEOUT_BOUNDS.min} to ${IDLE_TIMEOUT_BOUNDS.max}`,
        type: 'range',
      });
    } else out.sessionIdleTimeoutMinutes = value;
  }
  if (Object.prototype.hasOwnProperty.call(patch, 'apiKeyMaxAgeDays') && patch.apiKeyMaxAgeDays !== undefined) {
    const value = patch.apiKeyMaxAgeDays;
    if (value !== null && !intIn(value, API_KEY_MAX_AGE_BOUNDS.min, API_KEY_MAX_AGE_BOUNDS.max)) {
      issues.push({
        loc: loc('apiKeyMaxAgeDays'),
        msg: `must be null or an integer from ${API_KEY_MAX_AGE_BOUNDS.min} to ${API_KEY_MAX_AGE_BOUNDS.max}`,
        type: 'range',
      });
    } else out.apiKeyMaxAgeDays = value;
  }
  if (given('allowedSsoProviders') || patch.allowedSsoProviders === null) {
    list(
      'allowedSsoProviders',
      (item) => ((ssoProviderNames as readonly string[]).includes(item) ? item : null),
      `must be one of ${ssoProviderNames.join(', ')}`,
    );
  }
  if (given('ssoSignupEmailDomains') || patch.ssoSignupEmailDomains === null) {
    list(
      'ssoSignupEmailDomains',
      (item) => {
        const domain = item.trim().toLowerCase().replace(/^@/, '');
        return DOMAIN.test(domain) ? domain : null;
      },
      'must be an email domain such as example.com',
    );
  }
  if (given('ipAllowlist') || patch.ipAllowlist === null) {
    list(
      'ipAllowlist',
      (item) => {
        const parsed = parseCidr(item);
        return parsed ? `${parsed.address}/${parsed.prefix}` : null;
      },
      'must be an IPv4 or IPv6 address or CIDR, e.g. 10.0.0.0/8 or 2001:db8::/32',
    );
  }
  for (const field of ['mfaRequired', 'minPasswordLength'] as const) {
    if (patch[field] === null) notNull(field);
  }
  if (issues.length) throw AppError.validation(issues, 'The security policy was not accepted');
  return out;
}
