import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { LightMyRequestResponse } from 'fastify';
import { SignJWT } from 'jose';
import { bearer, build, createCompanyKey, login, PASSWORD, seedOwner } from './helper';
import { hashPassword } from '../src/auth/password';
import { Company } from '../src/domains/identity/company.entity';
import { User } from '../src/domains/identity/user.entity';
import { DocsFeedback } from '../src/domains/platform/docs-feedback.entity';
import { inContext } from '../src/boot';
import { AuditEvent } from '../src/domains/audit/audit-event.entity';

interface GqlError {
  message: string;
  extensions: { code: string; http: { status: number }; [key: string]: unknown };
}

interface GqlResult {
  res: LightMyRequestResponse;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  data: any;
  errors?: GqlError[];
}

async function gql(
  app: FastifyInstance,
  query: string,
  variables?: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<GqlResult> {
  const res = await app.inject({ method: 'POST', url: '/graphql', payload: { query, variables }, headers });
  const body = res.json();
  return { res, data: body.data, errors: body.errors };
}

function assertCode(result: GqlResult, code: string, status?: number) {
  assert.ok(result.errors?.length, `expected errors, got ${result.res.body}`);
  assert.equal(result.errors![0]!.extensions.code, code, result.res.body);
  if (status !== undefined) assert.equal(result.errors![0]!.extensions.http.status, status, result.res.body);
}

function assertNoErrors(result: GqlResult) {
  assert.equal(result.errors, undefined, result.res.body);
  assert.equal(result.res.statusCode, 200, result.res.body);
}

/** Every /graphql response, success or error, carries the version and rate-limit headers. */
function assertStandardHeaders(res: LightMyRequestResponse) {
  assert.match(String(res.headers['x-service-version']), /^\d{4}\.\d{2}\.\d{2}$/);
  for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
    assert.match(String(res.headers[h]), /^\d+$/, `${h} missing on ${res.statusCode} ${res.body}`);
  }
}

const LOGIN = `mutation Login($input: LoginInput!) {
  login(input: $input) { accessToken refreshToken user { id email role } }
}`;

const ME = `{
  me {
    role authMethod
    user { id email role }
    apiKey { id name prefix }
    company { id name plan { id monthlyCredits } availableModels { id displayName } }
  }
}`;

/** A user of the company created directly in the database. */
async function createUser(app: FastifyInstance, companyId: string, role: 'admin' | 'member', email = `${role}-${Math.random().toString(36).slice(2)}@example.com`) {
  const em = app.kernel.orm.em.fork();
  const user = em.create(User, {
    company: em.getReference(Company, companyId),
    email,
    passwordHash: await hashPassword(PASSWORD, 1024),
    role,
  });
  await em.flush();
  return { userId: user.id, email };
}

test('login mutation returns a token pair and the user', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const r = await gql(app, LOGIN, { input: { email: owner.email, password: PASSWORD } });
  assertNoErrors(r);
  assertStandardHeaders(r.res);
  assert.equal(typeof r.data.login.accessToken, 'string');
  assert.equal(typeof r.data.login.refreshToken, 'string');
  assert.deepEqual(r.data.login.user, { id: owner.userId, email: owner.email, role: 'OWNER' });
});

test('login with a wrong password is invalid_credentials (401)', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const r = await gql(app, LOGIN, { input: { email: owner.email, password: 'not-the-password' } });
  assertCode(r, 'invalid_credentials', 401);
  // A mutation's result is nullable: it fails alone, without nulling the whole data.
  assert.deepEqual(r.data, { login: null });
  assertStandardHeaders(r.res);
  // An unknown email answers the same way.
  const unknown = await gql(app, LOGIN, { input: { email: 'nobody@example.com', password: PASSWORD } });
  assertCode(unknown, 'invalid_credentials', 401);
});

