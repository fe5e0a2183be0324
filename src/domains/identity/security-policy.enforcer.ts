import type { BlockList } from 'node:net';
import type { FilterQuery } from '@mikro-orm/core';
import type { Orm } from '../../db/orm';
import type { EventBus } from '../../events/event-bus';
import { AppError } from '../../errors/catalog';
import { textLength } from '../../errors/text-length';
import type { ModuleKeyPrincipal, UserPrincipal } from '../../auth/principal';
import type { ReadStore } from '../../db/read-store';
import { EXTERNAL_WRITES_SEEN_MS, VersionedCache, type ChangeSignal } from '../../db/change-signal';
import { SecurityPolicy } from './security-policy.entity';
import type { Session } from './session.entity';
import { ssoProviderNames } from './sso.config';
import { normalizeEmailDomain } from './identity.service';
import { compileAllowlist, ipAllowed } from '../../net/address-list';

/** The shortest password any policy may allow (and the default). */
export const POLICY_MIN_PASSWORD_LENGTH = 12;

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

/**
 * Whether a session last seen at `lastSeen` is idle past the policy at `now`:
 * the one rule for it. A request on such a session is refused and ends it
 * (AuthService), so every session list and count leaves it out too
 * (liveSessionWhere), and administrators see only sessions that still work.
 */
export function idlePastPolicy(policy: CompiledPolicy, lastSeen: number, now: number): boolean {
  const timeout = idleTimeoutMs(policy);
  return timeout !== null && now - lastSeen > timeout;
}

