import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import WebSocket from 'ws';
import { createClient, type Client } from 'graphql-ws';
import type { FormattedExecutionResult } from 'graphql';
import { build, createCompanyKey, login, PASSWORD, seedOwner } from './helper';
import { hashPassword } from '../src/auth/password';
import { Company } from '../src/domains/identity/company.entity';
import { User } from '../src/domains/identity/user.entity';
import { inContext } from '../src/boot';
import Database from 'better-sqlite3';
import { SOCKET_RECHECK_MS } from '../src/host/live-credentials';
import { EXTERNAL_WRITES_SEEN_MS } from '../src/db/change-signal';

/**
 * A listening app over loopback. Clients opened through `connect` are disposed
 * before the app closes (build's own cleanup is run last, by hand).
 */
async function listeningApp(t: TestContext, config: Parameters<typeof build>[1] = {}) {
  const appCleanups: (() => unknown)[] = [];
  const clients: Client[] = [];
  const app = await build({ after: (fn: () => unknown) => appCleanups.push(fn) }, config);
  t.after(async () => {
    for (const client of clients) await client.dispose();
    for (const fn of appCleanups) await fn();
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const url = `ws://127.0.0.1:${port}/graphql`;

  function connect(authorization?: string, closed: { code: number; reason: string }[] = []): Client {
    const client = createClient({
      url,
      webSocketImpl: WebSocket,
      connectionParams: authorization ? { authorization } : {},
      retryAttempts: 0,
      shouldRetry: () => false,
      lazy: true,
      on: {
        closed: (event) => {
          const { code, reason } = event as { code: number; reason?: unknown };
          closed.push({ code, reason: String(reason ?? '') });
        },
      },
    });
    clients.push(client);
    return client;
  }
  return { app, url, connect };
}

/** Collects one subscription's results and its end, errors included. */
function collect<T = Record<string, unknown>>(client: Client, query: string) {
  const received: FormattedExecutionResult<T, unknown>[] = [];
  let error: unknown;
  let completed = false;
  const unsubscribe = client.subscribe<T>(
    { query },
    {
      next: (value) => received.push(value),
      error: (err) => (error = err),
      complete: () => (completed = true),
    },
  );
  return {
    received,
    unsubscribe,
    get error() {
      return error;
    },
    get completed() {
      return completed;
    },
  };
}

async function until(check: () => boolean, what: string, timeoutMs = 3000) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const auditListeners = (app: FastifyInstance) =>
  ((app.kernel.events as unknown as { emitter: { listenerCount(topic: string): number } }).emitter).listenerCount('audit.recorded');

async function createUser(app: FastifyInstance, companyId: string, role: 'admin' | 'member') {
  const email = `${role}-${Math.random().toString(36).slice(2)}@example.com`;
  const em = app.kernel.orm.em.fork();
  em.create(User, { company: em.getReference(Company, companyId), email, passwordHash: await hashPassword(PASSWORD, 1024), role });
  await em.flush();
  return email;
}

const AUDIT_EVENTS = 'subscription { auditEvents { action companyId actorLabel ip requestId createdAt } }';

interface AuditEventData {
  auditEvents: { action: string; companyId: string; actorLabel: string | null; ip: string | null; requestId: string | null; createdAt: string };
}

test("an owner sees live audit events of the company, never another company's", async (t) => {
  const { app, connect } = await listeningApp(t);
  const a = await seedOwner(app, undefined, 'A');
  const b = await seedOwner(app, undefined, 'B');
  const colleague = await createUser(app, a.companyId, 'admin');
  const ownerTokens = await login(app, a.email);

  const client = connect(`Bearer ${ownerTokens.access_token}`);
  const sub = collect<AuditEventData>(client, AUDIT_EVENTS);
  await until(() => auditListeners(app) === 1, 'the subscription to attach to the bus');

  // A colleague of A signs in: seen, with the request's ip and id.
  const res = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: colleague, password: PASSWORD } });
  assert.equal(res.statusCode, 200, res.body);
  await until(() => sub.received.length === 1, 'the auth.login event');
  const first = sub.received[0]!;
  assert.equal(first.errors, undefined);
  assert.equal(first.data!.auditEvents.action, 'auth.login');
  assert.equal(first.data!.auditEvents.companyId, a.companyId);
  assert.equal(first.data!.auditEvents.actorLabel, colleague);
  assert.equal(first.data!.auditEvents.ip, '127.0.0.1');
  assert.equal(first.data!.auditEvents.requestId, res.headers['x-request-id']);
  assert.ok(Math.abs(Date.parse(first.data!.auditEvents.createdAt) - Date.now()) < 60_000);

  // Company B is busy meanwhile: nothing of it may reach A's owner.
  await login(app, b.email);
  await createCompanyKey(app, b.companyId, 'b key');
  const failed = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: b.email, password: 'wrong-password-xx' } });
  assert.equal(failed.statusCode, 401);
  // Then A again; events arrive in order, so once this one is in, B's would have been too.
  await inContext(app.kernel.orm, () => app.domains.identity.apiKeys.createCompanyKey({ companyId: a.companyId, name: 'a key' }));
  await until(() => sub.received.length >= 2, 'the api_key.created event');
  await new Promise((resolve) => setTimeout(resolve, 50));

  assert.deepEqual(
    sub.received.map((r) => [r.data?.auditEvents.action, r.data?.auditEvents.companyId, r.data?.auditEvents.actorLabel]),
    [
      ['auth.login', a.companyId, colleague],
      ['api_key.created', a.companyId, 'cli'],
    ],
  );
  assert.equal(sub.error, undefined);
  assert.equal(sub.completed, false);

  // The client stops: the bus listener goes with it.
  sub.unsubscribe();
  await until(() => auditListeners(app) === 0, 'the listener to be removed after unsubscribe');
  await until(() => sub.completed, 'the subscription to complete');
});

