import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Orm } from '../../db/orm';
import type { IdentitySettings } from './config';
import { AppError } from '../../errors/catalog';
import { textLength } from '../../errors/text-length';
import { hashPassword } from '../../auth/password';
import { sha256Hex } from '../../auth/tokens';
import type { Principal, RequestMeta } from '../../auth/principal';
import { requireAuthenticated } from '../../auth/policy';
import { STEP_UP_MAX_AGE_SECONDS } from './recent-authentication';
import { currentEm, transaction } from '../../db/unit-of-work';
import type { AuditService } from '../audit';
import type { AuthService } from './auth.service';
import type { SessionCookieService } from './session-cookie.service';
import type { MfaService } from './mfa.service';
import type { StepUpService } from './step-up.service';
import { normalizeEmail } from './identity.service';
import { OidcError, OidcRelyingParty, type IdTokenClaims } from './oidc-relying-party';
import { ssoProviderNames, type SsoProviderName } from './sso.config';
import { SsoState, type SsoIntent } from './sso-state.entity';
import { SsoMfaChallenge } from './sso-mfa-challenge.entity';
import { Session } from './session.entity';
import { UserIdentity } from './user-identity.entity';
import { Invitation } from './invitation.entity';
import { endInvitationLinks } from './invitation.service';
import type { SecurityPolicyEnforcer } from './security-policy.enforcer';
import { Company } from './company.entity';
import { User } from './user.entity';
import { clipText } from '../../clip-text';

/** The SSO CSRF nonce (`state`) lifetime of the spec's Limits table. */
export const SSO_STATE_TTL_SECONDS = 300;
/** How long the MFA challenge of a provider sign-in may be answered. */
export const SSO_MFA_CHALLENGE_TTL_SECONDS = 300;
/** Wrong codes one challenge takes before it is spent (the per-user MFA throttle applies as well). */
export const SSO_MFA_CHALLENGE_MAX_FAILURES = 5;
/** A step-up's provider authentication (`auth_time`, when the provider sends it) must be this recent. */
const STEP_UP_AUTH_TIME_MAX_AGE_SECONDS = STEP_UP_MAX_AGE_SECONDS;
/** Clock skew allowed for an `auth_time` in the future. */
const AUTH_TIME_SKEW_SECONDS = 60;

/** Per provider: the authorization request scopes of the spec, and whether it is multi-tenant. */
const providerProfiles: Record<SsoProviderName, { scope: string; multiTenant: boolean; label: string }> = {
  google: { scope: 'openid email', multiTenant: false, label: 'Google' },
  microsoft: { scope: 'User.Read openid', multiTenant: true, label: 'Microsoft' },
};

export interface SsoStartResult {
  /** The provider's consent screen, to redirect the browser to. */
  authorizationUrl: string;
  /** Set by the transport in a short-lived httpOnly cookie that binds the attempt to the browser. */
  state: string;
  stateMaxAgeSeconds: number;
}

/** A session was opened: set its `service_token` cookie and send the browser on. */
export interface SsoSessionResult {
  kind: 'session';
  /** The `service_token` cookie value (opaque; shown to the browser only). */
  cookieToken: string;
  cookieMaxAgeSeconds: number;
  /** The allow-listed `redirect_uri` given at start, else `${PUBLIC_URL}/app`. */
  redirectTo: string;
  userId: string;
  sessionId: string;
}

/** The provider proved who the user is, but MFA is on: no session yet; the code is owed at POST /auth/sso/mfa. */
export interface SsoMfaRequiredResult {
  kind: 'mfa_required';
  /** The challenge (plaintext, once): in the redirect's query and in a short-lived httpOnly binding cookie. */
  challenge: string;
  challengeMaxAgeSeconds: number;
  /** `${PUBLIC_URL}/app/mfa?challenge=…`, or the allow-listed `redirect_uri` with that query. */
  redirectTo: string;
  userId: string;
}

/** A step-up through the provider was recorded on the caller's session. */
export interface SsoSteppedUpResult {
  kind: 'stepped_up';
  redirectTo: string;
  userId: string;
  sessionId: string;
}

