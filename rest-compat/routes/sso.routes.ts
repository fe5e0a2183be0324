import type { FastifyReply, FastifyRequest } from 'fastify';
import { API_PREFIXES, type RestRoute } from '../route';
import { clearCookie, readCookie, serializeCookie, SESSION_COOKIE, SSO_MFA_COOKIE, SSO_STATE_COOKIE } from '../../src/auth/cookies';
import { AppError, isAppError } from '../../src/errors/catalog';
import { isTrustedOrigin, trustedOrigins } from '../../src/host/cookie-auth';
import type { SsoIntent } from '../../src/domains/identity';

type ProviderParams = { provider: string };

const providerParam = {
  type: 'object',
  required: ['provider'],
  properties: {
    provider: {
      type: 'string',
      minLength: 1,
      maxLength: 32,
      description: '`google` (consumer accounts) or `microsoft` (workplace accounts, any tenant)',
    },
  },
};

/** The prefix (/v1 or /api/v1) the request came in on: the callback is registered under the same one. */
function prefixOf(request: FastifyRequest): string {
  const url = request.routeOptions.url ?? '';
  return [...API_PREFIXES].sort((a, b) => b.length - a.length).find((p) => url.startsWith(`${p}/`)) ?? API_PREFIXES[0];
}

/** The redirect URI given to the provider; register it in the provider's app settings. */
function callbackUrl(request: FastifyRequest, provider: string): string {
  return `${request.server.config.publicUrl}${prefixOf(request)}/auth/${encodeURIComponent(provider)}/callback`;
}

/** Where the MFA challenge is answered, under the prefix the sign-in came in on: the binding cookie's path. */
const mfaPath = (request: FastifyRequest) => `${prefixOf(request)}/auth/sso/mfa`;

/**
 * Atrium's own MFA page answers under /v1 unless it is told otherwise: after a
 * sign-in that came in on another prefix it must answer there, where the
 * binding cookie's path lets the browser send it. Another page (an allowed
 * `redirect_uri`) knows the prefix it started on.
 */
function toMfaPage(request: FastifyRequest, location: string): string {
  const prefix = prefixOf(request);
  if (prefix === API_PREFIXES[0] || !location.startsWith(`${request.server.config.publicUrl}/app/mfa?`)) return location;
  const url = new URL(location);
  url.searchParams.set('api', prefix);
  return url.href;
}

const secureCookies = (request: FastifyRequest) => request.server.config.publicUrl.startsWith('https://');

async function start(request: FastifyRequest, reply: FastifyReply) {
  const { provider } = request.params as ProviderParams;
  const { redirect_uri: redirectUri, intent } = request.query as { redirect_uri?: string; intent?: SsoIntent };
  const redirectUriOfCallback = callbackUrl(request, provider);
  const result = await request.server.domains.identity.sso.start({
    provider,
    redirectUri,
    intent,
    principal: request.principal,
    callbackUrl: redirectUriOfCallback,
    meta: request.meta,
  });
  // Binds the attempt to this browser (login CSRF); sent back only to the callback path.
  reply.header(
    'set-cookie',
    serializeCookie(SSO_STATE_COOKIE, result.state, {
      maxAgeSeconds: result.stateMaxAgeSeconds,
      path: new URL(redirectUriOfCallback).pathname,
      secure: secureCookies(request),
    }),
  );
  return reply.redirect(result.authorizationUrl, 302);
}

async function callback(request: FastifyRequest, reply: FastifyReply) {
  const { provider } = request.params as ProviderParams;
  const redirectUri = callbackUrl(request, provider);
  const secure = secureCookies(request);
  // The attempt ends here, whatever the outcome.
  reply.header('set-cookie', clearCookie(SSO_STATE_COOKIE, { path: new URL(redirectUri).pathname, secure }));
  const result = await request.server.domains.identity.sso.finish({
    provider,
    query: request.query as Record<string, unknown>,
    callbackUrl: redirectUri,
    boundState: readCookie(request.headers.cookie, SSO_STATE_COOKIE),
    meta: request.meta,
  });
  switch (result.kind) {
    case 'session':
      reply.header('set-cookie', serializeCookie(SESSION_COOKIE, result.cookieToken, { maxAgeSeconds: result.cookieMaxAgeSeconds, secure }));
      break;
    case 'mfa_required':
      // No session yet: the challenge is bound to this browser, and only POST /auth/sso/mfa gets the cookie.
      reply.header(
        'set-cookie',
        serializeCookie(SSO_MFA_COOKIE, result.challenge, { maxAgeSeconds: result.challengeMaxAgeSeconds, path: mfaPath(request), secure }),
      );
      return reply.redirect(toMfaPage(request, result.redirectTo), 302);
    case 'stepped_up':
      break;
  }
  return reply.redirect(result.redirectTo, 302);
}