test('refreshToken rotates; the presented token then fails with token_invalid', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const first = (await gql(app, LOGIN, { input: { email: owner.email, password: PASSWORD } })).data.login;
  const REFRESH = 'mutation R($input: RefreshTokenInput!) { refreshToken(input: $input) { accessToken refreshToken } }';

  const rotated = await gql(app, REFRESH, { input: { refreshToken: first.refreshToken } });
  assertNoErrors(rotated);
  const pair = rotated.data.refreshToken;
  assert.notEqual(pair.refreshToken, first.refreshToken);
  // The new access token works.
  const me = await gql(app, '{ me { user { id } } }', undefined, bearer(pair.accessToken));
  assertNoErrors(me);
  assert.equal(me.data.me.user.id, owner.userId);

  const reused = await gql(app, REFRESH, { input: { refreshToken: first.refreshToken } });
  assertCode(reused, 'token_invalid', 401);
  // The rotated one still works once.
  const again = await gql(app, REFRESH, { input: { refreshToken: pair.refreshToken } });
  assertNoErrors(again);
  const garbage = await gql(app, REFRESH, { input: { refreshToken: 'not-a-token' } });
  assertCode(garbage, 'token_invalid', 401);
});

test('me with an access token resolves user, company, plan and models in-process', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app, undefined, 'Acme Widgets');
  const tokens = await login(app, owner.email);
  const r = await gql(app, ME, undefined, bearer(tokens.access_token));
  assertNoErrors(r);
  assertStandardHeaders(r.res);
  const me = r.data.me;
  assert.equal(me.role, 'OWNER');
  assert.equal(me.authMethod, 'SESSION');
  assert.deepEqual(me.user, { id: owner.userId, email: owner.email, role: 'OWNER' });
  assert.equal(me.apiKey, null);
  assert.equal(me.company.id, owner.companyId);
  assert.equal(me.company.name, 'Acme Widgets');
  // Entity extensions from the billing and modules subgraphs.
  assert.equal(me.company.plan.id, 'starter');
  assert.equal(typeof me.company.plan.monthlyCredits, 'number');
  assert.ok(Array.isArray(me.company.availableModels) && me.company.availableModels.length > 0);
  for (const m of me.company.availableModels) {
    assert.equal(typeof m.id, 'string');
    assert.equal(typeof m.displayName, 'string');
  }
  // The User.company field resolves too (the identity resolver over the loader).
  const nested = await gql(app, '{ me { user { company { id plan { id } } } } }', undefined, bearer(tokens.access_token));
  assertNoErrors(nested);
  assert.deepEqual(nested.data.me.user.company, { id: owner.companyId, plan: { id: 'starter' } });
});

test('me with a company API key: API_KEY, ADMIN, no user', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { key, id } = await createCompanyKey(app, owner.companyId, 'ci key');
  const r = await gql(app, ME, undefined, bearer(key));
  assertNoErrors(r);
  assert.equal(r.data.me.authMethod, 'API_KEY');
  assert.equal(r.data.me.role, 'ADMIN');
  assert.equal(r.data.me.user, null);
  assert.equal(r.data.me.apiKey.id, id);
  assert.equal(r.data.me.apiKey.name, 'ci key');
  assert.ok(key.startsWith(r.data.me.apiKey.prefix));
  assert.equal(r.data.me.company.id, owner.companyId);
  assert.equal(r.data.me.company.plan.id, 'starter');
});