export type SsoFinishResult = SsoSessionResult | SsoMfaRequiredResult | SsoSteppedUpResult;
export type SsoMfaAnswerResult = SsoSessionResult | SsoSteppedUpResult;

/** A provider account to link to the user once the MFA challenge is answered. */
interface PendingLink {
  subject: string;
  email: string;
}

interface ResolvedUser {
  user: User;
  /** Set when the user was matched by verified email and has MFA on: not linked yet. */
  pendingLink: PendingLink | null;
}

/** A failure already decided: what the audit log says and what the client gets. */
class SsoRefusal extends Error {
  constructor(
    readonly reason: string,
    readonly error: AppError,
    readonly context: { companyId?: string | null; email?: string | null; data?: Record<string, unknown> } = {},
  ) {
    super(error.message);
  }
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Single sign-on with the consumer-account provider (`google`) and the
 * workplace-account provider (`microsoft`), over OpenID Connect.
 *
 * `start` stores a one-time `state` (hashed; 300 s), a nonce and a PKCE
 * verifier and returns the consent-screen URL. `finish` spends the state with
 * one conditional UPDATE, has the code exchanged and the ID token validated,
 * then signs in:
 *   1. the user linked to (provider, subject); else
 *   2. the user whose email equals the token's *verified* email, linking the
 *      account; else
 *   3. a new user, only when a pending, unexpired invitation exists for that
 *      verified email (created in the invitation's company with its role; the
 *      invitation is accepted); else it refuses.
 * Verified email: the consumer provider's `email` with `email_verified: true`;
 * the workplace provider's `email` only with `xms_edov: true` (the email
 * domain's owner verified it); `preferred_username` and an `email` without
 * that claim are never trusted (both are editable by tenant admins and users).
 * A session is opened through AuthService.startSession (audited `auth.login`,
 * method `sso`) and a `service_token` cookie is attached to it.
 *
 * MFA: when the user has MFA on, the callback opens no session. It leaves a
 * single-use challenge (hashed, 300 s, bound to the browser by a cookie) and
 * `answerMfa` opens the session only after a TOTP code (replay-guarded) or a
 * recovery code, checked by MfaService exactly as at password login.
 *
 * Step-up (`intent: 'step_up'`): started by a signed-in user whose user is
 * linked to the provider; the provider is asked to authenticate again
 * (`prompt=login`, `max_age=0`), the returned account must be linked to that
 * same user (no linking, no sign-up), `auth_time` (when sent) must be recent,
 * and the fresh authentication is recorded on the session that started it
 * (StepUpService.recordAuthentication), after the MFA challenge when MFA is on.
 */
export class SsoService {
  private readonly parties = new Map<SsoProviderName, OidcRelyingParty>();

  constructor(
    private readonly orm: Orm,
    private readonly config: IdentitySettings,
    private readonly audit: AuditService,
    private readonly auth: AuthService,
    private readonly cookies: SessionCookieService,
    private readonly mfa: MfaService,
    private readonly stepUp: StepUpService,
    /** Company security policies: allowed providers and SSO sign-up email domains. */
    private readonly policies: SecurityPolicyEnforcer,
  ) {}

  /**
   * Validates the provider and the optional redirect_uri, and prepares the
   * authorization request. `intent: 'step_up'` needs `principal` to be a
   * signed-in user linked to this provider; its session is kept on the state.
   */
  async start(input: {
    provider: string;
    redirectUri?: string;
    intent?: SsoIntent;
    principal?: Principal;
    callbackUrl: string;
    meta: RequestMeta;
  }): Promise<SsoStartResult> {
    const { name, party } = this.party(input.provider);
    if (input.redirectUri !== undefined && !this.config.sso.redirectAllowlist.includes(input.redirectUri)) {
      throw new AppError('redirect_uri_not_allowed', 'redirect_uri is not on this server\'s allow-list (SSO_REDIRECT_ALLOWLIST)');
    }
    const intent = input.intent ?? 'login';
    const sessionId = intent === 'step_up' ? await this.stepUpSession(name, input.principal ?? { kind: 'anonymous' }) : null;
    let request;
    try {
      request = await party.authorizationRequest(input.callbackUrl, { reauthenticate: intent === 'step_up' });
    } catch (error) {
      await this.auditFailure(name, error instanceof OidcError ? error.reason : 'discovery_failed', input.meta, {});
      throw providerUnavailable(name, error);
    }
    const em = currentEm(this.orm);
    const now = new Date();
    em.create(SsoState, {
      stateHash: sha256Hex(request.state),
      provider: name,
      nonce: request.nonce,
      codeVerifier: request.codeVerifier,
      redirectUri: input.redirectUri ?? null,
      intent,
      sessionId,
      createdAt: now,
      expiresAt: new Date(now.getTime() + SSO_STATE_TTL_SECONDS * 1000),
    });
    await em.flush();
    return { authorizationUrl: request.url, state: request.state, stateMaxAgeSeconds: SSO_STATE_TTL_SECONDS };
  }

