import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Orm } from '../../db/orm';
import type { Config } from '../../config';
import { AppError } from '../../errors/catalog';
import { hashPassword } from '../../auth/password';
import { sha256Hex } from '../../auth/tokens';
import type { RequestMeta } from '../../auth/principal';
import { currentEm } from '../../db/unit-of-work';
import type { AuditService } from '../audit/audit.service';
import type { AuthService } from './auth.service';
import type { SessionCookieService } from './session-cookie.service';
import { normalizeEmail } from './identity.service';
import { OidcError, OidcRelyingParty, type IdTokenClaims } from './oidc-relying-party';
import { ssoProviderNames, type SsoProviderName } from './sso.config';
import { SsoState } from './sso-state.entity';
import { UserIdentity } from './user-identity.entity';
import { Invitation } from './invitation.entity';
import { Company } from './company.entity';
import { User } from './user.entity';

/** The SSO CSRF nonce (`state`) lifetime of the spec's Limits table. */
export const SSO_STATE_TTL_SECONDS = 300;
/** Spent and expired states are deleted this long after they expire (kept a while for diagnostics). */
const STATE_RETENTION_MS = 60 * 60 * 1000;

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

export interface SsoFinishResult {
  /** The `service_token` cookie value (opaque; shown to the browser only). */
  cookieToken: string;
  cookieMaxAgeSeconds: number;
  /** The allow-listed `redirect_uri` given at start, else `${PUBLIC_URL}/app`. */
  redirectTo: string;
  userId: string;
  sessionId: string;
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
 */
export class SsoService {
  private readonly parties = new Map<SsoProviderName, OidcRelyingParty>();

  constructor(
    private readonly orm: Orm,
    private readonly config: Config,
    private readonly audit: AuditService,
    private readonly auth: AuthService,
    private readonly cookies: SessionCookieService,
  ) {}