test('a company API key may subscribe to its company audit feed', async (t) => {
  const { app, connect } = await listeningApp(t);
  const a = await seedOwner(app, undefined, 'A');
  const b = await seedOwner(app, undefined, 'B');
  const { key } = await createCompanyKey(app, a.companyId, 'dashboard');
  const sub = collect<AuditEventData>(connect(`Bearer ${key}`), AUDIT_EVENTS);
  await until(() => auditListeners(app) === 1, 'the subscription to attach');
  await login(app, b.email);
  await login(app, a.email);
  await until(() => sub.received.length === 1, 'the auth.login event of A');
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(sub.received.length, 1);
  assert.equal(sub.received[0]!.data!.auditEvents.companyId, a.companyId);
  assert.equal(sub.received[0]!.data!.auditEvents.actorLabel, a.email);
});

test('disposing the client releases every bus listener', async (t) => {
  const { app, connect } = await listeningApp(t);
  const a = await seedOwner(app);
  const { access_token } = await login(app, a.email);
  const client = connect(`Bearer ${access_token}`);
  const subs = [collect(client, AUDIT_EVENTS), collect(client, AUDIT_EVENTS), collect(client, AUDIT_EVENTS)];
  await until(() => auditListeners(app) === 3, 'three listeners');
  await client.dispose();
  await until(() => auditListeners(app) === 0, 'listeners released after dispose');
  for (const sub of subs) assert.equal(sub.error, undefined);

  // An abrupt end of the socket (no complete messages) releases them too.
  const second = connect(`Bearer ${access_token}`);
  collect(second, AUDIT_EVENTS);
  collect(second, AUDIT_EVENTS);
  await until(() => auditListeners(app) === 2, 'two listeners');
  second.terminate();
  await until(() => auditListeners(app) === 0, 'listeners released after terminate');
  // Events published afterwards reach nobody and break nothing.
  await login(app, a.email);
  assert.equal(auditListeners(app), 0);
});

/**
 * A refused connection_init: the server closes the socket with 4403 Forbidden, as
 * graphql-transport-ws prescribes, the reason being the catalog code of the refusal.
 */
async function assertRefused(
  connect: (authorization?: string, closed?: { code: number; reason: string }[]) => Client,
  app: FastifyInstance,
  authorization: string | undefined,
  reason: string,
) {
  const closed: { code: number; reason: string }[] = [];
  const client = connect(authorization, closed);
  const sub = collect(client, AUDIT_EVENTS);
  await until(() => sub.error !== undefined, 'the subscription to fail');
  await until(() => closed.length > 0, 'the socket to close');
  assert.deepEqual(closed[0], { code: 4403, reason });
  // The subscriber learns why: the close event itself is its error.
  assert.equal((sub.error as { code?: number }).code, 4403);
  assert.equal(sub.received.length, 0);
  assert.equal(sub.completed, false);
  assert.equal(auditListeners(app), 0, 'no listener attached for a refused socket');

  // Queries over such a socket fail as well: the socket is for authenticated callers.
  const query = collect(connect(authorization), '{ health { status } }');
  await until(() => query.error !== undefined, 'the query to fail');
  assert.equal(query.received.length, 0);
  assert.equal((query.error as { code?: number }).code, 4403);
}