  /**
   * The callback. `query` is what the provider sent (code, state, or error);
   * `callbackUrl` is the redirect URI given at start; `boundState` is the value
   * of the browser's state cookie.
   */
  async finish(input: {
    provider: string;
    query: Record<string, unknown>;
    callbackUrl: string;
    boundState: string | undefined;
    meta: RequestMeta;
  }): Promise<SsoFinishResult> {
    const { name, party } = this.party(input.provider);
    try {
      const state = await this.spendState(name, input.query.state, input.boundState);
      let claims: IdTokenClaims;
      try {
        const callbackUrl = new URL(input.callbackUrl);
        for (const [key, value] of Object.entries(input.query)) {
          if (typeof value === 'string') callbackUrl.searchParams.append(key, value);
        }
        claims = await party.exchange(callbackUrl, { codeVerifier: state.codeVerifier, state: String(input.query.state), nonce: state.nonce });
      } catch (error) {
        if (!(error instanceof OidcError)) throw error;
        // A provider out of order is the provider's failure (502, as at start), not a sign-in that failed its checks.
        const refusal = error.outage
          ? providerUnavailable(name, error)
          : new AppError('sso_failed', `${providerProfiles[name].label} sign-in could not be verified`, { cause: error });
        throw new SsoRefusal(error.reason, refusal, { data: { message: error.message } });
      }
      if (state.intent === 'step_up') return await this.finishStepUp(name, state, claims, input.meta);
      const { user, pendingLink } = await this.resolveUser(name, claims, input.meta);
      assertActive(user);
      // Once MFA is on every sign-in needs a code: no session until the challenge is answered.
      if (user.mfaEnabled) {
        return await this.challenge(user, name, { intent: 'login', sessionId: null, redirectUri: state.redirectUri, pendingLink }, input.meta);
      }
      return await this.openSession(user, state.redirectUri, input.meta);
    } catch (error) {
      if (!(error instanceof SsoRefusal)) throw error;
      await this.auditFailure(name, error.reason, input.meta, error.context);
      throw error.error;
    }
  }

  /**
   * `POST /auth/sso/mfa`: the second factor owed after a provider sign-in (or
   * step-up) of a user with MFA on. `challenge` is what the callback put in the
   * redirect's query; `boundChallenge` the browser's binding cookie. The
   * challenge is claimed first (one conditional UPDATE: of concurrent answers
   * one goes on); a wrong code gives it back, up to 5 wrong codes. A wrong code
   * is 401 `mfa_invalid` (audited `auth.mfa_failed` by MfaService); an
   * unknown, expired, spent, exhausted or unbound challenge is 400 `sso_state_invalid`.
   */
  async answerMfa(input: { challenge: unknown; boundChallenge: string | undefined; totpCode: string; meta: RequestMeta }): Promise<SsoMfaAnswerResult> {
    let provider: string | null = null;
    try {
      const row = await this.claimChallenge(input.challenge, input.boundChallenge);
      provider = row.provider;
      const em = currentEm(this.orm);
      const user = await em.findOne(User, { id: row.user.id }, { populate: ['company'], refresh: true });
      if (!user) throw new SsoRefusal('user_deleted', challengeInvalid());
      assertActive(user);
      // The same check as a password login (TOTP with its replay guard, or a recovery code). Should MFA have
      // been turned off since the callback, none is owed: the provider's proof is then a whole sign-in.
      try {
        await this.mfa.checkSecondFactor(user, input.totpCode, input.meta, row.intent === 'step_up' ? 'sso_step_up' : 'sso_login');
      } catch (error) {
        await this.releaseChallenge(row, error instanceof AppError && (error.code === 'mfa_invalid' || error.code === 'mfa_required'));
        throw error;
      }
      if (row.intent === 'step_up') {
        const session = await this.liveSession(row.sessionId, user.id);
        return await this.recordStepUp(session, user, row.provider, row.redirectUri, input.meta);
      }
      if (row.linkSubject && row.linkEmail) {
        await this.link(user, row.provider as SsoProviderName, row.linkSubject, row.linkEmail, input.meta);
      }
      return await this.openSession(user, row.redirectUri, input.meta);
    } catch (error) {
      if (!(error instanceof SsoRefusal)) throw error;
      await this.auditFailure(provider, error.reason, input.meta, error.context);
      throw error.error;
    }
  }