async function answerMfa(request: FastifyRequest, reply: FastifyReply) {
  const { config, domains } = request.server;
  // The binding cookie is a browser credential: the page that answers must be one of ours.
  if (!isTrustedOrigin(request.headers, trustedOrigins(config))) {
    throw new AppError('csrf_rejected', 'The MFA answer of a single sign-on must come from an allowed origin (Origin or Referer header)');
  }
  const body = request.body as { challenge: string; totp_code: string };
  const secure = secureCookies(request);
  const cookieOptions = { path: mfaPath(request), secure };
  let result;
  try {
    result = await domains.identity.sso.answerMfa({
      challenge: body.challenge,
      boundChallenge: readCookie(request.headers.cookie, SSO_MFA_COOKIE),
      totpCode: body.totp_code,
      meta: request.meta,
    });
  } catch (error) {
    // A spent or unusable challenge is of no further use to this browser; a wrong code may be retried.
    if (isAppError(error) && ['sso_state_invalid', 'forbidden', 'account_suspended', 'token_invalid', 'conflict'].includes(error.code)) {
      reply.header('set-cookie', clearCookie(SSO_MFA_COOKIE, cookieOptions));
    }
    throw error;
  }
  reply.header('set-cookie', clearCookie(SSO_MFA_COOKIE, cookieOptions));
  if (result.kind === 'session') {
    reply.header('set-cookie', serializeCookie(SESSION_COOKIE, result.cookieToken, { maxAgeSeconds: result.cookieMaxAgeSeconds, secure }));
  }
  return reply.code(200).send({ redirect_to: result.redirectTo });
}

/**
 * Single sign-on. Start and callback are browser redirects and the MFA answer
 * reads and sets browser cookies, so they call the core SsoService directly
 * (`raw`) instead of a GraphQL operation.
 */