test('me without a credential is unauthenticated; garbage and expired tokens are refused', async (t) => {
  const jwtSecret = 'graphql-test-secret-0123456789abcdef';
  const app = await build(t, { jwtSecret });
  const owner = await seedOwner(app);

  const none = await gql(app, '{ me { role } }');
  assertCode(none, 'unauthenticated', 401);
  assert.equal(none.data, null);
  assertStandardHeaders(none.res);

  const garbage = await gql(app, '{ me { role } }', undefined, bearer('garbage.token.value'));
  assertCode(garbage, 'token_invalid', 401);
  const unknownKey = await gql(app, '{ me { role } }', undefined, bearer('svc_not-a-real-key'));
  assertCode(unknownKey, 'token_invalid', 401);
  const notBearer = await gql(app, '{ me { role } }', undefined, { authorization: 'Basic abc' });
  assertCode(notBearer, 'token_invalid', 401);

  // A correctly signed token whose lifetime is over.
  const now = Math.floor(Date.now() / 1000);
  const expired = await new SignJWT({ cid: owner.companyId, role: 'owner', sid: '00000000-0000-4000-8000-000000000000' })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(owner.userId)
    .setIssuer(app.config.publicUrl)
    .setIssuedAt(now - 3600)
    .setExpirationTime(now - 60)
    .sign(new TextEncoder().encode(jwtSecret));
  const late = await gql(app, '{ me { role } }', undefined, bearer(expired));
  // The catalog has a dedicated code for an expired access token.
  assertCode(late, 'token_expired', 401);

  // Same signature with a wrong key is just invalid.
  const forged = await new SignJWT({ cid: owner.companyId, role: 'owner', sid: 'x' })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(owner.userId)
    .setIssuer(app.config.publicUrl)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(new TextEncoder().encode('another-secret-0123456789abcdefgh'));
  assertCode(await gql(app, '{ me { role } }', undefined, bearer(forged)), 'token_invalid', 401);
});

test('logout returns true and the access token stops working', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const tokens = await login(app, owner.email);
  const r = await gql(app, 'mutation { logout }', undefined, bearer(tokens.access_token));
  assertNoErrors(r);
  assert.equal(r.data.logout, true);
  assert.match(String(r.res.headers['set-cookie']), /service_token=;.*Max-Age=0/);
  const after = await gql(app, '{ me { role } }', undefined, bearer(tokens.access_token));
  assertCode(after, 'token_invalid', 401);
  // Its refresh token died with the session.
  const refresh = await gql(
    app,
    'mutation R($input: RefreshTokenInput!) { refreshToken(input: $input) { accessToken } }',
    { input: { refreshToken: tokens.refresh_token } },
  );
  assertCode(refresh, 'token_invalid', 401);
  // Logout needs a credential.
  assertCode(await gql(app, 'mutation { logout }'), 'unauthenticated', 401);
});

test('health is public', async (t) => {
  const app = await build(t);
  const r = await gql(app, '{ health { status version database uptimeSeconds } }');
  assertNoErrors(r);
  assertStandardHeaders(r.res);
  assert.equal(r.data.health.status, 'ok');
  assert.equal(r.data.health.version, r.res.headers['x-service-version']);
  assert.equal(typeof r.data.health.uptimeSeconds, 'number');
});

test('submitDocsFeedback is public and stores the feedback', async (t) => {
  const app = await build(t);
  const r = await gql(
    app,
    'mutation F($input: DocsFeedbackInput!) { submitDocsFeedback(input: $input) { id createdAt } }',
    { input: { page: '/docs/auth', helpful: true, comment: 'Clear enough' } },
  );
  assertNoErrors(r);
  const stored = await app.kernel.orm.em.fork().findOne(DocsFeedback, { id: r.data.submitDocsFeedback.id });
  assert.ok(stored, 'feedback row stored');
  assert.equal(stored.page, '/docs/auth');
  assert.equal(stored.helpful, true);
  assert.equal(stored.comment, 'Clear enough');
  assert.ok(!Number.isNaN(Date.parse(r.data.submitDocsFeedback.createdAt)));

  const empty = await gql(
    app,
    'mutation F($input: DocsFeedbackInput!) { submitDocsFeedback(input: $input) { id } }',
    { input: { page: '/docs/auth' } },
  );
  assertCode(empty, 'validation_error', 422);
});

