import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import WebSocket from 'ws';
import { createClient } from 'graphql-ws';
import { bearer, build, login, seedOwner } from './helper';
import { cookiePair, googleClaims, setCookie, signIn, ssoConfig, startMockProvider, type MockProvider } from './oidc-mock';
import type { Config } from '../src/config';

const PUBLIC_URL = 'http://127.0.0.1:8080';
const FOREIGN = 'https://evil.example.net';

let google: MockProvider;
before(async () => {
  google = await startMockProvider('google');
});
after(async () => {
  await google.stop();
});

/** REST answers a problem; /graphql the same code in errors[0].extensions. */
function assertCode(res: LightMyRequestResponse, status: number, code: string) {
  assert.equal(res.statusCode, status, res.body);
  const body = res.json();
  assert.equal(body.code ?? body.errors?.[0]?.extensions?.code, code, res.body);
}

/** An app, an owner, and a browser session of that owner (its `service_token=…` cookie). */
async function browserSession(t: Parameters<typeof build>[0], config: Partial<Config> = {}) {
  const app = await build(t, { sso: ssoConfig(google, null), ...config });
  const owner = await seedOwner(app, `csrf-${Math.random().toString(36).slice(2)}@example.com`);
  const { res } = await signIn(app, google, 'google', googleClaims(`sub-${owner.email}`, owner.email));
  assert.equal(res.statusCode, 302, res.body);
  return { app, owner, cookie: cookiePair(setCookie(res, 'service_token')) };
}

const profile = (app: FastifyInstance, headers: Record<string, string>) => app.inject({ url: '/v1/me/profile', headers });
const logout = (app: FastifyInstance, headers: Record<string, string>) => app.inject({ method: 'POST', url: '/v1/auth/logout', headers });

test('a cookie-authenticated logout from a foreign origin (or none) is 403 csrf_rejected and changes nothing', async (t) => {
  const { app, cookie, owner } = await browserSession(t);
  assertCode(await logout(app, { cookie, origin: FOREIGN }), 403, 'csrf_rejected');
  assertCode(await logout(app, { cookie, referer: `${FOREIGN}/page` }), 403, 'csrf_rejected');
  assertCode(await logout(app, { cookie }), 403, 'csrf_rejected');
  assertCode(await logout(app, { cookie, origin: 'null' }), 403, 'csrf_rejected');
  // A look-alike origin: another port, another scheme, a suffix.
  for (const origin of ['http://127.0.0.1:8081', 'https://127.0.0.1:8080', 'http://127.0.0.1:8080.evil.example']) {
    assertCode(await logout(app, { cookie, origin }), 403, 'csrf_rejected');
  }
  // Nothing happened: the session is alive.
  const res = await profile(app, { cookie });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().id, owner.userId);
});

test('a cookie-authenticated logout from PUBLIC_URL is 204, clears the cookie and ends the session', async (t) => {
  const { app, cookie } = await browserSession(t);
  const res = await logout(app, { cookie, origin: PUBLIC_URL });
  assert.equal(res.statusCode, 204, res.body);
  const cleared = setCookie(res, 'service_token')!;
  assert.match(cleared, /^service_token=;/);
  assert.match(cleared, /Max-Age=0/);
  assert.match(cleared, /HttpOnly/);
  assertCode(await profile(app, { cookie }), 401, 'token_invalid');
  assertCode(await logout(app, { cookie, origin: PUBLIC_URL }), 401, 'token_invalid');
});

test('a Referer of PUBLIC_URL counts when Origin is absent; a CORS_ORIGINS origin is allowed too', async (t) => {
  const { app, cookie } = await browserSession(t, { corsOrigins: ['https://app.example.com'] });
  const gql = (headers: Record<string, string>) =>
    app.inject({ method: 'POST', url: '/graphql', headers: { cookie, ...headers }, payload: { query: '{ me { role } }' } });
  assert.equal((await gql({ referer: `${PUBLIC_URL}/app/settings` })).statusCode, 200);
  assert.equal((await gql({ origin: 'https://app.example.com' })).statusCode, 200);
  assertCode(await gql({ origin: 'https://other.example.com' }), 403, 'csrf_rejected');
  // GraphQL mutations with the cookie follow the same rule.
  const out = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers: { cookie, origin: FOREIGN },
    payload: { query: 'mutation { logout }' },
  });
  assertCode(out, 403, 'csrf_rejected');
  const done = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers: { cookie, origin: 'https://app.example.com' },
    payload: { query: 'mutation { logout }' },
  });
  assert.equal(done.statusCode, 200, done.body);
  assert.equal(done.json().data.logout, true);
  assert.match(setCookie(done, 'service_token')!, /Max-Age=0/);
  assertCode(await profile(app, { cookie }), 401, 'token_invalid');
});

