import * as oidc from 'openid-client';
import { isLoopbackHost } from './sso.config';

/** The variable a multi-tenant provider's discovery document puts in its issuer. */
export const TENANT_VARIABLE = '{tenantid}';
/** A tenant id is a GUID; nothing else may be substituted into the issuer template. */
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Discovery documents change rarely; signing keys are refreshed by openid-client's JWKS cache. */
const DISCOVERY_TTL_MS = 60 * 60 * 1000;
/** Seconds allowed for each request to the provider (discovery, token, JWKS). */
const HTTP_TIMEOUT_SECONDS = 10;

export function isTenantId(value: unknown): value is string {
  return typeof value === 'string' && GUID.test(value);
}

/** Reasons that say the provider was out of order, not that what it sent failed a check. */
const OUTAGES = new Set(['discovery_failed', 'provider_unreachable', 'provider_unavailable']);

/** Why a sign-in with the provider failed; `reason` goes to the audit log, never to the client verbatim. */
export class OidcError extends Error {
  constructor(
    readonly reason: string,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(message, options);
    this.name = 'OidcError';
  }

  /**
   * The provider could not be used (not reached, its discovery document
   * unusable, or a 5xx answer): nothing was verified, nor failed to verify.
   */
  get outage(): boolean {
    return OUTAGES.has(this.reason);
  }
}

export interface RelyingPartySettings {
  /** Configured issuer identifier or discovery document URL. */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Space-separated scopes of the authorization request. */
  scope: string;
  /**
   * A workplace (Entra ID style) provider: the discovered issuer may be a
   * `{tenantid}` template, and every ID token must carry a GUID `tid`.
   */
  multiTenant: boolean;
}

export interface AuthorizationRequest {
  url: string;
  state: string;
  nonce: string;
  codeVerifier: string;
}

export type IdTokenClaims = oidc.IDToken;

interface Discovered {
  metadata: oidc.ServerMetadata;
  /** The `{tenantid}` issuer template of a multi-tenant provider, else null. */
  template: string | null;
  /** Plain http is allowed: the issuer (and every endpoint) is on a loopback host. */
  insecure: boolean;
}

interface CapturedResponse {
  status: number;
  headers: [string, string][];
  body: string;
}

const stripSlash = (s: string) => s.replace(/\/+$/, '');

/**
 * One OpenID Connect provider, through openid-client (the certified RP
 * library): discovery (cached), the authorization URL with PKCE (S256),
 * `state` and `nonce`, and the code exchange with full ID token validation:
 * signature (against the provider's JWKS: `enableNonRepudiationChecks`),
 * issuer, audience, nonce and expiry.
 *
 * Multi-tenant issuers: the workplace provider's discovery document names
 * its issuer `https://…/{tenantid}/v2.0`; an ID token's `iss` must equal that
 * template with the token's own `tid` (a GUID) substituted. openid-client
 * compares `iss` with one fixed issuer, so the exchange runs in two steps:
 * the library performs the token request (the raw response is kept) and
 * checks it against the template; when only the issuer differs, the tenant
 * is read from the response, checked to be a GUID, and the library validates
 * the very same response again, in full, against the tenant's issuer (no
 * second request is made: the code is spent once). After either path the
 * tenant rule is checked once more explicitly.
 */
export class OidcRelyingParty {
  private discovered?: { value: Promise<Discovered>; until: number };
  private jwksCache: oidc.ExportedJWKSCache | undefined;

  constructor(private readonly settings: RelyingPartySettings) {}

  /**
   * A fresh state, nonce and PKCE pair, and the provider's authorization URL
   * carrying them. `reauthenticate` asks the provider to make the user sign in
   * again now (`prompt=login`, `max_age=0`) instead of reusing its session.
   */
  async authorizationRequest(redirectUri: string, options: { reauthenticate?: boolean } = {}): Promise<AuthorizationRequest> {
    const discovered = await this.discover();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const codeChallenge = await oidc.calculatePKCECodeChallenge(codeVerifier);
    const url = oidc.buildAuthorizationUrl(this.configuration(discovered, discovered.metadata.issuer), {
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: this.settings.scope,
      state,
      nonce,
      code_challenge: codeChallenge,
      code_challenge_method: 'S256',
      ...(options.reauthenticate ? { prompt: 'login', max_age: '0' } : {}),
    });
    return { url: url.href, state, nonce, codeVerifier };
  }

