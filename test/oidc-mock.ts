import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { OAuth2Issuer, OAuth2Service, type MutableRedirectUri, type MutableResponse, type MutableToken } from 'oauth2-mock-server';
import type { SsoConfig } from '../src/domains/identity/sso.config';

/**
 * A real OpenID Connect provider on loopback (oauth2-mock-server: discovery,
 * /authorize, /token with PKCE, /jwks, RS256 ID tokens carrying the nonce of
 * the authorization request). The workplace flavour serves the discovery
 * document under /common/v2.0/ with the multi-tenant issuer
 * `http://127.0.0.1:<port>/{tenantid}/v2.0`, as Entra ID does; everything
 * else is the mock's own.
 */
export interface MockProvider {
  /** What SSO_*_ISSUER is set to. */
  issuer: string;
  origin: string;
  service: OAuth2Service;
  /** Changes the claims (and header) of the next ID token the token endpoint signs. */
  nextIdToken(edit: (payload: Record<string, unknown>, header: Record<string, unknown>) => void): void;
  /** Changes the next token endpoint response (status, body). */
  nextTokenResponse(edit: (response: MutableResponse) => void): void;
  /** Changes the next redirect of /authorize back to the client. */
  nextAuthorizeRedirect(edit: (redirect: MutableRedirectUri) => void): void;
  /** Plays the user at the consent screen: GET the authorization URL, return where /authorize redirects. */
  authorize(authorizationUrl: string): Promise<URL>;
  stop(): Promise<void>;
}

export const TENANT_A = '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b';
export const TENANT_B = '0a9b8c7d-6e5f-4a3b-9c2d-1e0f9a8b7c6d';