  /** Opens the session of an SSO sign-in and attaches its `service_token` cookie. */
  private async openSession(user: User, redirectUri: string | null, meta: RequestMeta): Promise<SsoSessionResult> {
    const login = await this.auth.startSession(user, meta, 'sso');
    const { sid } = await this.auth.tokens.verify(login.accessToken);
    const cookie = await this.cookies.issue(sid);
    return {
      kind: 'session',
      cookieToken: cookie.token,
      cookieMaxAgeSeconds: Math.floor((cookie.expiresAt.getTime() - Date.now()) / 1000),
      redirectTo: redirectUri ?? `${this.config.publicUrl}/app`,
      userId: user.id,
      sessionId: sid,
    };
  }

  /** The session a step-up may be started for: the caller's, whose user is linked to `provider`. */
  private async stepUpSession(provider: SsoProviderName, principal: Principal): Promise<string> {
    const caller = requireAuthenticated(principal);
    if (caller.kind !== 'user') {
      throw new AppError('bad_request', 'An API key has no session to step up; step-up is for signed-in users');
    }
    const linked = await currentEm(this.orm).count(UserIdentity, { user: caller.userId, provider });
    if (linked === 0) {
      throw new AppError(
        'forbidden',
        `This account is not linked to ${providerProfiles[provider].label}; step up with your password (POST /auth/step-up) instead`,
      );
    }
    return caller.sessionId;
  }

  /**
   * The callback of a step-up: the provider's account must be the one linked
   * to the user of the session that started it, and freshly authenticated.
   */
  private async finishStepUp(provider: SsoProviderName, state: SsoState, claims: IdTokenClaims, meta: RequestMeta): Promise<SsoFinishResult> {
    const session = await this.liveSession(state.sessionId, null);
    const user = session.user;
    assertActive(user);
    const context = { companyId: user.company.id, email: user.email };
    if (typeof claims.auth_time === 'number') {
      const age = Date.now() / 1000 - claims.auth_time;
      if (age > STEP_UP_AUTH_TIME_MAX_AGE_SECONDS || age < -AUTH_TIME_SKEW_SECONDS) {
        throw new SsoRefusal('auth_time_stale', new AppError(
          'sso_failed',
          `${providerProfiles[provider].label} did not sign you in again just now; try again`,
        ), { ...context, data: { authTime: claims.auth_time } });
      }
    }
    const subject = subjectOf(provider, claims);
    const identity = await currentEm(this.orm).findOne(UserIdentity, { provider, subject });
    if (!identity || identity.user.id !== user.id) {
      throw new SsoRefusal('step_up_account_mismatch', new AppError(
        'forbidden',
        `This ${providerProfiles[provider].label} account is not the one linked to the signed-in user; step up with that account`,
      ), { ...context, data: { subject, linked: identity !== null } });
    }
    if (user.mfaEnabled) {
      return this.challenge(user, provider, { intent: 'step_up', sessionId: session.id, redirectUri: state.redirectUri, pendingLink: null }, meta);
    }
    return this.recordStepUp(session, user, provider, state.redirectUri, meta);
  }

