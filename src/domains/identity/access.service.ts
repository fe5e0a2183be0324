import { anonymous, type ApiKeyPrincipal, type ModuleKeyPrincipal, type Principal, type UserPrincipal } from '../../auth/principal';
import { AppError, isAppError } from '../../errors/catalog';
import { moduleKeyOutsideModules } from '../../auth/policy';
import type { AuthService } from './auth.service';
import type { SessionCookieService } from './session-cookie.service';
import { ipRefusal, keyAgeRefusal, type CompiledPolicy, type SecurityPolicyEnforcer } from './security-policy.enforcer';

const BEARER = /^Bearer[ ]+(\S+)\s*$/i;

type Resolved<T> = T | Promise<T>;

/**
 * Who is calling, for every transport (HTTP, WebSocket, the REST adapter,
 * a standalone subgraph): a credential resolved to a principal, with the
 * company's IP allow-list applied as soon as the credential is known. A
 * refused credential turns the caller anonymous with the reason kept, so
 * whatever needs a credential answers why (401 token_expired, 403
 * ip_not_allowed, …). Answers synchronously when memory alone can tell (the
 * hot path), otherwise with a promise.
 */
export class AccessService {
  constructor(
    private readonly auth: AuthService,
    private readonly cookies: SessionCookieService,
    private readonly policies: SecurityPolicyEnforcer,
  ) {}

  /** An `Authorization` header value (or a graphql-ws `authorization` connection parameter). */
  bearer(authorization: string | undefined, ip: string): Resolved<Principal> {
    if (!authorization) return anonymous;
    const match = BEARER.exec(authorization);
    if (!match) return { kind: 'anonymous', credentialError: new AppError('token_invalid', 'Use "Authorization: Bearer <token>"') };
    const cached = this.auth.cachedPrincipal(match[1]!);
    if (cached) {
      const policy = this.policies.cachedPolicy(cached.companyId);
      if (policy) return withIpAllowlist(cached, policy, ip);
    }
    return this.refused(this.auth.authenticate(match[1]!)).then((principal) => this.allowlisted(principal, ip));
  }

  /** The browser session cookie (`service_token`); the transport has checked the request's origin. */
  cookie(token: string, ip: string): Promise<Principal> {
    return this.refused(this.cookies.authenticate(token)).then((principal) => this.allowlisted(principal, ip));
  }

  /**
   * The principal a WebSocket connection may run as: no socket at all while
   * MFA enrolment is owed (enrolment is not done over subscriptions).
   */
  async socket(principal: Principal): Promise<Principal> {
    // AI-modules keys are for the AI modules API over HTTP; dashboards sign in.
    if (principal.kind === 'module_key') return { kind: 'anonymous', credentialError: moduleKeyOutsideModules() };
    if (principal.kind === 'user' && (await this.policies.mfaEnrollmentPending(principal))) {
      return { kind: 'anonymous', credentialError: enrollmentRequired() };
    }
    return principal;
  }

  /**
   * Why a socket opened by `principal` from `ip` may no longer run anything:
   * a company key past the policy's maximum age (401 token_invalid, judged
   * every time: keys age without a policy change), or a policy changed since
   * it was checked (`checked`: the policy version it was last judged by),
   * 403 ip_not_allowed or mfa_enrollment_required; else null, with the
   * version judged by now. Nothing more to judge while the version is the
   * same (the sweep over every open socket stays cheap); synchronous while
   * the policy is cached.
   */
  socketRecheck(principal: UserPrincipal | ApiKeyPrincipal, ip: string, checked: number): Resolved<{ refusal: AppError | null; version: number }> {
    const judge = (policy: CompiledPolicy): Resolved<{ refusal: AppError | null; version: number }> => {
      // A key ages without any change of policy: judged every time, as each HTTP request with it is.
      const aged = principal.kind === 'api_key' ? keyAgeRefusal(policy, principal.createdAt, Date.now()) : null;
      if (aged) return { refusal: aged, version: policy.version };
      if (policy.version === checked) return { refusal: null, version: checked };
      const refusal = ipRefusal(policy, ip);
      if (refusal || principal.kind !== 'user') return { refusal, version: policy.version };
      const pending = this.policies.cachedMfaEnrollmentPending(principal) ?? this.policies.mfaEnrollmentPending(principal);
      const verdict = (owed: boolean) => ({ refusal: owed ? enrollmentRequired() : null, version: policy.version });
      return typeof pending === 'boolean' ? verdict(pending) : pending.then(verdict);
    };
    const cached = this.policies.cachedPolicy(principal.companyId);
    return cached ? judge(cached) : this.policies.policyOf(principal.companyId).then(judge);
  }

  /** Open sockets whose credential another process ended (see AuthService.endedCredentials), each with its 401 problem. */
  endedCredentials<P extends UserPrincipal | ApiKeyPrincipal>(principals: readonly P[]): Promise<Map<P, AppError>> {
    return this.auth.endedCredentials(principals);
  }

  /** When an access token stops being valid (ms), to close a socket opened with it then; null for a credential that does not expire by itself (keys, the session cookie). */
  expiresAt(authorization: string | undefined): number | null {
    const match = authorization ? BEARER.exec(authorization) : null;
    return match ? this.auth.accessTokenExpiry(match[1]!) : null;
  }

  /** Whether the caller is a user (or a user's AI-modules key) whose company requires MFA the user has not enrolled in yet. */
  enrollmentPending(principal: Principal): Resolved<boolean> {
    if (principal.kind !== 'user' && principal.kind !== 'module_key') return false;
    return this.policies.cachedMfaEnrollmentPending(principal) ?? this.policies.mfaEnrollmentPending(principal);
  }

  private async refused(resolving: Promise<UserPrincipal | ApiKeyPrincipal | ModuleKeyPrincipal>): Promise<Principal> {
    try {
      return await resolving;
    } catch (error) {
      if (isAppError(error)) return { kind: 'anonymous', credentialError: error };
      throw error;
    }
  }

  private async allowlisted(principal: Principal, ip: string): Promise<Principal> {
    if (principal.kind === 'anonymous') return principal;
    return withIpAllowlist(principal, await this.policies.policyOf(principal.companyId), ip);
  }
}

function withIpAllowlist(principal: UserPrincipal | ApiKeyPrincipal | ModuleKeyPrincipal, policy: CompiledPolicy, ip: string): Principal {
  const refusal = ipRefusal(policy, ip);
  return refusal ? { kind: 'anonymous', credentialError: refusal } : principal;
}

/** What a user owing MFA enrolment gets for anything but enrolment, their profile and sign-out. */
export function enrollmentRequired(): AppError {
  return new AppError(
    'mfa_enrollment_required',
    'Your company requires two-factor authentication: enrol first (POST /v1/me/mfa/setup, then POST /v1/me/mfa/verify); ' +
      'until then only enrolment, your profile and sign-out are available',
  );
}