/** The sessions of the policy's company that still work at `now` (not revoked, unexpired, not idlePastPolicy), as a filter. */
export function liveSessionWhere(policy: CompiledPolicy, now: number) {
  const timeout = idleTimeoutMs(policy);
  const where = {
    company: policy.view.companyId,
    revokedAt: null,
    expiresAt: { $gt: new Date(now) },
    // The negation of idlePastPolicy: now - lastSeenAt <= timeout.
    ...(timeout === null ? {} : { lastSeenAt: { $gte: new Date(now - timeout) } }),
  };
  return where satisfies FilterQuery<Session>;
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


/**
 * Enforcement of company security policies: the checks identity and every
 * transport run on the hot path (IP allow-list, idle sessions, key age, MFA
 * enrolment, password length, SSO rules). Policies are cached per company
 * and dropped on `security_policy.changed`, which every change of this
 * process publishes. A change another process made (a standalone subgraph,
 * the CLI, another node) reaches the cache through the change signal: once
 * the data changed at all, a cached policy is checked against its row's
 * version (one indexed read) before it is used again.
 * Administering policies (read, change) is SecurityPolicyService.
 */
export class SecurityPolicyEnforcer {
  /** Each company's policy, with the change-signal version at which its row was last seen to match it, and when. */
  private readonly cache = new Map<string, { policy: CompiledPolicy; seen: number; checkedAt: number }>();
  /** Bumped on invalidation, so a load that raced a change is not cached. */
  private readonly epochs = new Map<string, number>();
  /** Each user's MFA flag, until the next write to the database. */
  private readonly mfaEnabled: VersionedCache<boolean>;

  constructor(
    private readonly orm: Orm,
    private readonly reads: ReadStore,
    private readonly changes: ChangeSignal,
    bus: EventBus,
  ) {
    this.mfaEnabled = new VersionedCache(changes);
    bus.subscribe('security_policy.changed', ({ companyId }) => this.invalidate(companyId));
  }

  /** The company's policy, from the cache when it has it. */
  async policyOf(companyId: string): Promise<CompiledPolicy> {
    return this.cachedPolicy(companyId) ?? this.load(companyId);
  }

  /** The company's policy when it is cached and current: the hot path's synchronous answer; undefined means call policyOf. */
  cachedPolicy(companyId: string): CompiledPolicy | undefined {
    const entry = this.cache.get(companyId);
    if (!entry) return undefined;
    const version = this.changes.version();
    if (entry.seen === version) return entry.policy;
    // This process's own changes arrive by event; another's may take EXTERNAL_WRITES_SEEN_MS, so under a
    // stream of writes the row is read at most that often.
    const now = Date.now();
    if (now - entry.checkedAt < EXTERNAL_WRITES_SEEN_MS) return entry.policy;
    const row = this.reads.get<{ version: number }>('select version from security_policies where company_id = ?', companyId);
    if ((row?.version ?? 0) !== entry.policy.version) {
      this.invalidate(companyId);
      return undefined;
    }
    entry.seen = version;
    entry.checkedAt = now;
    return entry.policy;
  }

  /**
   * 403 ip_not_allowed when the company's allow-list leaves `ip` out: for the ways into a session
   * (sign-in, token refresh, an invitation's acceptance), which no request-path check sees since
   * they carry no credential yet.
   */
  async checkIp(companyId: string, ip: string): Promise<void> {
    const refusal = ipRefusal(await this.policyOf(companyId), ip);
    if (refusal) throw refusal;
  }

  /** 401 token_invalid when a company key is older than the policy's maximum age. */
  async checkKeyAge(companyId: string, createdAt: number, now: number): Promise<void> {
    const refusal = keyAgeRefusal(await this.policyOf(companyId), createdAt, now);
    if (refusal) throw refusal;
  }

  /** Whether the signed-in user must still enrol in MFA before using the API (mfa_required, MFA off). */
  async mfaEnrollmentPending(principal: UserPrincipal | ModuleKeyPrincipal): Promise<boolean> {
    return this.enrollmentPendingUnder(await this.policyOf(principal.companyId), principal);
  }

  /** mfaEnrollmentPending from memory and the read cache; undefined when the policy is not cached yet. */
  cachedMfaEnrollmentPending(principal: UserPrincipal | ModuleKeyPrincipal): boolean | undefined {
    const policy = this.cachedPolicy(principal.companyId);
    return policy && this.enrollmentPendingUnder(policy, principal);
  }

  private enrollmentPendingUnder(policy: CompiledPolicy, principal: UserPrincipal | ModuleKeyPrincipal): boolean {
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
    if (textLength(password) >= min) return;
    throw AppError.validation(
      [{ loc, msg: `must be at least ${min} characters (your company's security policy)`, type: 'string_too_short' }],
      'The new password was not accepted',
    );
  }

  /** Why a provider sign-in of a user of the company is refused by its policy, or null. */
  async ssoRefusal(companyId: string, provider: string, ip: string, signUpEmail?: string): Promise<{ reason: string; error: AppError } | null> {
    const policy = await this.policyOf(companyId);
    const { view } = policy;
    const outside = ipRefusal(policy, ip);
    if (outside) return { reason: 'ip_not_allowed', error: outside };
    if (!view.allowedSsoProviders.includes(provider)) {
      return {
        reason: 'provider_not_allowed',
        error: new AppError('forbidden', `Your company does not allow signing in with ${provider}; use another sign-in method`),
      };
    }
    if (signUpEmail !== undefined && view.ssoSignupEmailDomains.length) {
      const domain = normalizeEmailDomain(signUpEmail.slice(signUpEmail.lastIndexOf('@') + 1));
      // Normalised again: a policy written before domains were stored in Unicode may hold an A-label.
      if (!view.ssoSignupEmailDomains.some((allowed) => normalizeEmailDomain(allowed) === domain)) {
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

  /** The company's policy as stored now (cached for the hot path unless a change raced the read). */
  async load(companyId: string): Promise<CompiledPolicy> {
    const epoch = this.epochs.get(companyId) ?? 0;
    // Taken before the read: a change landing in between only costs a version check later.
    const seen = this.changes.version();
    const row = await this.orm.em.fork().findOne(SecurityPolicy, { company: companyId });
    const view = row ? viewOf(row) : defaultPolicy(companyId);
    const compiled: CompiledPolicy = { view, version: row?.version ?? 0, allowlist: compileAllowlist(view.ipAllowlist) };
    if ((this.epochs.get(companyId) ?? 0) === epoch) {
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(companyId, { policy: compiled, seen, checkedAt: Date.now() });
    }
    return compiled;
  }
}

export function viewOf(row: SecurityPolicy): SecurityPolicyView {
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
