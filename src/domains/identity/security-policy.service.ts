import { domainToASCII } from 'node:url';
import type { Orm } from '../../db/orm';
import type { EventBus } from '../../events/event-bus';
import { AppError, NULL_ISSUE, type ValidationIssue } from '../../errors/catalog';
import { requireAuthenticated } from '../../auth/policy';
import type { Principal, RequestMeta } from '../../auth/principal';
import { currentEm } from '../../db/unit-of-work';
import type { Page } from '../../pagination';
import type { AuditService } from '../audit';
import type { CompanyAdminService } from './company-admin.service';
import { Company } from './company.entity';
import { Session } from './session.entity';
import { describeUserAgent } from './user-agent';
import { normalizeEmailDomain } from './identity.service';
import { ssoProviderNames } from './sso.config';
import { SecurityPolicy } from './security-policy.entity';
import {
  defaultPolicy,
  liveSessionWhere,
  POLICY_MIN_PASSWORD_LENGTH,
  viewOf,
  type SecurityPolicyEnforcer,
  type SecurityPolicyView,
} from './security-policy.enforcer';
import { compileAllowlist, ipAllowed, parseCidr } from '../../net/address-list';

export const POLICY_MAX_PASSWORD_LENGTH = 128;
export const IDLE_TIMEOUT_BOUNDS = { min: 5, max: 43_200 } as const;
export const API_KEY_MAX_AGE_BOUNDS = { min: 1, max: 3650 } as const;
const MAX_LIST_ENTRIES = 100;
/** Default page size of the company session list. */
export const COMPANY_SESSIONS_PER_PAGE = 50;



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

/** A DNS name in ASCII; an internationalized domain is checked in its A-label (punycode) form. */
const DOMAIN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/;

/**
 * Administration of company security policies: read and change them
 * (owners, admins, company keys; a superadmin for any company), and the
 * company's active sessions. Every change publishes `security_policy.changed`
 * so the enforcer's caches drop the company.
 */
export class SecurityPolicyService {
  constructor(
    private readonly orm: Orm,
    private readonly bus: EventBus,
    private readonly audit: AuditService,
    private readonly enforcer: SecurityPolicyEnforcer,
    private readonly companies: CompanyAdminService,
  ) {}

  async get(principal: Principal, companyId?: string | null): Promise<SecurityPolicyView> {
    const target = await this.targetCompany(principal, companyId);
    return (await this.enforcer.load(target)).view;
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
    // The change and its audit entry commit in one flush (the audit log's).
    await this.audit.record({
      action: 'security_policy.updated',
      companyId: target,
      principal,
      meta,
      targetType: 'company',
      targetId: target,
      data: { changes, version: row.version },
    });
    this.bus.publish('security_policy.changed', { companyId: target, version: row.version });
    return viewOf(row);
  }

  /** The company's active sessions (not revoked, unexpired, not idle past the policy), newest first. */
  async listSessions(
    principal: Principal,
    options: { page: number; perPage: number; companyId?: string | null },
  ): Promise<Page<CompanySessionView>> {
    const target = await this.targetCompany(principal, options.companyId);
    const policy = await this.enforcer.load(target);
    const [sessions, total] = await currentEm(this.orm).findAndCount(
      Session,
      liveSessionWhere(policy, Date.now()),
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

  private targetCompany(principal: Principal, companyId?: string | null): Promise<string> {
    return this.companies.managedCompanyId(principal, companyId);
  }
}

function intIn(value: unknown, min: number, max: number): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}

/** Checks every given field (all problems at once) and returns the normalized values. */
export function validatePatch(patch: SecurityPolicyPatch): Partial<Omit<SecurityPolicyView, 'companyId' | 'updatedAt' | 'updatedBy'>> {
  const issues: ValidationIssue[] = [];
  const out: Partial<Omit<SecurityPolicyView, 'companyId' | 'updatedAt' | 'updatedBy'>> = {};
  const loc = (field: PolicyField, ...rest: (string | number)[]) => ['body', POLICY_FIELDS[field], ...rest];
  // A null is not a value given: it is one issue, "must not be null", not that and a wrong type besides.
  const given = (field: PolicyField) => Object.prototype.hasOwnProperty.call(patch, field) && patch[field] != null;
  const notNull = (field: PolicyField) => issues.push({ loc: loc(field), ...NULL_ISSUE });
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
        // Stored as addresses are (NFC), checked as DNS has it: bücher.example is xn--bcher-kva.example.
        const domain = normalizeEmailDomain(item);
        return DOMAIN.test(domainToASCII(domain)) ? domain : null;
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