  private async recordStepUp(
    session: Session,
    user: User,
    provider: string,
    redirectUri: string | null,
    meta: RequestMeta,
  ): Promise<SsoSteppedUpResult> {
    await this.stepUp.recordAuthentication({ sessionId: session.id, companyId: session.company.id }, user, meta, { method: 'sso', provider });
    return { kind: 'stepped_up', redirectTo: redirectUri ?? `${this.config.publicUrl}/app`, userId: user.id, sessionId: session.id };
  }

  /** An active, unexpired session (of `userId`, when given), with its user; refused otherwise. */
  private async liveSession(sessionId: string | null, userId: string | null): Promise<Session> {
    const session = sessionId
      ? await currentEm(this.orm).findOne(Session, { id: sessionId }, { populate: ['user', 'user.company'], refresh: true })
      : null;
    if (!session || session.revokedAt || session.expiresAt.getTime() <= Date.now() || (userId !== null && session.user.id !== userId)) {
      throw new SsoRefusal('step_up_session_ended', new AppError('token_invalid', 'The session this step-up was started from has ended; sign in again'));
    }
    return session;
  }

  /** Leaves the MFA challenge of a provider sign-in instead of a session. */
  private async challenge(
    user: User,
    provider: SsoProviderName,
    attempt: { intent: SsoIntent; sessionId: string | null; redirectUri: string | null; pendingLink: PendingLink | null },
    meta: RequestMeta,
  ): Promise<SsoMfaRequiredResult> {
    const { intent, sessionId, redirectUri, pendingLink } = attempt;
    const challenge = randomBytes(32).toString('base64url');
    const em = currentEm(this.orm);
    const now = new Date();
    em.create(SsoMfaChallenge, {
      challengeHash: sha256Hex(challenge),
      user,
      provider,
      intent,
      sessionId,
      redirectUri,
      linkSubject: pendingLink?.subject ?? null,
      linkEmail: pendingLink?.email ?? null,
      createdAt: now,
      expiresAt: new Date(now.getTime() + SSO_MFA_CHALLENGE_TTL_SECONDS * 1000),
    });
    await em.flush();
    await this.audit.record({
      action: 'auth.sso_mfa_challenged',
      companyId: user.company.id,
      actor: { actorType: 'user', actorId: user.id, actorLabel: user.email },
      meta,
      targetType: 'user',
      targetId: user.id,
      data: { provider, intent },
    });
    return {
      kind: 'mfa_required',
      challenge,
      challengeMaxAgeSeconds: SSO_MFA_CHALLENGE_TTL_SECONDS,
      redirectTo: withQuery(redirectUri ?? `${this.config.publicUrl}/app/mfa`, 'challenge', challenge),
      userId: user.id,
    };
  }

  /** Claims the challenge: bound to this browser, unexpired, unused, not exhausted. */
  private async claimChallenge(presented: unknown, bound: string | undefined): Promise<SsoMfaChallenge> {
    if (typeof presented !== 'string' || !presented || textLength(presented) > 512) {
      throw new SsoRefusal('challenge_missing', challengeInvalid());
    }
    if (bound === undefined || !sameSecret(bound, presented)) throw new SsoRefusal('challenge_not_bound', challengeInvalid());
    const em = currentEm(this.orm);
    const challengeHash = sha256Hex(presented);
    const now = new Date();
    const claimed = await em.nativeUpdate(
      SsoMfaChallenge,
      { challengeHash, usedAt: null, expiresAt: { $gt: now }, failedAttempts: { $lt: SSO_MFA_CHALLENGE_MAX_FAILURES } },
      { usedAt: now },
    );
    const row = await em.findOne(SsoMfaChallenge, { challengeHash }, { refresh: true });
    if (claimed === 1 && row) return row;
    if (!row) throw new SsoRefusal('challenge_unknown', challengeInvalid());
    const context = { data: { provider: row.provider, intent: row.intent } };
    if (row.failedAttempts >= SSO_MFA_CHALLENGE_MAX_FAILURES) throw new SsoRefusal('challenge_exhausted', challengeInvalid(), context);
    if (row.usedAt) throw new SsoRefusal('challenge_replayed', challengeInvalid(), context);
    throw new SsoRefusal('challenge_expired', challengeInvalid(), context);
  }