test('safe methods with the cookie need no origin', async (t) => {
  const { app, cookie, owner } = await browserSession(t);
  const res = await profile(app, { cookie, origin: FOREIGN });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().id, owner.userId);
});

test('a Bearer header wins over the cookie (and is not origin-checked)', async (t) => {
  const { app, cookie, owner } = await browserSession(t);
  const other = await seedOwner(app, 'bearer-owner@example.com', 'Other Co');
  const tokens = await login(app, other.email);
  const res = await profile(app, { cookie, ...bearer(tokens.access_token) });
  assert.equal(res.json().id, other.userId);
  // Logging out with the Bearer from anywhere ends the Bearer's session, not the cookie's.
  assert.equal((await logout(app, { cookie, origin: FOREIGN, ...bearer(tokens.access_token) })).statusCode, 204);
  assertCode(await profile(app, bearer(tokens.access_token)), 401, 'token_invalid');
  assert.equal((await profile(app, { cookie })).json().id, owner.userId);
  // A bad Bearer is not rescued by a good cookie.
  assertCode(await profile(app, { cookie, authorization: 'Bearer junk' }), 401, 'token_invalid');
});

test('an unknown cookie is 401 token_invalid; revoking the session (revoke-all, suspension) ends the cookie at once', async (t) => {
  const { app, cookie, owner } = await browserSession(t);
  assertCode(await profile(app, { cookie: 'service_token=not-a-real-token' }), 401, 'token_invalid');
  assert.equal((await profile(app, { cookie })).statusCode, 200);
  // Revoke-all from another (token) session ends the browser session too.
  const tokens = await login(app, owner.email);
  const revoked = await app.inject({ method: 'POST', url: '/v1/me/sessions/revoke-all', headers: bearer(tokens.access_token) });
  assert.equal(revoked.statusCode, 200, revoked.body);
  assertCode(await profile(app, { cookie }), 401, 'token_invalid');

  // Suspension: sign in again, then suspend; the change event evicts the cached cookie.
  const { res } = await signIn(app, google, 'google', googleClaims(`sub-${owner.email}`, owner.email));
  const fresh = cookiePair(setCookie(res, 'service_token'));
  assert.equal((await profile(app, { cookie: fresh })).statusCode, 200);
  await app.kernel.orm.em.fork().getConnection().execute("update users set status = 'suspended' where id = ?", [owner.userId]);
  app.kernel.events.publish('user.changed', { userId: owner.userId, access: true });
  assertCode(await profile(app, { cookie: fresh }), 401, 'token_invalid');
});

test('the GraphQL WebSocket accepts the cookie of the upgrade request from a trusted Origin only', async (t) => {
  const cleanups: (() => unknown)[] = [];
  t.after(async () => {
    for (const fn of cleanups.reverse()) await fn();
  });
  const { app, cookie, owner } = await browserSession({ after: (fn: () => unknown) => cleanups.push(fn) });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const url = `ws://127.0.0.1:${(app.server.address() as AddressInfo).port}/graphql`;

  /** One query over a socket opened with these handshake headers; the data, or how the socket closed. */
  async function queryOverSocket(headers: Record<string, string>, connectionParams: Record<string, string> = {}) {
    const closed: { code: number; reason: string }[] = [];
    const client = createClient({
      url,
      webSocketImpl: class extends WebSocket {
        constructor(address: string, protocols?: string | string[]) {
          super(address, protocols, { headers });
        }
      },
      connectionParams,
      retryAttempts: 0,
      shouldRetry: () => false,
      on: { closed: (event) => void closed.push(event as { code: number; reason: string }) },
    });
    cleanups.push(() => client.dispose());
    try {
      for await (const result of client.iterate<{ me: { user: { id: string } | null } }>({ query: '{ me { user { id } } }' })) {
        return { data: result.data, errors: result.errors, closed };
      }
    } catch {
      // the socket was refused; `closed` says how
    }
    return { data: undefined, errors: undefined, closed };
  }

  const ok = await queryOverSocket({ cookie, origin: PUBLIC_URL });
  assert.equal(ok.errors, undefined);
  assert.equal(ok.data?.me.user?.id, owner.userId);

  const foreign = await queryOverSocket({ cookie, origin: FOREIGN });
  assert.equal(foreign.data, undefined);
  assert.equal(foreign.closed[0]?.code, 4403);

  const noOrigin = await queryOverSocket({ cookie });
  assert.equal(noOrigin.data, undefined);
  assert.equal(noOrigin.closed[0]?.code, 4403);

  // connectionParams win over the cookie.
  const other = await seedOwner(app, 'ws-other@example.com', 'WS Co');
  const tokens = await login(app, other.email);
  const param = await queryOverSocket({ cookie, origin: PUBLIC_URL }, { authorization: `Bearer ${tokens.access_token}` });
  assert.equal(param.data?.me.user?.id, other.userId);
});