test('plans and models need a credential', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const tokens = await login(app, owner.email);
  for (const query of ['{ plans { id name monthlyCredits } }', '{ models { id displayName provider } }']) {
    assertCode(await gql(app, query), 'unauthenticated', 401);
    const ok = await gql(app, query, undefined, bearer(tokens.access_token));
    assertNoErrors(ok);
    const list = Object.values(ok.data)[0] as unknown[];
    assert.ok(Array.isArray(list) && list.length > 0, query);
  }
});

test('auditLog requires an admin: a member is forbidden, owner and API key may read', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const member = await createUser(app, owner.companyId, 'member');
  const memberTokens = await login(app, member.email);
  const denied = await gql(app, '{ auditLog { total } }', undefined, bearer(memberTokens.access_token));
  assertCode(denied, 'forbidden', 403);
  assert.equal(denied.data, null);
  assertCode(await gql(app, '{ auditLog { total } }'), 'unauthenticated', 401);

  const ownerTokens = await login(app, owner.email);
  const r = await gql(app, '{ auditLog { total items { action companyId actorLabel } } }', undefined, bearer(ownerTokens.access_token));
  assertNoErrors(r);
  assert.ok(r.data.auditLog.total >= 3); // company.created and two logins
  for (const item of r.data.auditLog.items) assert.equal(item.companyId, owner.companyId);
  const actions = r.data.auditLog.items.map((i: { action: string }) => i.action);
  assert.ok(actions.includes('auth.login'));
  assert.ok(actions.includes('company.created'));

  const { key } = await createCompanyKey(app, owner.companyId);
  assertNoErrors(await gql(app, '{ auditLog { total } }', undefined, bearer(key)));
});

test('auditLog never shows another company', async (t) => {
  const app = await build(t);
  const a = await seedOwner(app, undefined, 'A');
  const b = await seedOwner(app, undefined, 'B');
  await login(app, b.email);
  const tokensA = await login(app, a.email);
  const r = await gql(app, '{ auditLog(perPage: 100) { total items { companyId actorLabel } } }', undefined, bearer(tokensA.access_token));
  assertNoErrors(r);
  assert.equal(r.data.auditLog.items.length, r.data.auditLog.total);
  for (const item of r.data.auditLog.items) {
    assert.equal(item.companyId, a.companyId);
    assert.notEqual(item.actorLabel, b.email);
  }
});

test('auditLog pagination: page/perPage, newest first, bounds are validated', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  for (let i = 0; i < 4; i++) await login(app, owner.email);
  const { access_token } = await login(app, owner.email);
  const auth = bearer(access_token);
  const PAGE = 'query P($page: Int!, $perPage: Int!) { auditLog(page: $page, perPage: $perPage) { page perPage total items { id createdAt } } }';

  const all = await gql(app, PAGE, { page: 1, perPage: 100 }, auth);
  assertNoErrors(all);
  const total = all.data.auditLog.total;
  assert.equal(total, 6); // company.created + 5 logins
  const times = all.data.auditLog.items.map((i: { createdAt: string }) => Date.parse(i.createdAt));
  assert.deepEqual(times, [...times].sort((x, y) => y - x), 'newest first');

  const p1 = await gql(app, PAGE, { page: 1, perPage: 4 }, auth);
  const p2 = await gql(app, PAGE, { page: 2, perPage: 4 }, auth);
  const p3 = await gql(app, PAGE, { page: 3, perPage: 4 }, auth);
  assertNoErrors(p1);
  assert.deepEqual({ ...p1.data.auditLog, items: undefined }, { page: 1, perPage: 4, total, items: undefined });
  assert.equal(p1.data.auditLog.items.length, 4);
  assert.equal(p2.data.auditLog.items.length, 2);
  assert.equal(p2.data.auditLog.page, 2);
  assert.equal(p3.data.auditLog.items.length, 0);
  const ids = [...p1.data.auditLog.items, ...p2.data.auditLog.items].map((i: { id: string }) => i.id);
  assert.deepEqual(ids, all.data.auditLog.items.map((i: { id: string }) => i.id));

  // The default page size is 50.
  const defaults = await gql(app, '{ auditLog { page perPage } }', undefined, auth);
  assert.deepEqual(defaults.data.auditLog, { page: 1, perPage: 50 });

  for (const [page, perPage] of [[1, 0], [1, 1000], [0, 10], [-1, 10]]) {
    const bad = await gql(app, PAGE, { page, perPage }, auth);
    assertCode(bad, 'validation_error', 422);
    assert.ok(Array.isArray(bad.errors![0]!.extensions.errors), 'validation issues listed');
  }
});