test('a connection without credentials is refused and gets no events', async (t) => {
  const { app, connect } = await listeningApp(t);
  const a = await seedOwner(app);
  await assertRefused(connect, app, undefined, 'unauthenticated');
  await assertRefused(connect, app, '', 'unauthenticated');
  await login(app, a.email);
  assert.equal(auditListeners(app), 0);
});

test('a connection with a garbage or revoked credential is refused', async (t) => {
  const { app, connect } = await listeningApp(t);
  const a = await seedOwner(app);
  await assertRefused(connect, app, 'Bearer garbage.token.value', 'token_invalid');
  await assertRefused(connect, app, 'Bearer svc_not-a-real-key', 'token_invalid');
  await assertRefused(connect, app, 'Basic dXNlcjpwYXNz', 'token_invalid');
  // A logged-out session's access token.
  const { access_token } = await login(app, a.email);
  const out = await app.inject({ method: 'POST', url: '/v1/auth/logout', headers: { authorization: `Bearer ${access_token}` } });
  assert.ok(out.statusCode < 300, out.body);
  await assertRefused(connect, app, `Bearer ${access_token}`, 'token_invalid');
});

test("a member's audit subscription errors with forbidden", async (t) => {
  const { app, connect } = await listeningApp(t);
  const a = await seedOwner(app);
  const member = await createUser(app, a.companyId, 'member');
  const { access_token } = await login(app, member);
  const closed: { code: number; reason: string }[] = [];
  const client = connect(`Bearer ${access_token}`, closed);
  const sub = collect(client, AUDIT_EVENTS);
  await until(() => sub.error !== undefined, 'the subscription error');
  const errors = sub.error as { message: string; extensions?: { code?: string; http?: { status?: number } } }[];
  assert.ok(Array.isArray(errors), `GraphQL errors expected, got ${JSON.stringify(sub.error)}`);
  assert.equal(errors[0]!.extensions?.code, 'forbidden', JSON.stringify(errors));
  assert.equal(errors[0]!.extensions?.http?.status, 403);
  assert.equal(auditListeners(app), 0);
  await login(app, a.email);
  assert.equal(sub.received.length, 0);

  // The socket itself stays usable for what a member may do.
  const me = collect<{ me: { role: string } }>(client, '{ me { role } }');
  await until(() => me.completed, 'the me query');
  assert.deepEqual(me.received, [{ data: { me: { role: 'MEMBER' } } }]);
  // Only the lazy client's own normal closes when it had nothing left to run; no refusal.
  assert.ok(closed.every((c) => c.code === 1000), JSON.stringify(closed));
});

test('queries and mutations work over the socket (fullWsTransport)', async (t) => {
  const { app, connect } = await listeningApp(t);
  const a = await seedOwner(app);
  const { access_token } = await login(app, a.email);
  const client = connect(`Bearer ${access_token}`);

  const results: unknown[] = [];
  for await (const result of client.iterate({ query: '{ me { role user { email } company { id plan { id } } } }' })) {
    results.push(result);
  }
  assert.deepEqual(results, [{ data: { me: { role: 'OWNER', user: { email: a.email }, company: { id: a.companyId, plan: { id: 'starter' } } } } }]);

  // Resolver errors keep their catalog code over the socket.
  const denied = collect(client, '{ auditLog(perPage: 0) { total } }');
  await until(() => denied.completed || denied.error !== undefined, 'the auditLog query');
  const payload = (denied.received[0] ?? { errors: denied.error }) as { errors?: { extensions?: { code?: string } }[] };
  assert.equal(payload.errors?.[0]?.extensions?.code, 'validation_error', JSON.stringify(payload));

  const feedback = collect<{ submitDocsFeedback: { id: string } }>(
    client,
    'mutation { submitDocsFeedback(input: { page: "/docs/ws", helpful: true }) { id } }',
  );
  await until(() => feedback.completed, 'the mutation');
  assert.equal(typeof feedback.received[0]?.data?.submitDocsFeedback.id, 'string');
});

