import type { FastifyReply, FastifyRequest } from 'fastify';
import { API_PREFIXES, type RestRoute } from '../route';
import { clearCookie, readCookie, serializeCookie, SESSION_COOKIE, SSO_STATE_COOKIE } from '../../src/auth/cookies';

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
  return `${request.server.services.config.publicUrl}${prefixOf(request)}/auth/${encodeURIComponent(provider)}/callback`;
}

const secureCookies = (request: FastifyRequest) => request.server.services.config.publicUrl.startsWith('https://');

async function start(request: FastifyRequest, reply: FastifyReply) {
  const { provider } = request.params as ProviderParams;
  const { redirect_uri: redirectUri } = request.query as { redirect_uri?: string };
  const redirectUriOfCallback = callbackUrl(request, provider);
  const result = await request.server.services.sso.start({ provider, redirectUri, callbackUrl: redirectUriOfCallback, meta: request.meta });
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
  const result = await request.server.services.sso.finish({
    provider,
    query: request.query as Record<string, unknown>,
    callbackUrl: redirectUri,
    boundState: readCookie(request.headers.cookie, SSO_STATE_COOKIE),
    meta: request.meta,
  });
  reply.header('set-cookie', serializeCookie(SESSION_COOKIE, result.cookieToken, { maxAgeSeconds: result.cookieMaxAgeSeconds, secure }));
  return reply.redirect(result.redirectTo, 302);
}

/**
 * Single sign-on. Both are browser redirects, so they call the core SsoService
 * directly (`raw`) instead of a GraphQL operation.
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
      'a provider that cannot be reached is 502 `sso_provider_unavailable`.',
    tag: 'Authentication',
    auth: 'public',
    rateLimit: 'auth',
    status: 302,
    problems: {
      400: 'redirect_uri_not_allowed: redirect_uri is not on the allow-list',
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
      'redirects (302) to `/app`, or to the allow-listed `redirect_uri` given at start. Refusals are problems: ' +
      '400 `sso_state_invalid`, 401 `sso_failed`, 403 `sso_email_unverified`, 403 `sso_account_not_found`, ' +
      '403 `forbidden` (suspended), 409 `conflict` (the user is linked to another account of this provider).',
    tag: 'Authentication',
    auth: 'public',
    rateLimit: 'auth',
    status: 302,
    problems: {
      400: 'sso_state_invalid: the state is missing, unknown, expired, already used or from another browser',
      401: 'sso_failed: the code exchange or the ID token validation failed',
      403: 'sso_email_unverified, sso_account_not_found (no user, no valid invitation) or forbidden (suspended)',
      404: 'not_found (unknown provider) or sso_provider_not_configured',
      409: 'conflict: the user is already linked to another account of this provider',
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
];