export const ssoRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/auth/:provider/start',
    operationId: 'startSso',
    summary: 'Start single sign-on with an identity provider',
    description:
      'Redirects (302) to the provider consent screen, using PKCE (S256), a one-time `state` (the CSRF nonce, ' +
      'valid 300 seconds) and a `nonce`. Scopes: `openid email` (google), `User.Read openid` (microsoft, any tenant). ' +
      'A short-lived httpOnly cookie binds the attempt to this browser. `redirect_uri` (where to land after sign-in) ' +
      'must be one of the values of SSO_REDIRECT_ALLOWLIST, else 400 `redirect_uri_not_allowed`. An unknown provider ' +
      'is 404 `not_found`; a provider this server has no client credentials for is 404 `sso_provider_not_configured`; ' +
      'a provider that cannot be reached is 502 `sso_provider_unavailable`. `intent=step_up` re-authenticates the ' +
      "caller's session instead of signing in (for users without a known password): it needs a signed-in caller " +
      '(`service_token` cookie or Bearer access token; else 401, an API key 400) whose user is linked to this provider ' +
      '(else 403 `forbidden`), and asks the provider to sign the user in again (`prompt=login`, `max_age=0`).',
    tag: 'Authentication',
    auth: 'public',
    rateLimit: 'auth',
    status: 302,
    problems: {
      400: 'redirect_uri_not_allowed: redirect_uri is not on the allow-list; bad_request: intent=step_up with an API key',
      401: 'unauthenticated or token_invalid: intent=step_up without a valid session',
      403: 'forbidden: intent=step_up for a user not linked to this provider',
      404: 'not_found (unknown provider) or sso_provider_not_configured',
      502: 'sso_provider_unavailable: the provider could not be reached',
    },
    request: {
      params: providerParam,
      querystring: {
        type: 'object',
        properties: {
          // No length limits here: any value off the allow-list is a 400, not a 422.
          redirect_uri: {
            type: 'string',
            description: 'Where to send the browser after a successful sign-in; an exact SSO_REDIRECT_ALLOWLIST value',
          },
          intent: {
            type: 'string',
            enum: ['login', 'step_up'],
            description: "`login` (default) signs in; `step_up` re-authenticates the signed-in caller's session",
          },
        },
      },
    },
    raw: start,
  },
  {
    method: 'GET',
    path: '/auth/:provider/callback',
    operationId: 'finishSso',
    summary: 'Single sign-on callback',
    description:
      'Where the provider sends the browser back. Validates the state (once, within 300 seconds, from the browser ' +
      'that started), exchanges the code and validates the ID token (signature, issuer — for microsoft the ' +
      "token's tenant issuer —, audience, nonce, expiry). Then signs in the user linked to the provider account, or " +
      'links the user with the same verified email, or creates a user from a pending invitation for that email. ' +
      'On success: sets the httpOnly, SameSite=Lax cookie `service_token` (Secure when PUBLIC_URL is https) and ' +
      'redirects (302) to `/app`, or to the allow-listed `redirect_uri` given at start. When the user has MFA on, no ' +
      'session is opened yet: it sets the short-lived binding cookie `atrium_sso_mfa` and redirects to ' +
      '`/app/mfa?challenge=…` (with `&api=/api/v1` when the sign-in came in under /api/v1: the binding cookie is sent only ' +
      'under the prefix the sign-in used; or to `redirect_uri` with the challenge), and POST /auth/sso/mfa under that ' +
      'prefix finishes the sign-in. ' +
      'A step-up attempt (intent=step_up) needs the account linked to the same user as the session that started ' +
      "it (else 403 `forbidden`) and a recent `auth_time` when the provider sends one; it records the authentication " +
      'on that session (after the MFA challenge when MFA is on) and redirects without a new cookie. Refusals are problems: ' +
      '400 `sso_state_invalid`, 401 `sso_failed`, 401 `token_invalid` (the step-up session ended), 403 `sso_email_unverified`, ' +
      '403 `sso_account_not_found`, 403 `account_suspended`, 409 `conflict` (the user is linked to another account of this provider), ' +
      '502 `sso_provider_unavailable` (the provider could not be reached or answered with a server error: start again later).',
    tag: 'Authentication',
    auth: 'public',
    rateLimit: 'auth',
    status: 302,
    problems: {
      400: 'sso_state_invalid: the state is missing, unknown, expired, already used or from another browser',
      401: 'sso_failed: the code exchange or the ID token validation failed (or a stale auth_time at step-up); token_invalid: the step-up session ended',
      403: 'sso_email_unverified, sso_account_not_found (no user, no valid invitation), account_suspended, or forbidden (at step-up, another account)',
      404: 'not_found (unknown provider) or sso_provider_not_configured',
      409: 'conflict: the user is already linked to another account of this provider',
      502: 'sso_provider_unavailable: the provider could not be reached, or answered the code exchange with a server error',
    },
    request: {
      params: providerParam,
      querystring: {
        type: 'object',
        // Providers add their own parameters (session_state, scope, authuser, …).
        additionalProperties: true,
        properties: {
          code: { type: 'string', maxLength: 4096, description: 'The authorization code' },
          state: { type: 'string', maxLength: 512, description: 'The state given at start' },
          error: { type: 'string', maxLength: 256, description: 'Set by the provider instead of code when sign-in failed' },
        },
      },
    },
    raw: callback,
  },
  {
    method: 'POST',
    path: '/auth/sso/mfa',
    operationId: 'answerSsoMfa',
    summary: 'Finish a single sign-on with the MFA code',
    description:
      'After a single sign-on of a user with MFA on, the callback redirects to `/app/mfa?challenge=…` (or to the ' +
      'allow-listed redirect_uri with that query) instead of opening a session. The page posts that challenge and ' +
      'a TOTP code (or a recovery code) here, from an allowed origin (PUBLIC_URL or CORS_ORIGINS, else 403 ' +
      '`csrf_rejected`) and with the httpOnly cookie `atrium_sso_mfa` the callback set (the challenge is bound to ' +
      'that browser). A sign-in then gets its `service_token` cookie; a step-up is recorded on its session. The ' +
      'answer is `{redirect_to}`, where the page sends the browser. A wrong or replayed code is 401 `mfa_invalid` ' +
      '(the challenge may be retried, 5 wrong codes at most); an unknown, expired (300 s), used or unbound challenge ' +
      'is 400 `sso_state_invalid`. Served under the prefix the sign-in started on.',
    tag: 'Authentication',
    extension: true,
    auth: 'public',
    rateLimit: 'auth',
    status: 200,
    problems: {
      400: 'sso_state_invalid: the challenge is unknown, expired, used, exhausted or from another browser',
      401: 'mfa_invalid (wrong, expired or replayed code) or mfa_required; token_invalid: the step-up session ended',
      403: 'csrf_rejected (not from an allowed origin) or account_suspended',
      409: 'conflict: the provider account was linked to another user meanwhile',
    },
    request: {
      body: {
        type: 'object',
        required: ['challenge', 'totp_code'],
        additionalProperties: false,
        properties: {
          challenge: { type: 'string', minLength: 1, maxLength: 512, description: 'The `challenge` query parameter of the redirect' },
          totp_code: {
            type: 'string',
            minLength: 1,
            maxLength: 64,
            description: 'A 6-digit code from the authenticator app, or a recovery code',
          },
        },
      },
    },
    response: {
      type: 'object',
      required: ['redirect_to'],
      properties: {
        redirect_to: { type: 'string', description: 'PUBLIC_URL/app, or the allow-listed redirect_uri given at start' },
      },
    },
    raw: answerMfa,
  },
];