export async function startMockProvider(kind: 'google' | 'microsoft'): Promise<MockProvider> {
  const issuerState = new OAuth2Issuer();
  await issuerState.keys.generate('RS256');
  const service = new OAuth2Service(issuerState);
  const handler = service.requestHandler as unknown as http.RequestListener;
  let origin = '';

  const server = http.createServer((req, res) => {
    if (kind === 'microsoft' && req.url === '/common/v2.0/.well-known/openid-configuration') {
      // The mock's own discovery document, with the issuer a multi-tenant authority names.
      void fetch(`${origin}/.well-known/openid-configuration`)
        .then((r) => r.json() as Promise<Record<string, unknown>>)
        .then((doc) => {
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ ...doc, issuer: `${origin}/{tenantid}/v2.0`, subject_types_supported: ['pairwise'] }));
        });
      return;
    }
    if (req.url === '/elsewhere/.well-known/openid-configuration') {
      // A document found under a path whose issuer is another one (the root's).
      void fetch(`${origin}/.well-known/openid-configuration`)
        .then((r) => r.text())
        .then((doc) => res.setHeader('content-type', 'application/json').end(doc));
      return;
    }
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  issuerState.url = origin;

  // One pending edit at a time: a test that stops before the token endpoint leaves nothing queued behind.
  let idTokenEdit: ((payload: Record<string, unknown>, header: Record<string, unknown>) => void) | undefined;
  service.on('beforeTokenSigning', (token: MutableToken) => {
    // The token endpoint signs the access token first, then the ID token (the one with an audience).
    if (!('aud' in token.payload)) return;
    const edit = idTokenEdit;
    idTokenEdit = undefined;
    edit?.(token.payload as Record<string, unknown>, token.header as unknown as Record<string, unknown>);
  });

  return {
    issuer: kind === 'microsoft' ? `${origin}/common/v2.0` : origin,
    origin,
    service,
    nextIdToken: (edit) => void (idTokenEdit = edit),
    nextTokenResponse: (edit) => void service.once('beforeResponse', edit),
    nextAuthorizeRedirect: (edit) => void service.once('beforeAuthorizeRedirect', edit),
    async authorize(authorizationUrl) {
      const url = new URL(authorizationUrl);
      if (url.origin !== origin) throw new Error(`authorization URL ${authorizationUrl} is not the mock's`);
      const res = await fetch(url, { redirect: 'manual' });
      const location = res.headers.get('location');
      if (res.status !== 302 || !location) throw new Error(`/authorize answered ${res.status}: ${await res.text()}`);
      return new URL(location);
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export const CLIENTS = {
  google: { clientId: 'atrium-google-client', clientSecret: 'google-secret' },
  microsoft: { clientId: 'atrium-microsoft-client', clientSecret: 'microsoft-secret' },
};

export const ALLOWED_REDIRECT = 'https://app.example.com/after-sign-in';

export function ssoConfig(google: MockProvider | null, microsoft: MockProvider | null): SsoConfig {
  return {
    google: google ? { issuer: google.issuer, ...CLIENTS.google } : { issuer: 'https://accounts.google.com' },
    microsoft: microsoft ? { issuer: microsoft.issuer, ...CLIENTS.microsoft } : { issuer: 'https://login.microsoftonline.com/common/v2.0' },
    redirectAllowlist: [ALLOWED_REDIRECT],
  };
}

/** Every Set-Cookie line of a response. */
export function setCookies(res: LightMyRequestResponse): string[] {
  const raw = res.headers['set-cookie'];
  return raw === undefined ? [] : [raw].flat().map(String);
}

/** The Set-Cookie line for `name`, or undefined. */
export function setCookie(res: LightMyRequestResponse, name: string): string | undefined {
  return setCookies(res).find((line) => line.startsWith(`${name}=`));
}

/** `name=value` of a Set-Cookie line, for a Cookie header. */
export function cookiePair(line: string | undefined): string {
  if (!line) throw new Error('no such cookie was set');
  return line.split(';')[0]!;
}

export interface StartedFlow {
  start: LightMyRequestResponse;
  authorizationUrl: URL;
  /** `atrium_sso_state=…`, for the callback's Cookie header. */
  stateCookie: string;
  state: string;
}

export async function startFlow(app: FastifyInstance, provider: string, query = '', prefix = '/v1'): Promise<StartedFlow> {
  const start = await app.inject({ method: 'GET', url: `${prefix}/auth/${provider}/start${query}` });
  if (start.statusCode !== 302) throw new Error(`start answered ${start.statusCode}: ${start.body}`);
  const authorizationUrl = new URL(String(start.headers.location));
  return {
    start,
    authorizationUrl,
    stateCookie: cookiePair(setCookie(start, 'atrium_sso_state')),
    state: authorizationUrl.searchParams.get('state')!,
  };
}

/** The provider's redirect back to Atrium, as the browser follows it. */
export async function callback(app: FastifyInstance, location: URL, cookie: string | undefined): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'GET', url: location.pathname + location.search, headers: cookie ? { cookie } : {} });
}

/**
 * A whole browser sign-in: start, consent at the mock (whose next ID token is
 * edited by `claims`), callback. Returns the callback response and the flow.
 */
export async function signIn(
  app: FastifyInstance,
  mock: MockProvider,
  provider: 'google' | 'microsoft',
  claims: (payload: Record<string, unknown>, header: Record<string, unknown>) => void,
  query = '',
): Promise<{ res: LightMyRequestResponse; flow: StartedFlow; location: URL }> {
  const flow = await startFlow(app, provider, query);
  mock.nextIdToken(claims);
  const location = await mock.authorize(flow.authorizationUrl.href);
  const res = await callback(app, location, flow.stateCookie);
  return { res, flow, location };
}

/** Claims of a consumer account whose email the provider verified. */
export const googleClaims =
  (sub: string, email: string, extra: Record<string, unknown> = {}) =>
  (payload: Record<string, unknown>) =>
    Object.assign(payload, { sub, email, email_verified: true, ...extra });

/** Claims of a workplace account: tenant, the tenant's issuer, email with the domain-owner-verified claim. */
export const microsoftClaims =
  (mock: MockProvider, sub: string, email: string, extra: Record<string, unknown> = {}, tid = TENANT_A) =>
  (payload: Record<string, unknown>) =>
    Object.assign(payload, { sub, tid, iss: `${mock.origin}/${tid}/v2.0`, email, xms_edov: true, preferred_username: email, ...extra });