  /** Gives a claimed challenge back after a refused code (counted when it was a wrong code), unless that exhausts it. */
  private async releaseChallenge(row: SsoMfaChallenge, wrongCode: boolean): Promise<void> {
    const failedAttempts = row.failedAttempts + (wrongCode ? 1 : 0);
    await currentEm(this.orm).nativeUpdate(
      SsoMfaChallenge,
      { id: row.id, failedAttempts: row.failedAttempts },
      failedAttempts >= SSO_MFA_CHALLENGE_MAX_FAILURES ? { failedAttempts } : { failedAttempts, usedAt: null },
    );
  }

  private party(provider: string): { name: SsoProviderName; party: OidcRelyingParty } {
    if (!(ssoProviderNames as readonly string[]).includes(provider)) {
      throw new AppError('not_found', `Unknown identity provider "${provider}"; use ${ssoProviderNames.join(' or ')}`);
    }
    const name = provider as SsoProviderName;
    const settings = this.config.sso[name];
    if (!settings.clientId || !settings.clientSecret) {
      throw new AppError(
        'sso_provider_not_configured',
        `${providerProfiles[name].label} sign-in is not configured on this server (SSO_${name.toUpperCase()}_CLIENT_ID and _CLIENT_SECRET)`,
      );
    }
    let party = this.parties.get(name);
    if (!party) {
      party = new OidcRelyingParty({
        issuer: settings.issuer,
        clientId: settings.clientId,
        clientSecret: settings.clientSecret,
        scope: providerProfiles[name].scope,
        multiTenant: providerProfiles[name].multiTenant,
      });
      this.parties.set(name, party);
    }
    return { name, party };
  }

  /** Spends the state once: bound to this browser, issued for this provider, unexpired, unused. */
  private async spendState(provider: SsoProviderName, presented: unknown, bound: string | undefined): Promise<SsoState> {
    const invalid = (reason: string) =>
      new SsoRefusal(reason, new AppError('sso_state_invalid', 'The sign-in attempt is unknown, expired or already used; start again'));
    if (typeof presented !== 'string' || !presented || textLength(presented) > 512) throw invalid('state_missing');
    // Login CSRF: the callback must come from the browser that started the attempt.
    if (bound === undefined || !sameSecret(bound, presented)) throw invalid('state_not_bound');
    const em = currentEm(this.orm);
    const stateHash = sha256Hex(presented);
    const now = new Date();
    const spent = await em.nativeUpdate(SsoState, { stateHash, provider, usedAt: null, expiresAt: { $gt: now } }, { usedAt: now });
    const row = await em.findOne(SsoState, { stateHash });
    if (spent === 1 && row) return row;
    if (!row) throw invalid('state_unknown');
    if (row.provider !== provider) throw invalid('state_provider_mismatch');
    if (row.usedAt) throw invalid('state_replayed');
    throw invalid('state_expired');
  }

  /** The user this sign-in is for: linked by subject, linked by verified email, or created from an invitation. */
  private async resolveUser(provider: SsoProviderName, claims: IdTokenClaims, meta: RequestMeta): Promise<ResolvedUser> {
    const em = currentEm(this.orm);
    const now = new Date();
    const subject = subjectOf(provider, claims);
    const email = verifiedEmail(provider, claims);

    const identity = await em.findOne(UserIdentity, { provider, subject }, { populate: ['user'] });
    if (identity) {
      await this.assertPolicyAllows(identity.user.company.id, provider, identity.user.email, meta);
      identity.lastLoginAt = now;
      if (email) identity.email = email;
      await em.flush();
      return { user: identity.user, pendingLink: null };
    }

    if (!email) {
      throw new SsoRefusal('email_unverified', new AppError(
        'sso_email_unverified',
        `${providerProfiles[provider].label} did not confirm that this account owns its email address, so it cannot be matched to an Atrium user`,
      ), { data: { subject } });
    }

    const existing = await em.findOne(User, { email });
    if (existing) {
      await this.assertPolicyAllows(existing.company.id, provider, email, meta);
      // MFA on: nothing about the account changes before the code; the link is made once the challenge is answered.
      if (existing.mfaEnabled) {
        await this.assertLinkable(existing, provider, subject, email);
        return { user: existing, pendingLink: { subject, email } };
      }
      await this.link(existing, provider, subject, email, meta);
      return { user: existing, pendingLink: null };
    }

    return { user: await this.acceptInvitation(provider, subject, email, claims, meta), pendingLink: null };
  }