  /** Validates the provider and the optional redirect_uri, and prepares the authorization request. */
  async start(input: { provider: string; redirectUri?: string; callbackUrl: string; meta: RequestMeta }): Promise<SsoStartResult> {
    const { name, party } = this.party(input.provider);
    if (input.redirectUri !== undefined && !this.config.sso.redirectAllowlist.includes(input.redirectUri)) {
      throw new AppError('redirect_uri_not_allowed', 'redirect_uri is not on this server\'s allow-list (SSO_REDIRECT_ALLOWLIST)');
    }
    let request;
    try {
      request = await party.authorizationRequest(input.callbackUrl);
    } catch (error) {
      await this.auditFailure(name, error instanceof OidcError ? error.reason : 'discovery_failed', input.meta, {});
      throw new AppError('sso_provider_unavailable', `${providerProfiles[name].label} sign-in is unavailable right now; try again later`, {
        cause: error,
      });
    }
    const em = currentEm(this.orm);
    const now = new Date();
    em.create(SsoState, {
      stateHash: sha256Hex(request.state),
      provider: name,
      nonce: request.nonce,
      codeVerifier: request.codeVerifier,
      redirectUri: input.redirectUri ?? null,
      createdAt: now,
      expiresAt: new Date(now.getTime() + SSO_STATE_TTL_SECONDS * 1000),
    });
    await em.flush();
    // Housekeeping: spent and expired states are of no use after a while.
    await em.nativeDelete(SsoState, { expiresAt: { $lt: new Date(now.getTime() - STATE_RETENTION_MS) } });
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
        throw new SsoRefusal(error.reason, new AppError('sso_failed', `${providerProfiles[name].label} sign-in could not be verified`, { cause: error }), {
          data: { message: error.message },
        });
      }
      const user = await this.resolveUser(name, claims, input.meta);
      if (user.status !== 'active') {
        throw new SsoRefusal('user_suspended', new AppError('forbidden', 'This account is suspended; contact your administrator'), {
          companyId: user.company.id,
          email: user.email,
        });
      }
      const login = await this.auth.startSession(user, input.meta, 'sso');
      const { sid } = await this.auth.tokens.verify(login.accessToken);
      const cookie = await this.cookies.issue(sid);
      return {
        cookieToken: cookie.token,
        cookieMaxAgeSeconds: Math.floor((cookie.expiresAt.getTime() - Date.now()) / 1000),
        redirectTo: state.redirectUri ?? `${this.config.publicUrl}/app`,
        userId: user.id,
        sessionId: sid,
      };
    } catch (error) {
      if (!(error instanceof SsoRefusal)) throw error;
      await this.auditFailure(name, error.reason, input.meta, error.context);
      throw error.error;
    }
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
    if (typeof presented !== 'string' || presented.length === 0 || presented.length > 512) throw invalid('state_missing');
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
  private async resolveUser(provider: SsoProviderName, claims: IdTokenClaims, meta: RequestMeta): Promise<User> {
    const em = currentEm(this.orm);
    const now = new Date();
    const subject = provider === 'microsoft' ? `${String(claims.tid)}:${claims.sub}` : claims.sub;
    const email = verifiedEmail(provider, claims);

    const identity = await em.findOne(UserIdentity, { provider, subject }, { populate: ['user'] });
    if (identity) {
      identity.lastLoginAt = now;
      if (email) identity.email = email;
      await em.flush();
      return identity.user;
    }

    if (!email) {
      throw new SsoRefusal('email_unverified', new AppError(
        'sso_email_unverified',
        `${providerProfiles[provider].label} did not confirm that this account owns its email address, so it cannot be matched to an Atrium user`,
      ), { data: { subject } });
    }

    const existing = await em.findOne(User, { email });
    if (existing) {
      const other = await em.findOne(UserIdentity, { user: existing, provider });
      if (other) {
        throw new SsoRefusal('identity_conflict', new AppError(
          'conflict',
          `This Atrium user is already linked to another ${providerProfiles[provider].label} account`,
        ), { companyId: existing.company.id, email });
      }
      em.create(UserIdentity, { user: existing, provider, subject, email, lastLoginAt: now });
      await em.flush();
      await this.audit.record({
        action: 'user.sso_linked',
        companyId: existing.company.id,
        actor: { actorType: 'user', actorId: existing.id, actorLabel: existing.email },
        meta,
        targetType: 'user',
        targetId: existing.id,
        data: { provider, subject },
      });
      return existing;
    }

    return this.acceptInvitation(provider, subject, email, claims, meta);
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

    // A user created by SSO has no password anyone knows; same hash format, so password logins take as long.
    const passwordHash = await hashPassword(randomBytes(32).toString('base64url'), this.config.scryptCost);
    const name = typeof claims.name === 'string' && claims.name.trim() ? claims.name.trim().slice(0, 200) : null;
    const { userId, companyId } = await em.transactional(async (tx) => {
      // Claim the invitation first: of two concurrent sign-ups, one wins.
      const claimed = await tx.nativeUpdate(
        Invitation,
        { id: invitation.id, status: 'pending', expiresAt: { $gt: now } },
        { status: 'accepted', acceptedAt: now },
      );
      if (claimed !== 1) {
        throw new SsoRefusal('invitation_race', new AppError('conflict', 'This invitation was just used; sign in again'), { email });
      }
      const company = tx.getReference(Company, invitation.company.id);
      const user = tx.create(User, { company, email, name, passwordHash, role: invitation.role });
      tx.create(UserIdentity, { user, provider, subject, email, lastLoginAt: now });
      await tx.flush();
      return { userId: user.id, companyId: company.id };
    });

    const actor = { actorType: 'user' as const, actorId: userId, actorLabel: email };
    await this.audit.record({
      action: 'user.created_via_sso',
      companyId,
      actor,
      meta,
      targetType: 'user',
      targetId: userId,
      data: { provider, role: invitation.role, invitationId: invitation.id },
    });
    await this.audit.record({
      action: 'invitation.accepted',
      companyId,
      actor,
      meta,
      targetType: 'invitation',
      targetId: invitation.id,
      data: { email, role: invitation.role, via: `sso:${provider}` },
    });
    return em.findOneOrFail(User, { id: userId }, { refresh: true });
  }

  private async auditFailure(
    provider: SsoProviderName,
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