test('a mutation with a stricter budget spends it over the socket too: stepUp is rate-limited like POST /v1/auth/step-up', async (t) => {
  const { app, connect } = await listeningApp(t, {
    rateLimit: { windowSeconds: 60, authenticated: 1000, moduleKey: 10_000, anonymous: 1000, auth: 2, feedback: 1000 },
  });
  const a = await seedOwner(app);
  const { access_token } = await login(app, a.email); // one request of the auth budget, by IP
  const client = connect(`Bearer ${access_token}`);
  const stepUp = async (password: string) => {
    const op = collect<{ stepUp: { authenticatedAt: string } }>(client, `mutation { stepUp(input: { password: "${password}" }) { authenticatedAt } }`);
    await until(() => op.completed || op.error !== undefined, 'stepUp');
    return (op.received[0] ?? { errors: op.error }) as FormattedExecutionResult<{ stepUp: { authenticatedAt: string } }, { code?: string }>;
  };
  const first = await stepUp(PASSWORD);
  assert.equal(first.errors, undefined, JSON.stringify(first));
  const refused = await stepUp(PASSWORD);
  assert.equal(refused.errors?.[0]?.extensions?.code, 'rate_limited', JSON.stringify(refused));
  // Ordinary operations on the same socket keep their own, larger budget.
  const me = collect<{ me: { role: string } }>(client, '{ me { role } }');
  await until(() => me.completed, 'me');
  assert.deepEqual(me.received, [{ data: { me: { role: 'OWNER' } } }]);
});

test('queries over one socket see fresh data, not a connection-long cache', async (t) => {
  const { app, connect } = await listeningApp(t);
  const a = await seedOwner(app, undefined, 'Before');
  const { access_token } = await login(app, a.email);
  const client = connect(`Bearer ${access_token}`);
  const read = async () => {
    const q = collect<{ me: { user: { name: string | null }; company: { name: string } } }>(client, '{ me { user { name } company { name } } }');
    await until(() => q.completed || q.error !== undefined, 'me');
    assert.equal(q.error, undefined);
    return q.received[0]!.data!.me;
  };
  assert.deepEqual(await read(), { user: { name: null }, company: { name: 'Before' } });
  const em = app.kernel.orm.em.fork();
  await em.nativeUpdate(Company, { id: a.companyId }, { name: 'After' });
  await em.nativeUpdate(User, { id: a.userId }, { name: 'Renamed' });
  assert.deepEqual(await read(), { user: { name: 'Renamed' }, company: { name: 'After' } });
});

test("renaming yourself keeps your sockets open; a change of access (role) closes them (4401)", async (t) => {
  const { app, connect } = await listeningApp(t);
  const owner = await seedOwner(app);
  const adminEmail = await createUser(app, owner.companyId, 'admin');
  const adminLogin = await login(app, adminEmail);
  const { access_token } = adminLogin;
  const ownerToken = (await login(app, owner.email)).access_token;
  const closed: { code: number; reason: string }[] = [];
  const sub = collect<AuditEventData>(connect(`Bearer ${access_token}`, closed), AUDIT_EVENTS);
  await until(() => auditListeners(app) === 1, 'the subscription to attach');

  const renamed = await app.inject({ method: 'PATCH', url: '/v1/me/profile', headers: { authorization: `Bearer ${access_token}` }, payload: { name: 'Ada' } });
  assert.equal(renamed.statusCode, 200, renamed.body);
  // The socket stays and sees its own rename.
  await until(() => sub.received.some((r) => r.data?.auditEvents.action === 'user.profile_updated'), 'the rename event');
  assert.deepEqual(closed, []);

  const demoted = await app.inject({
    method: 'PATCH',
    url: `/v1/admin/users/${adminLogin.user.id}`,
    headers: { authorization: `Bearer ${ownerToken}` },
    payload: { role: 'member' },
  });
  assert.equal(demoted.statusCode, 200, demoted.body);
  await until(() => closed.length === 1, 'the demoted user socket to close');
  assert.deepEqual(closed[0], { code: 4401, reason: 'credential_changed' });
});

test('logging out closes the sockets opened with that session (4401), not other sessions', async (t) => {
  const { app, connect } = await listeningApp(t);
  const owner = await seedOwner(app);
  const first = await login(app, owner.email);
  const second = await login(app, owner.email);
  const closedFirst: { code: number; reason: string }[] = [];
  const closedSecond: { code: number; reason: string }[] = [];
  const subFirst = collect<AuditEventData>(connect(`Bearer ${first.access_token}`, closedFirst), AUDIT_EVENTS);
  const subSecond = collect<AuditEventData>(connect(`Bearer ${second.access_token}`, closedSecond), AUDIT_EVENTS);
  await until(() => auditListeners(app) === 2, 'both subscriptions to attach');

  const res = await app.inject({ method: 'POST', url: '/v1/auth/logout', headers: { authorization: `Bearer ${first.access_token}` } });
  assert.equal(res.statusCode, 204);
  await until(() => closedFirst.length === 1, 'the revoked session socket to close');
  assert.deepEqual(closedFirst[0], { code: 4401, reason: 'session_revoked' });
  // The other session's socket keeps streaming: it sees the logout event itself.
  await until(() => subSecond.received.some((r) => r.data?.auditEvents.action === 'auth.logout'), 'the logout event');
  assert.equal(closedSecond.length, 0);
  assert.equal(subFirst.received.filter((r) => r.data?.auditEvents.action === 'auth.logout').length, 0);
  await until(() => auditListeners(app) === 1, 'the closed socket to release its listener');
});