test('document errors are HTTP 400 with errors', async (t) => {
  const app = await build(t);
  const syntax = await gql(app, '{ health { status ');
  assert.equal(syntax.res.statusCode, 400, syntax.res.body);
  assert.ok(syntax.errors?.length);
  assertStandardHeaders(syntax.res);

  const unknownField = await gql(app, '{ health { status noSuchField } }');
  assert.equal(unknownField.res.statusCode, 400, unknownField.res.body);
  assert.ok(unknownField.errors?.length);
  assert.equal(unknownField.errors![0]!.extensions.code, 'bad_request');
  assert.match(unknownField.errors![0]!.message, /noSuchField/);
  assertStandardHeaders(unknownField.res);

  const badVariable = await gql(app, LOGIN, { input: { email: 'x@example.com' } });
  assert.equal(badVariable.res.statusCode, 400, badVariable.res.body);
  assert.ok(badVariable.errors?.length);
  assert.equal(badVariable.errors![0]!.extensions.code, 'bad_request');
});

test('a GET /graphql whose document names no runnable operation is 400 bad_request, as over POST, never a 500', async (t) => {
  const app = await build(t);
  const cases = [
    { query: 'query A { health { status } } query B { health { status } }', message: 'Must provide operation name if query contains multiple operations.' },
    { query: 'query A { health { status } }', operationName: 'B', message: 'Unknown operation named "B".' },
    { query: 'query A { health { status } } mutation M { logout }', message: 'Must provide operation name if query contains multiple operations.' },
  ];
  for (const { query, operationName, message } of cases) {
    for (const method of ['GET', 'POST'] as const) {
      const res =
        method === 'GET'
          ? await app.inject({ method, url: '/graphql', query: { query, ...(operationName ? { operationName } : {}) } })
          : await app.inject({ method, url: '/graphql', payload: { query, operationName } });
      assert.equal(res.statusCode, 400, `${method} ${query}: ${res.body}`);
      assert.equal(res.json().errors[0].extensions.code, 'bad_request');
      assert.equal(res.json().errors[0].message, message);
    }
  }
});

test('a mutation over GET /graphql is refused', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const query = `mutation { login(input: { email: "${owner.email}", password: "${PASSWORD}" }) { accessToken } }`;
  const res = await app.inject({ method: 'GET', url: '/graphql', query: { query } });
  // GraphQL over HTTP: a mutation over GET is 405 Method Not Allowed.
  assert.equal(res.statusCode, 405, res.body);
  assert.equal(res.json().errors[0].extensions.code, 'method_not_allowed');
  assert.match(String(res.headers.allow), /POST/);
  assert.ok(!res.body.includes('accessToken":"'), 'no token issued');
  assertStandardHeaders(res);
  // Nothing happened: no login was recorded.
  const logins = await app.kernel.orm.em.fork().count(AuditEvent, { action: 'auth.login' });
  assert.equal(logins, 0);
  // A query over GET is fine.
  const ok = await app.inject({ method: 'GET', url: '/graphql', query: { query: '{ health { status } }' } });
  assert.equal(ok.statusCode, 200, ok.body);
  assert.equal(ok.json().data.health.status, 'ok');
});