  /**
   * Exchanges the code of `callbackUrl` (the redirect URI plus the query the
   * provider sent) and returns the validated ID token claims; throws OidcError.
   */
  async exchange(callbackUrl: URL, checks: { codeVerifier: string; state: string; nonce: string }): Promise<IdTokenClaims> {
    const discovered = await this.discover();
    const grantChecks: oidc.AuthorizationCodeGrantChecks = {
      pkceCodeVerifier: checks.codeVerifier,
      expectedState: checks.state,
      expectedNonce: checks.nonce,
      idTokenExpected: true,
    };
    const tokenEndpoint = discovered.metadata.token_endpoint ? new URL(discovered.metadata.token_endpoint).href : undefined;
    let captured: CapturedResponse | undefined;
    const capture: oidc.CustomFetch = async (url, options) => {
      const response = await fetch(url, options);
      if (new URL(url).href === tokenEndpoint) {
        captured = { status: response.status, headers: [...response.headers], body: await response.clone().text() };
      }
      return response;
    };

    let config = this.configuration(discovered, discovered.metadata.issuer, capture);
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(config, callbackUrl, grantChecks);
    } catch (error) {
      if (!discovered.template || !captured || claimOf(error) !== 'iss') throw classify(error);
      const tid = unverifiedIdTokenClaim(captured.body, 'tid');
      if (!isTenantId(tid)) throw new OidcError('tenant_invalid', 'The ID token carries no valid tenant id (tid)');
      const response = captured;
      const replay: oidc.CustomFetch = async (url, options) =>
        new URL(url).href === tokenEndpoint
          ? new Response(response.body, { status: response.status, headers: response.headers })
          : fetch(url, options);
      config = this.configuration(discovered, tenantIssuer(discovered.template, tid), replay);
      try {
        tokens = await oidc.authorizationCodeGrant(config, callbackUrl, grantChecks);
      } catch (second) {
        throw classify(second);
      }
    } finally {
      this.jwksCache = oidc.getJwksCache(config) ?? this.jwksCache;
    }

    const claims = tokens.claims();
    if (!claims) throw new OidcError('id_token_missing', 'The provider returned no ID token');
    if (this.settings.multiTenant) {
      // Whichever way the library accepted it, the tenant rule holds explicitly.
      if (!isTenantId(claims.tid)) throw new OidcError('tenant_invalid', 'The ID token carries no valid tenant id (tid)');
      const expected = discovered.template ? tenantIssuer(discovered.template, claims.tid) : discovered.metadata.issuer;
      if (claims.iss !== expected) throw new OidcError('issuer_mismatch', 'The ID token was not issued for its tenant');
    }
    return claims;
  }

  /** The provider's metadata, fetched once an hour at most; a failed fetch is not cached. */
  private discover(): Promise<Discovered> {
    const now = Date.now();
    if (this.discovered && this.discovered.until > now) return this.discovered.value;
    const value = this.fetchDiscovery();
    this.discovered = { value, until: now + DISCOVERY_TTL_MS };
    value.catch(() => {
      if (this.discovered?.value === value) this.discovered = undefined;
    });
    return value;
  }

  private async fetchDiscovery(): Promise<Discovered> {
    const configured = new URL(this.settings.issuer);
    const explicit = configured.href.includes('/.well-known/');
    const expectedIssuer = explicit ? configured.href.slice(0, configured.href.indexOf('/.well-known/')) : configured.href;
    const discoveryUrl = explicit ? configured : new URL(`${stripSlash(configured.href)}/.well-known/openid-configuration`);
    // openid-client refuses plain http; a loopback issuer (tests, local IdPs) is the one exception.
    const insecure = configured.protocol === 'http:' && isLoopbackHost(configured.hostname);
    let config: oidc.Configuration;
    try {
      // An explicit discovery URL: openid-client leaves the issuer check to us (done below),
      // which is what lets a multi-tenant template through, on our terms only.
      config = await oidc.discovery(discoveryUrl, this.settings.clientId, this.settings.clientSecret, undefined, {
        timeout: HTTP_TIMEOUT_SECONDS,
        ...(insecure ? { execute: [oidc.allowInsecureRequests] } : {}),
      });
    } catch (error) {
      throw new OidcError('discovery_failed', 'The identity provider could not be reached', { cause: error });
    }
    const metadata = config.serverMetadata();
    const issuer = metadata.issuer;
    let template: string | null = null;
    if (issuer.includes(TENANT_VARIABLE)) {
      if (!this.settings.multiTenant || !templateCovers(issuer, expectedIssuer)) {
        throw new OidcError('discovery_failed', `The discovered issuer "${issuer}" does not match the configured one`);
      }
      template = issuer;
    } else if (stripSlash(issuer) !== stripSlash(expectedIssuer)) {
      throw new OidcError('discovery_failed', `The discovered issuer "${issuer}" does not match the configured one`);
    }
    if (insecure) {
      for (const endpoint of [metadata.authorization_endpoint, metadata.token_endpoint, metadata.jwks_uri]) {
        if (endpoint && !isLoopbackHost(new URL(endpoint).hostname)) {
          throw new OidcError('discovery_failed', 'A loopback issuer may only name loopback endpoints');
        }
      }
    }
    if (!metadata.authorization_endpoint || !metadata.token_endpoint || !metadata.jwks_uri) {
      throw new OidcError('discovery_failed', 'The discovery document lacks an authorization, token or JWKS endpoint');
    }
    return { metadata, template, insecure };
  }

  private configuration(discovered: Discovered, issuer: string, customFetch?: oidc.CustomFetch): oidc.Configuration {
    // client_secret_post, the default with a secret; both providers accept it.
    const config = new oidc.Configuration({ ...discovered.metadata, issuer }, this.settings.clientId, this.settings.clientSecret);
    config.timeout = HTTP_TIMEOUT_SECONDS;
    if (discovered.insecure) oidc.allowInsecureRequests(config);
    // openid-client trusts a TLS token response by default; verify the ID token's signature too.
    oidc.enableNonRepudiationChecks(config);
    if (this.jwksCache) oidc.setJwksCache(config, this.jwksCache);
    if (customFetch) config[oidc.customFetch] = customFetch;
    return config;
  }
}