test('a socket does not outlive its access token: past expiry its operations are refused and it closes with 4401 token_expired', async (t) => {
  const { app, connect } = await listeningApp(t, { accessTokenTtlSeconds: 2 });
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  const closed: { code: number; reason: string }[] = [];
  const client = connect(`Bearer ${access_token}`, closed);
  const sub = collect<AuditEventData>(client, AUDIT_EVENTS);
  await until(() => auditListeners(app) === 1, 'the subscription to attach');
  await until(() => closed.length === 1, 'the socket to close at expiry', 2000 + SOCKET_RECHECK_MS + 2000);
  assert.deepEqual(closed[0], { code: 4401, reason: 'token_expired' });
  await until(() => auditListeners(app) === 0, 'the subscription to detach');
  assert.equal(sub.received.length, 0);
});

test('a company policy change reaches open sockets: an allow-list that leaves them out, or MFA they owe, closes them (4403), whichever process made it', async (t) => {
  const { app, connect } = await listeningApp(t);
  const owner = await seedOwner(app);
  const ownerToken = (await login(app, owner.email)).access_token;
  const adminEmail = await createUser(app, owner.companyId, 'admin');
  const adminToken = (await login(app, adminEmail)).access_token;
  const key = await createCompanyKey(app, owner.companyId);

  // MFA becomes required (by this process): the admin without MFA owes enrolment; the key does not.
  const adminClosed: { code: number; reason: string }[] = [];
  const adminClient = connect(`Bearer ${adminToken}`, adminClosed);
  collect<AuditEventData>(adminClient, AUDIT_EVENTS);
  const keyClosed: { code: number; reason: string }[] = [];
  const keyClient = connect(`Bearer ${key.key}`, keyClosed);
  const keySub = collect<AuditEventData>(keyClient, AUDIT_EVENTS);
  await until(() => auditListeners(app) === 2, 'both subscriptions to attach');
  const patched = await app.inject({ method: 'PATCH', url: '/v1/admin/security/policy', headers: { authorization: `Bearer ${ownerToken}` }, payload: { mfa_required: true } });
  assert.equal(patched.statusCode, 200, patched.body);
  await until(() => adminClosed.length === 1, 'the admin socket to close', SOCKET_RECHECK_MS + 2000);
  assert.deepEqual(adminClosed[0], { code: 4403, reason: 'mfa_enrollment_required' });
  await until(() => keySub.received.some((r) => r.data?.auditEvents.action === 'security_policy.updated'), 'the key to see the change');
  assert.deepEqual(keyClosed, []);

  // An allow-list written by another process (a standalone admin subgraph, the CLI): the key's socket from 127.0.0.1 closes.
  const other = new Database(app.config.databaseFile);
  t.after(() => other.close());
  other.pragma('busy_timeout = 5000');
  other.prepare('update security_policies set ip_allowlist = ?, version = version + 1 where company_id = ?').run(JSON.stringify(['10.0.0.0/8']), owner.companyId);
  await until(() => keyClosed.length === 1, 'the key socket to close', EXTERNAL_WRITES_SEEN_MS + SOCKET_RECHECK_MS + 2000);
  assert.deepEqual(keyClosed[0], { code: 4403, reason: 'ip_not_allowed' });
});