  /**
   * Refuses when the user is linked to another account of the provider, or
   * the account to another user; true when exactly this link exists already.
   */
  private async assertLinkable(user: User, provider: SsoProviderName, subject: string, email: string): Promise<boolean> {
    const em = currentEm(this.orm);
    const found = await em.findOne(UserIdentity, { $or: [{ user, provider }, { provider, subject }] });
    if (!found) return false;
    if (found.user.id === user.id && found.subject === subject) return true;
    throw new SsoRefusal('identity_conflict', new AppError(
      'conflict',
      `This Atrium user is already linked to another ${providerProfiles[provider].label} account`,
    ), { companyId: user.company.id, email });
  }

  /** Links the provider account (subject) to the user whose verified email it carries; audited `user.sso_linked`. */
  private async link(user: User, provider: SsoProviderName, subject: string, email: string, meta: RequestMeta): Promise<void> {
    if (await this.assertLinkable(user, provider, subject, email)) return;
    const em = currentEm(this.orm);
    em.create(UserIdentity, { user, provider, subject, email, lastLoginAt: new Date() });
    await em.flush();
    await this.audit.record({
      action: 'user.sso_linked',
      companyId: user.company.id,
      actor: { actorType: 'user', actorId: user.id, actorLabel: user.email },
      meta,
      targetType: 'user',
      targetId: user.id,
      data: { provider, subject },
    });
  }

  /**
   * The company's security policy: the sign-in comes from an allowed network (403 ip_not_allowed)
   * and the provider must be allowed (403 forbidden); a sign-up through an invitation also needs an
   * allowed email domain.
   */
  private async assertPolicyAllows(companyId: string, provider: SsoProviderName, email: string, meta: RequestMeta, signUp = false): Promise<void> {
    const refusal = await this.policies.ssoRefusal(companyId, provider, meta.ip, signUp ? email : undefined);
    if (refusal) throw new SsoRefusal(refusal.reason, refusal.error, { companyId, email });
  }

  /** Creates the user of a pending, unexpired invitation for `email` and accepts it; refuses otherwise. */
  private async acceptInvitation(provider: SsoProviderName, subject: string, email: string, claims: IdTokenClaims, meta: RequestMeta): Promise<User> {
    const em = currentEm(this.orm);
    const now = new Date();
    const invitation = await em.findOne(
      Invitation,
      { email, status: 'pending', expiresAt: { $gt: now } },
      { orderBy: { createdAt: 'desc', id: 'desc' } },
    );
    if (!invitation) {
      const latest = await em.findOne(Invitation, { email }, { orderBy: { createdAt: 'desc', id: 'desc' } });
      const reason = !latest
        ? 'no_invitation'
        : latest.status === 'pending' || latest.status === 'expired'
          ? 'invitation_expired'
          : `invitation_${latest.status}`;
      throw new SsoRefusal(reason, new AppError(
        'sso_account_not_found',
        'No Atrium account matches this sign-in, and there is no valid invitation for its email address; ask an administrator to invite you',
      ), { companyId: latest?.company.id ?? null, email });
    }

    await this.assertPolicyAllows(invitation.company.id, provider, email, meta, true);
    // A user created by SSO has no password anyone knows; same hash format, so password logins take as long.
    const passwordHash = await hashPassword(randomBytes(32).toString('base64url'), this.config.scryptCost);
    const name = typeof claims.name === 'string' && claims.name.trim() ? clipText(claims.name.trim(), 200) : null;
    const userId = await transaction(this.orm, async (tx) => {
      // Claim the invitation first: of two concurrent sign-ups, one wins.
      const claimed = await tx.nativeUpdate(
        Invitation,
        { id: invitation.id, status: 'pending', expiresAt: { $gt: now } },
        { status: 'accepted', acceptedAt: now },
      );
      if (claimed !== 1) {
        throw new SsoRefusal('invitation_race', new AppError('conflict', 'This invitation was just used; sign in again'), { email });
      }
      await endInvitationLinks(tx, invitation.id);
      // An account for this email may have been made meanwhile (a password accept of another
      // invitation): checked here, inside the transaction, as accepting by password does.
      const taken = () => new SsoRefusal('email_race', new AppError('conflict', 'An account with this email address was just created; sign in again'), { email });
      if (await tx.count(User, { email })) throw taken();
      const company = tx.getReference(Company, invitation.company.id);
      const user = tx.create(User, { company, email, name, passwordHash, role: invitation.role });
      tx.create(UserIdentity, { user, provider, subject, email, lastLoginAt: now });
      try {
        await tx.flush();
      } catch (error) {
        throw error instanceof UniqueConstraintViolationException ? taken() : error;
      }
      const actor = { actorType: 'user' as const, actorId: user.id, actorLabel: email };
      await this.audit.record({
        action: 'user.created_via_sso',
        companyId: company.id,
        actor,
        meta,
        targetType: 'user',
        targetId: user.id,
        data: { provider, role: invitation.role, invitationId: invitation.id },
      });
      await this.audit.record({
        action: 'invitation.accepted',
        companyId: company.id,
        actor,
        meta,
        targetType: 'invitation',
        targetId: invitation.id,
        data: { email, role: invitation.role, via: `sso:${provider}` },
      });
      return user.id;
    });
    return em.findOneOrFail(User, { id: userId }, { refresh: true });
  }