const TIGHT = { rateLimit: { windowSeconds: 60, authenticated: 1000, moduleKey: 10_000, anonymous: 1000, auth: 2, feedback: 1000 } };

test('the auth rate-limit class applies to the login mutation', async (t) => {
  const app = await build(t, TIGHT);
  const owner = await seedOwner(app);
  const variables = { input: { email: owner.email, password: PASSWORD } };
  for (let i = 0; i < 2; i++) assertNoErrors(await gql(app, LOGIN, variables));
  const third = await gql(app, LOGIN, variables);
  assert.equal(third.res.statusCode, 429, third.res.body);
  assertCode(third, 'rate_limited', 429);
  assert.equal(third.data, null);
  assertStandardHeaders(third.res);
  assert.equal(third.res.headers['x-ratelimit-remaining'], '0');
  assert.equal(third.res.headers['x-ratelimit-limit'], '2');
  // The refused login did not run.
  const logins = await app.kernel.orm.em.fork().count(AuditEvent, { action: 'auth.login' });
  assert.equal(logins, 2);
  // Other operations are not in the auth class.
  assertNoErrors(await gql(app, '{ health { status } }'));
});

test('the auth budget cannot be dodged by moving login into a fragment', async (t) => {
  const app = await build(t, TIGHT);
  const owner = await seedOwner(app);
  const variables = { input: { email: owner.email, password: PASSWORD } };
  const inFragment = `mutation Login($input: LoginInput!) { ...SignIn }
    fragment SignIn on Mutation { login(input: $input) { accessToken } }`;
  assertNoErrors(await gql(app, inFragment, variables));
  assertNoErrors(await gql(app, inFragment, variables));
  const third = await gql(app, inFragment, variables);
  assert.equal(third.res.statusCode, 429, third.res.body);
  assertCode(third, 'rate_limited', 429);
  // The refused login did not run.
  const logins = await app.kernel.orm.em.fork().count(AuditEvent, { action: 'auth.login' });
  assert.equal(logins, 2);
});

test('the auth budget is shared between POST /v1/auth/login and the login mutation', async (t) => {
  const app = await build(t, TIGHT);
  const owner = await seedOwner(app);
  await login(app, owner.email);
  await login(app, owner.email);
  const third = await gql(app, LOGIN, { input: { email: owner.email, password: PASSWORD } });
  assert.equal(third.res.statusCode, 429, third.res.body);
  assertCode(third, 'rate_limited', 429);
  assertStandardHeaders(third.res);
});

test('the auth budget covers refreshToken and logout mutations as well', async (t) => {
  const app = await build(t, TIGHT);
  const owner = await seedOwner(app);
  const tokens = await inContext(app.kernel.orm, () =>
    app.domains.identity.auth.login({ email: owner.email, password: PASSWORD }, { ip: '127.0.0.1', requestId: 't', userAgent: null }),
  );
  const REFRESH = 'mutation R($input: RefreshTokenInput!) { refreshToken(input: $input) { refreshToken } }';
  const r1 = await gql(app, REFRESH, { input: { refreshToken: tokens.refreshToken } });
  assertNoErrors(r1);
  assertNoErrors(await gql(app, 'mutation { logout }', undefined, bearer(tokens.accessToken)));
  const third = await gql(app, REFRESH, { input: { refreshToken: r1.data.refreshToken.refreshToken } });
  assertCode(third, 'rate_limited', 429);
  assert.equal(third.res.statusCode, 429);
});

test('the standard introspection query GraphiQL sends passes every operation cap', async (t) => {
  const { getIntrospectionQuery } = await import('graphql');
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  const res = await app.inject({ method: 'POST', url: '/graphql', headers: bearer(token), payload: { query: getIntrospectionQuery() } });
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json() as { data: { __schema: { queryType: { name: string } } }; errors?: unknown };
  assert.equal(body.errors, undefined);
  assert.equal(body.data.__schema.queryType.name, 'Query');
});