function tenantIssuer(template: string, tid: string): string {
  return template.replace(TENANT_VARIABLE, () => tid);
}

/**
 * Whether the configured issuer is the template with one tenant segment in
 * place of `{tenantid}` (e.g. `…/common/v2.0` for `…/{tenantid}/v2.0`).
 */
function templateCovers(template: string, configured: string): boolean {
  const parts = stripSlash(template).split(TENANT_VARIABLE);
  if (parts.length !== 2) return false;
  const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${escape(parts[0]!)}[^/?#]+${escape(parts[1]!)}$`).test(stripSlash(configured));
}

/**
 * A claim of the ID token in a token response, read WITHOUT verification. Used
 * only to choose which issuer the library then verifies the token against.
 */
function unverifiedIdTokenClaim(body: string, claim: string): unknown {
  try {
    const idToken = (JSON.parse(body) as { id_token?: unknown }).id_token;
    if (typeof idToken !== 'string') return undefined;
    const payload = JSON.parse(Buffer.from(idToken.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
    return payload[claim];
  } catch {
    return undefined;
  }
}

/** The JWT claim an openid-client comparison error is about (iss, aud, nonce, …). */
function claimOf(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current && typeof current === 'object'; depth++) {
    const claim = (current as { claim?: unknown }).claim;
    if (typeof claim === 'string') return claim;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * The HTTP status of the provider's answer an openid-client failure is about
 * (a token or JWKS endpoint's), when it is one.
 */
function statusOf(error: unknown): number | undefined {
  if (error instanceof oidc.ResponseBodyError) return error.status;
  const cause = (error as { cause?: unknown } | undefined)?.cause;
  return cause instanceof Response ? cause.status : undefined;
}

/** Maps an openid-client failure to an audit reason. */
function classify(error: unknown): OidcError {
  if (error instanceof OidcError) return error;
  const status = statusOf(error);
  if (status !== undefined && status >= 500) {
    return new OidcError('provider_unavailable', `The identity provider answered HTTP ${status}`, { cause: error });
  }
  if (error instanceof oidc.AuthorizationResponseError) {
    return new OidcError('provider_error', `The identity provider answered ${error.error}`, { cause: error });
  }
  if (error instanceof oidc.ResponseBodyError) {
    return new OidcError('token_exchange_failed', `The token endpoint answered ${error.error}`, { cause: error });
  }
  const code = codeOf(error);
  const claim = claimOf(error);
  if (code === 'OAUTH_JWT_CLAIM_COMPARISON_FAILED') {
    const reasons: Record<string, string> = { iss: 'issuer_mismatch', aud: 'audience_mismatch', nonce: 'nonce_mismatch', azp: 'audience_mismatch' };
    return new OidcError(reasons[claim ?? ''] ?? 'id_token_invalid', `The ID token's ${claim ?? 'claims'} did not match`, { cause: error });
  }
  if (code === 'OAUTH_JWT_TIMESTAMP_CHECK_FAILED') {
    return new OidcError('id_token_expired', 'The ID token is expired or not yet valid', { cause: error });
  }
  if (code === 'OAUTH_KEY_SELECTION_FAILED' || /signature/i.test(String((error as { cause?: { message?: unknown } })?.cause?.message ?? ''))) {
    return new OidcError('signature_invalid', 'The ID token signature could not be verified', { cause: error });
  }
  if ((error instanceof TypeError && !code) || code === 'OAUTH_TIMEOUT' || code === 'OAUTH_ABORT') {
    return new OidcError('provider_unreachable', 'The identity provider could not be reached', { cause: error });
  }
  return new OidcError('id_token_invalid', 'The identity provider response could not be validated', { cause: error });
}