test('a company key\'s socket closes (4401 token_invalid) once the key passes the policy\'s maximum age, with no policy change meanwhile', async (t) => {
  const { app, connect } = await listeningApp(t);
  const owner = await seedOwner(app);
  const ownerToken = (await login(app, owner.email)).access_token;
  const patched = await app.inject({ method: 'PATCH', url: '/v1/admin/security/policy', headers: { authorization: `Bearer ${ownerToken}` }, payload: { api_key_max_age_days: 1 } });
  assert.equal(patched.statusCode, 200, patched.body);
  // A key two seconds short of a day old when the socket opens.
  const key = await createCompanyKey(app, owner.companyId);
  const other = new Database(app.config.databaseFile);
  t.after(() => other.close());
  other.pragma('busy_timeout = 5000');
  other.prepare('update api_keys set created_at = ? where id = ?').run(Date.now() - 86_400_000 + 2000, key.id);
  const closed: { code: number; reason: string }[] = [];
  const client = connect(`Bearer ${key.key}`, closed);
  collect<AuditEventData>(client, AUDIT_EVENTS);
  await until(() => auditListeners(app) === 1, 'the subscription to attach');
  assert.deepEqual(closed, []);
  await until(() => closed.length === 1, 'the socket to close once the key is too old', 2000 + SOCKET_RECHECK_MS + 2000);
  assert.deepEqual(closed[0], { code: 4401, reason: 'token_invalid' });
  const http = await app.inject({ method: 'GET', url: '/v1/admin/security/policy', headers: { authorization: `Bearer ${key.key}` } });
  assert.equal(http.statusCode, 401, 'HTTP refuses the same key');
});

test('a session or key ended by another process closes its sockets (4401) within SOCKET_REAUTHENTICATE_SECONDS; other sessions stay open', async (t) => {
  const { app, connect } = await listeningApp(t, { socketReauthenticateSeconds: 1 });
  const owner = await seedOwner(app);
  const first = (await login(app, owner.email)).access_token;
  const second = (await login(app, owner.email)).access_token;
  const key = await createCompanyKey(app, owner.companyId);
  const closedFirst: { code: number; reason: string }[] = [];
  const closedSecond: { code: number; reason: string }[] = [];
  const closedKey: { code: number; reason: string }[] = [];
  collect<AuditEventData>(connect(`Bearer ${first}`, closedFirst), AUDIT_EVENTS);
  collect<AuditEventData>(connect(`Bearer ${second}`, closedSecond), AUDIT_EVENTS);
  collect<AuditEventData>(connect(`Bearer ${key.key}`, closedKey), AUDIT_EVENTS);
  await until(() => auditListeners(app) === 3, 'the subscriptions to attach');
  // Another process (the CLI, a standalone identity subgraph) ends the first session and the key: no event reaches this one.
  const firstSession = (await app.inject({ method: 'GET', url: '/v1/me/sessions', headers: { authorization: `Bearer ${first}` } })).json() as { items?: { id: string; current: boolean }[] } | { id: string; current: boolean }[];
  const items = Array.isArray(firstSession) ? firstSession : (firstSession.items ?? []);
  const current = items.find((s) => s.current);
  assert.ok(current, 'the first token names its session');
  const other = new Database(app.config.databaseFile);
  t.after(() => other.close());
  other.pragma('busy_timeout = 5000');
  other.prepare("update sessions set revoked_at = ?, revoked_reason = 'elsewhere' where id = ?").run(Date.now(), current.id);
  other.prepare('update api_keys set revoked_at = ? where id = ?').run(Date.now(), key.id);
  await until(() => closedFirst.length === 1 && closedKey.length === 1, 'both sockets to close', 1000 + SOCKET_RECHECK_MS + 3000);
  assert.deepEqual(closedFirst[0], { code: 4401, reason: 'token_invalid' });
  assert.deepEqual(closedKey[0], { code: 4401, reason: 'token_invalid' });
  assert.deepEqual(closedSecond, []);
});

test('each operation over a socket spends a request of the caller\'s budget, as an HTTP request does (429 when spent)', async (t) => {
  const { app, connect } = await listeningApp(t, {
    rateLimit: { windowSeconds: 60, authenticated: 3, moduleKey: 10_000, anonymous: 1000, auth: 1000, feedback: 1000 },
  });
  const a = await seedOwner(app);
  const { access_token } = await login(app, a.email);
  const client = connect(`Bearer ${access_token}`);
  const me = async () => {
    const op = collect<{ me: { role: string } }>(client, '{ me { role } }');
    await until(() => op.completed || op.error !== undefined, 'me');
    return (op.received[0] ?? { errors: op.error }) as FormattedExecutionResult<{ me: { role: string } }, { code?: string }>;
  };
  for (let i = 0; i < 3; i++) assert.deepEqual(await me(), { data: { me: { role: 'OWNER' } } });
  const refused = await me();
  assert.equal(refused.errors?.[0]?.extensions?.code, 'rate_limited', JSON.stringify(refused));
});