  private async auditFailure(
    provider: string | null,
    reason: string,
    meta: RequestMeta,
    context: { companyId?: string | null; email?: string | null; data?: Record<string, unknown> },
  ): Promise<void> {
    await this.audit.record({
      action: 'auth.sso_failed',
      companyId: context.companyId ?? null,
      actor: { actorType: 'anonymous', actorId: null, actorLabel: context.email ?? null },
      meta,
      data: { provider, reason, ...context.data },
    });
  }
}

/** The stored subject of a provider account: the workplace provider's is `<tid>:<sub>` (pairwise per tenant). */
function subjectOf(provider: SsoProviderName, claims: IdTokenClaims): string {
  return provider === 'microsoft' ? `${String(claims.tid)}:${claims.sub}` : claims.sub;
}

/** The provider could not be used (at start or at the callback): 502, try again later. */
function providerUnavailable(provider: SsoProviderName, cause: unknown): AppError {
  return new AppError('sso_provider_unavailable', `${providerProfiles[provider].label} sign-in is unavailable right now; try again later`, { cause });
}

function assertActive(user: User): void {
  if (user.status === 'active') return;
  throw new SsoRefusal('user_suspended', new AppError('account_suspended', 'This account is suspended; contact your administrator'), {
    companyId: user.company.id,
    email: user.email,
  });
}

function challengeInvalid(): AppError {
  return new AppError('sso_state_invalid', 'The sign-in challenge is unknown, expired, already used or from another browser; sign in again');
}

/** `target` (an absolute URL or an absolute path) with `key=value` added to its query. */
export function withQuery(target: string, key: string, value: string): string {
  const absolute = /^https?:\/\//i.test(target);
  const url = new URL(target, 'http://relative.invalid');
  url.searchParams.set(key, value);
  return absolute ? url.href : `${url.pathname}${url.search}${url.hash}`;
}

/**
 * The email this token proves the account owns, normalized, or null. Be
 * conservative: only a provider's explicit verification counts.
 */
export function verifiedEmail(provider: SsoProviderName, claims: IdTokenClaims): string | null {
  const email = typeof claims.email === 'string' ? normalizeEmail(claims.email) : '';
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 320) return null;
  switch (provider) {
    case 'google':
      return claims.email_verified === true ? email : null;
    case 'microsoft':
      // Entra ID's `email` is mutable and unverified unless the optional claim
      // `xms_edov` (email domain owner verified) says otherwise.
      return claims.xms_edov === true ? email : null;
  }
}
