import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { bearer, build, login, PASSWORD, seedOwner } from './helper';
import { totp } from './totp';
import { routeTable } from '../rest-compat/routes';
import type { RateLimitConfig } from '../src/kernel/config';

const VERSION = '2026.05.04';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const HIGH: RateLimitConfig = { windowSeconds: 60, authenticated: 10_000, moduleKey: 10_000, anonymous: 10_000, auth: 10_000, feedback: 10_000 };

/** Limits with only the given budgets lowered. */
const limits = (low: Partial<RateLimitConfig>) => ({ rateLimit: { ...HIGH, ...low } });

function assertProblem(res: LightMyRequestResponse, status: number, code: string) {
  assert.equal(res.statusCode, status, res.body);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  const body = res.json();
  assert.equal(body.status, status);
  assert.ok(String(body.type).endsWith(`/errors/${code}`), `type ${body.type} should end with /errors/${code}`);
  for (const member of ['type', 'title', 'status', 'detail', 'instance', 'request_id']) {
    assert.ok(member in body, `problem lacks ${member}`);
  }
  return body;
}

const graphql = (app: FastifyInstance, query: string, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url: '/graphql', headers, payload: { query } });

/** A representative set of responses: success, 404, 422, REST and GraphQL. */
async function sampleResponses(app: FastifyInstance) {
  return {
    'REST 200': await app.inject({ url: '/v1/health' }),
    'REST 404': await app.inject({ url: '/v1/nope' }),
    'REST 422': await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: 'a@example.com' } }),
    'REST 401': await app.inject({ url: '/v1/me/profile' }),
    'GraphQL 200': await graphql(app, '{ health { status } }'),
    'GraphQL 400': await graphql(app, '{ nope }'),
  };
}

test('every response, REST and GraphQL, success or error, carries X-Service-Version 2026.05.04', async (t) => {
  const app = await build(t);
  const responses = await sampleResponses(app);
  assert.equal(responses['REST 200'].statusCode, 200);
  assert.equal(responses['REST 404'].statusCode, 404);
  assert.equal(responses['REST 422'].statusCode, 422);
  assert.equal(responses['GraphQL 200'].statusCode, 200);
  for (const [name, res] of Object.entries(responses)) {
    assert.equal(res.headers['x-service-version'], VERSION, name);
  }
  // Even the refusal of an unknown pinned version says which version is served.
  const refused = await app.inject({ url: '/v1/health', headers: { 'x-service-api-version': '1999.01.01' } });
  assert.equal(refused.headers['x-service-version'], VERSION);
});

test('a valid X-Request-Id is echoed in the header and as request_id of a problem', async (t) => {
  const app = await build(t);
  const id = 'client-req_42.a:b';
  const ok = await app.inject({ url: '/v1/health', headers: { 'x-request-id': id } });
  assert.equal(ok.headers['x-request-id'], id);
  const missing = await app.inject({ url: '/v1/missing', headers: { 'x-request-id': id } });
  assert.equal(missing.headers['x-request-id'], id);
  assert.equal(assertProblem(missing, 404, 'not_found').request_id, id);
  const gql = await graphql(app, '{ health { status } }', { 'x-request-id': id });
  assert.equal(gql.headers['x-request-id'], id);
});

test('an invalid X-Request-Id (spaces, 200 chars) is replaced by a generated one', async (t) => {
  const app = await build(t);
  for (const bad of ['has spaces in it', 'x'.repeat(200), 'semi;colon', '<script>']) {
    const res = await app.inject({ url: '/v1/missing', headers: { 'x-request-id': bad } });
    const echoed = String(res.headers['x-request-id']);
    assert.notEqual(echoed, bad);
    assert.match(echoed, UUID);
    assert.equal(res.json().request_id, echoed);
  }
  // Without one, every response still gets a fresh id.
  const a = await app.inject({ url: '/v1/health' });
  const b = await app.inject({ url: '/v1/health' });
  assert.match(String(a.headers['x-request-id']), UUID);
  assert.notEqual(a.headers['x-request-id'], b.headers['x-request-id']);
});

test('X-Service-API-Version accepts 2026.05.04, 2026.04.21 and 2026.03.30', async (t) => {
  const app = await build(t);
  for (const version of ['2026.05.04', '2026.04.21', '2026.03.30']) {
    const res = await app.inject({ url: '/v1/health', headers: { 'x-service-api-version': version } });
    assert.equal(res.statusCode, 200, version);
    const gql = await graphql(app, '{ health { status } }', { 'x-service-api-version': version });
    assert.equal(gql.statusCode, 200, version);
  }
});

test('a pinned older version is named in X-Service-Version, since it is the version served (success and error alike)', async (t) => {
  const app = await build(t);
  for (const version of ['2026.04.21', '2026.03.30', VERSION]) {
    const headers = { 'x-service-api-version': version };
    for (const res of [
      await app.inject({ url: '/v1/health', headers }),
      await app.inject({ url: '/v1/me/profile', headers }),
      await app.inject({ url: '/v1/nope', headers }),
      await graphql(app, '{ health { status } }', headers),
    ]) {
      assert.equal(res.headers['x-service-version'], version, `${version}: ${res.statusCode} ${res.body.slice(0, 100)}`);
    }
  }
  // The legacy body and the header agree: what 2026.04.21 answered, with the code added.
  const legacy = await app.inject({ url: '/v1/nope', headers: { 'x-service-api-version': '2026.04.21' } });
  assert.deepEqual(Object.keys(legacy.json()), ['detail', 'code']);
  assert.equal(legacy.headers['x-service-version'], '2026.04.21');
});

test('any other X-Service-API-Version is a 400 unsupported_api_version problem', async (t) => {
  const app = await build(t);
  for (const version of ['2026.05.05', '2025.01.01', 'latest', '', '2026-05-04']) {
    const res = await app.inject({ url: '/v1/health', headers: { 'x-service-api-version': version } });
    assertProblem(res, 400, 'unsupported_api_version');
  }
  // GraphQL answers in its own error shape, with the same code and HTTP status.
  const gql = await graphql(app, '{ health { status } }', { 'x-service-api-version': 'v2' });
  assert.equal(gql.statusCode, 400);
  assert.equal(gql.json().errors[0].extensions.code, 'unsupported_api_version');
  assert.equal(gql.json().data, null);
});

test('a client pinned to 2026.04.21 gets legacy {"detail": ..., "code": ...} JSON errors (404 string, 422 list)', async (t) => {
  const app = await build(t);
  const headers = { 'x-service-api-version': '2026.04.21' };
  const notFound = await app.inject({ url: '/v1/nope', headers });
  assert.equal(notFound.statusCode, 404);
  assert.match(String(notFound.headers['content-type']), /^application\/json/);
  assert.deepEqual(Object.keys(notFound.json()), ['detail', 'code']);
  assert.equal(typeof notFound.json().detail, 'string');
  assert.equal(notFound.json().code, 'not_found');

  const invalid = await app.inject({ method: 'POST', url: '/v1/auth/login', headers, payload: { email: 'a@example.com' } });
  assert.equal(invalid.statusCode, 422);
  assert.match(String(invalid.headers['content-type']), /^application\/json/);
  const body = invalid.json();
  assert.deepEqual(Object.keys(body), ['detail', 'code']);
  assert.equal(body.code, 'validation_error');
  assert.ok(Array.isArray(body.detail) && body.detail.length > 0);
  for (const item of body.detail) assert.deepEqual(Object.keys(item).sort(), ['loc', 'msg', 'type']);
  assert.ok(body.detail.some((i: { loc: string[] }) => i.loc.join('.') === 'body.password'));

  // 2026.03.30 is older still: legacy too.
  const older = await app.inject({ url: '/v1/me/profile', headers: { 'x-service-api-version': '2026.03.30' } });
  assert.equal(older.statusCode, 401);
  assert.deepEqual(older.json(), { detail: 'A Bearer credential is required', code: 'unauthenticated' });
});

test('a client pinned before 2026.05.04 tells mfa_required from invalid_credentials at login by the legacy body\'s code', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  const setup = await app.inject({ method: 'POST', url: '/v1/me/mfa/setup', headers: bearer(token) });
  const { secret } = setup.json() as { secret: string };
  const verified = await app.inject({ method: 'POST', url: '/v1/me/mfa/verify', headers: bearer(token), payload: { totp_code: totp(secret) } });
  assert.equal(verified.statusCode, 200, verified.body);
  const headers = { 'x-service-api-version': '2026.04.21' };
  const owed = await app.inject({ method: 'POST', url: '/v1/auth/login', headers, payload: { email: owner.email, password: PASSWORD } });
  assert.equal(owed.statusCode, 401);
  assert.equal(owed.json().code, 'mfa_required');
  const wrong = await app.inject({ method: 'POST', url: '/v1/auth/login', headers, payload: { email: owner.email, password: 'not-the-password' } });
  assert.equal(wrong.statusCode, 401);
  assert.equal(wrong.json().code, 'invalid_credentials');
});

test('/openapi.json declares the legacy body beside the problem on every error answer, and says who gets which', async (t) => {
  const app = await build(t);
  const doc = (await app.inject({ url: '/openapi.json' })).json();
  let errors = 0;
  for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: { $ref: string } }> }> }>>)) {
    for (const [method, op] of Object.entries(methods)) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (Number(status) < 400) continue;
        errors++;
        assert.deepEqual(Object.keys(response.content ?? {}).sort(), ['application/json', 'application/problem+json'], `${method} ${path} ${status}`);
        assert.equal(response.content!['application/json']!.schema.$ref, '#/components/schemas/LegacyError', `${method} ${path} ${status}`);
      }
    }
  }
  assert.ok(errors > 100, `${errors} error answers`);
  const legacy = doc.components.schemas.LegacyError;
  assert.deepEqual(legacy.required, ['detail', 'code']);
  assert.match(legacy.description, /2026\.04\.21/);
  assert.match(doc.components.schemas.ProblemDetail.description, /2026\.05\.04/);
  assert.match(doc.components.parameters['X-Service-API-Version'].description, /LegacyError/);
});

test('unpinned and 2026.05.04 clients get RFC 9457 application/problem+json', async (t) => {
  const app = await build(t);
  for (const headers of [{}, { 'x-service-api-version': '2026.05.04' }]) {
    const notFound = await app.inject({ url: '/v1/nope', headers });
    const body = assertProblem(notFound, 404, 'not_found');
    assert.equal(body.instance, '/v1/nope');
    assert.equal(body.request_id, notFound.headers['x-request-id']);
    const invalid = await app.inject({ method: 'POST', url: '/v1/auth/login', headers, payload: { email: 'a@example.com' } });
    const problem = assertProblem(invalid, 422, 'validation_error');
    assert.ok(Array.isArray(problem.errors));
  }
});

test('rate-limit headers (X-RateLimit-*, RateLimit-Policy, RateLimit) are on every response', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const tokens = await login(app, owner.email);
  const responses = {
    ...(await sampleResponses(app)),
    'authenticated 200': await app.inject({ url: '/v1/me/profile', headers: bearer(tokens.access_token) }),
    'auth class': await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: 'x@example.com', password: 'nope' } }),
    'feedback class': await app.inject({ url: '/v1/docs-feedback?page=/docs&helpful=true' }),
    'unsupported version 400': await app.inject({ url: '/v1/health', headers: { 'x-service-api-version': 'nope' } }),
    'malformed JSON 400': await app.inject({
      method: 'POST',
      url: '/v1/auth/login',
      headers: { 'content-type': 'application/json' },
      payload: '{bad',
    }),
    // The CSRF check runs while the caller is resolved, before the budget is spent: its refusal waits for the headers.
    'CSRF refusal 403': await app.inject({ method: 'PATCH', url: '/v1/me/profile', headers: { cookie: 'service_token=abc' }, payload: { name: 'x' } }),
  };
  assert.equal(responses['CSRF refusal 403'].json().code, 'csrf_rejected');
  const now = Math.floor(Date.now() / 1000);
  for (const [name, res] of Object.entries(responses)) {
    const limit = Number(res.headers['x-ratelimit-limit']);
    const remaining = Number(res.headers['x-ratelimit-remaining']);
    const reset = Number(res.headers['x-ratelimit-reset']);
    assert.ok(Number.isInteger(limit) && limit > 0, `${name}: X-RateLimit-Limit ${res.headers['x-ratelimit-limit']}`);
    assert.ok(Number.isInteger(remaining) && remaining >= 0 && remaining < limit, `${name}: X-RateLimit-Remaining`);
    // Epoch seconds in the future, not a seconds-from-now delta.
    assert.ok(Number.isInteger(reset) && reset > now && reset <= now + 61, `${name}: X-RateLimit-Reset ${reset}`);
    assert.ok(res.headers['ratelimit-policy'], `${name}: RateLimit-Policy`);
    assert.ok(res.headers['ratelimit'], `${name}: RateLimit`);
  }
});

test('a CSRF refusal counts against the anonymous budget of its address like any other request', async (t) => {
  const app = await build(t, limits({ anonymous: 2 }));
  const refuse = () => app.inject({ method: 'PATCH', url: '/v1/me/profile', headers: { cookie: 'service_token=abc' }, payload: { name: 'x' } });
  const first = await refuse();
  assertProblem(first, 403, 'csrf_rejected');
  assert.equal(first.headers['x-ratelimit-remaining'], '1');
  assertProblem(await refuse(), 403, 'csrf_rejected');
  const spent = await refuse();
  assertProblem(spent, 429, 'rate_limited');
  assert.ok(spent.headers['retry-after']);
});

test('X-RateLimit-Remaining counts down within a window', async (t) => {
  const app = await build(t, limits({ anonymous: 5 }));
  const first = await app.inject({ url: '/v1/health' });
  const second = await app.inject({ url: '/v1/health' });
  assert.equal(first.headers['x-ratelimit-limit'], '5');
  assert.equal(first.headers['x-ratelimit-remaining'], '4');
  assert.equal(second.headers['x-ratelimit-remaining'], '3');
  assert.equal(first.headers['x-ratelimit-reset'], second.headers['x-ratelimit-reset']);
});

test('anonymous callers are limited per IP: the 4th request is 429 rate_limited with Retry-After, a signed-in user still passes', async (t) => {
  const app = await build(t, limits({ anonymous: 3 }));
  const owner = await seedOwner(app);
  const tokens = await login(app, owner.email); // auth class: does not spend the anonymous budget
  for (let i = 0; i < 3; i++) assert.equal((await app.inject({ url: '/v1/health' })).statusCode, 200);
  const limited = await app.inject({ url: '/v1/health' });
  assertProblem(limited, 429, 'rate_limited');
  const retryAfter = Number(limited.headers['retry-after']);
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${limited.headers['retry-after']}`);
  assert.equal(limited.headers['x-ratelimit-remaining'], '0');
  // GraphQL shares the anonymous budget of the IP.
  const gql = await graphql(app, '{ health { status } }');
  assert.equal(gql.statusCode, 429);

  const asUser = await app.inject({ url: '/v1/health', headers: bearer(tokens.access_token) });
  assert.equal(asUser.statusCode, 200);
  assert.equal((await app.inject({ url: '/v1/me/profile', headers: bearer(tokens.access_token) })).statusCode, 200);
});

test('authenticated callers are limited per credential: a user\'s 3rd request is 429, another user is unaffected', async (t) => {
  const app = await build(t, limits({ authenticated: 2 }));
  const a = await seedOwner(app);
  const b = await seedOwner(app, undefined, 'Other');
  const ta = await login(app, a.email);
  const tb = await login(app, b.email);
  assert.equal((await app.inject({ url: '/v1/me/profile', headers: bearer(ta.access_token) })).statusCode, 200);
  assert.equal((await app.inject({ url: '/v1/models', headers: bearer(ta.access_token) })).statusCode, 200);
  const third = await app.inject({ url: '/v1/me/profile', headers: bearer(ta.access_token) });
  assertProblem(third, 429, 'rate_limited');
  assert.ok(third.headers['retry-after']);
  // Same IP, different credential: its own budget.
  const other = await app.inject({ url: '/v1/me/profile', headers: bearer(tb.access_token) });
  assert.equal(other.statusCode, 200);
  assert.equal(other.headers['x-ratelimit-limit'], '2');
  // Anonymous callers from the same IP are not charged for the user's requests.
  assert.equal((await app.inject({ url: '/v1/health' })).statusCode, 200);
});

test('/auth/* has a stricter per-IP budget: the 3rd login attempt is 429 even with different emails', async (t) => {
  const app = await build(t, limits({ auth: 2 }));
  const owner = await seedOwner(app);
  const first = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: 'one@example.com', password: 'x' } });
  assert.equal(first.statusCode, 401);
  assert.equal(first.headers['x-ratelimit-limit'], '2');
  const second = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: 'two@example.com', password: 'x' } });
  assert.equal(second.statusCode, 401);
  const third = await app.inject({
    method: 'POST',
    url: '/v1/auth/login',
    payload: { email: owner.email, password: 'correct-horse-battery-staple' },
  });
  assertProblem(third, 429, 'rate_limited');
  assert.ok(third.headers['retry-after']);
  // The same budget covers the GraphQL login mutation.
  const gql = await graphql(app, `mutation { login(input: { email: "${owner.email}", password: "x" }) { accessToken } }`);
  assert.equal(gql.statusCode, 429);
  assert.equal(gql.json().errors[0].extensions.code, 'rate_limited');
  // Other routes keep their own budget.
  assert.equal((await app.inject({ url: '/v1/health' })).statusCode, 200);
});

test('/v1/docs-feedback has its own per-IP budget', async (t) => {
  const app = await build(t, limits({ feedback: 2 }));
  for (let i = 0; i < 2; i++) {
    assert.equal((await app.inject({ url: `/v1/docs-feedback?page=/docs/${i}&helpful=true` })).statusCode, 200);
  }
  const third = await app.inject({ url: '/api/v1/docs-feedback?page=/docs/3&helpful=false' });
  assertProblem(third, 429, 'rate_limited');
  assert.equal(third.headers['x-ratelimit-limit'], '2');
  assert.equal((await app.inject({ url: '/v1/health' })).statusCode, 200);
});

test('security headers from helmet are on API responses and errors', async (t) => {
  const app = await build(t);
  for (const res of [await app.inject({ url: '/v1/health' }), await app.inject({ url: '/v1/nope' })]) {
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    assert.ok(res.headers['content-security-policy'], 'content-security-policy');
    assert.ok(res.headers['x-frame-options'] || /frame-ancestors/.test(String(res.headers['content-security-policy'])));
  }
});

test('CORS is closed by default: a cross-origin request gets no Access-Control-Allow-Origin', async (t) => {
  const app = await build(t);
  const res = await app.inject({ url: '/v1/health', headers: { origin: 'https://evil.example.com' } });
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers['access-control-allow-origin'], undefined);
  const preflight = await app.inject({
    method: 'OPTIONS',
    url: '/v1/me/profile',
    headers: { origin: 'https://evil.example.com', 'access-control-request-method': 'GET' },
  });
  assert.equal(preflight.headers['access-control-allow-origin'], undefined);
});

test('CORS is open for a configured origin, including preflight, and only for it', async (t) => {
  const origin = 'https://app.example.com';
  const app = await build(t, { corsOrigins: [origin] });
  const res = await app.inject({ url: '/v1/health', headers: { origin } });
  assert.equal(res.headers['access-control-allow-origin'], origin);
  assert.equal(res.headers['access-control-allow-credentials'], 'true');
  assert.match(String(res.headers['access-control-expose-headers']), /X-RateLimit-Remaining/i);

  const preflight = await app.inject({
    method: 'OPTIONS',
    url: '/v1/auth/login',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,authorization' },
  });
  assert.ok(preflight.statusCode >= 200 && preflight.statusCode < 300, `preflight ${preflight.statusCode}`);
  assert.equal(preflight.headers['access-control-allow-origin'], origin);
  assert.match(String(preflight.headers['access-control-allow-methods']), /POST/);
  // The preflight is answered before the routes' hooks, yet it is a response like any other.
  assert.equal(preflight.headers['x-service-version'], VERSION);
  assert.match(String(preflight.headers['x-request-id']), UUID);

  const gqlPreflight = await app.inject({
    method: 'OPTIONS',
    url: '/graphql',
    headers: { origin, 'access-control-request-method': 'POST' },
  });
  assert.equal(gqlPreflight.headers['access-control-allow-origin'], origin);

  const other = await app.inject({ url: '/v1/health', headers: { origin: 'https://evil.example.com' } });
  assert.equal(other.headers['access-control-allow-origin'], undefined);
});

test('with CORS on, an OPTIONS request that is not a preflight answers as without CORS: a 405 or 404 problem with the rate-limit headers', async (t) => {
  const origin = 'https://app.example.com';
  const closed = await build(t);
  const open = await build(t, { corsOrigins: [origin] });
  const calls: [string, InjectOptions][] = [
    ['no preflight headers', { method: 'OPTIONS', url: '/v1/health' }],
    ['an Origin alone', { method: 'OPTIONS', url: '/v1/health', headers: { origin } }],
    ['an unknown path', { method: 'OPTIONS', url: '/v1/no-such-path' }],
    ['GraphQL', { method: 'OPTIONS', url: '/graphql' }],
  ];
  for (const [how, options] of calls) {
    const expected = await closed.inject(options);
    const res = await open.inject(options);
    assert.equal(res.statusCode, expected.statusCode, `${how}: ${res.statusCode} ${res.body}`);
    assert.ok([404, 405].includes(res.statusCode), `${how}: ${res.statusCode}`);
    assertProblem(res, res.statusCode, res.statusCode === 405 ? 'method_not_allowed' : 'not_found');
    assert.equal(res.headers.allow, expected.headers.allow, how);
    for (const header of ['x-ratelimit-limit', 'ratelimit', 'x-request-id']) assert.ok(res.headers[header] !== undefined, `${how}: ${header}`);
  }
  // An Origin alone is a cross-origin request like any other: the answer is readable by that origin.
  const withOrigin = await open.inject({ method: 'OPTIONS', url: '/v1/health', headers: { origin } });
  assert.equal(withOrigin.headers['access-control-allow-origin'], origin);
  // A real preflight is still answered by CORS, on a known path or not.
  for (const url of ['/v1/health', '/v1/no-such-path']) {
    const preflight = await open.inject({ method: 'OPTIONS', url, headers: { origin, 'access-control-request-method': 'GET' } });
    assert.equal(preflight.statusCode, 204, url);
    assert.equal(preflight.headers['access-control-allow-origin'], origin, url);
  }
});

test('a CORS preflight carries the rate-limit headers every answer does and spends its address\'s budget: a flood of them is 429', async (t) => {
  const origin = 'https://app.example.com';
  const app = await build(t, { corsOrigins: [origin], ...limits({ anonymous: 2 }) });
  const preflight = () => app.inject({ method: 'OPTIONS', url: '/v1/admin/users', headers: { origin, 'access-control-request-method': 'GET' } });
  const first = await preflight();
  assert.equal(first.statusCode, 204);
  assert.equal(first.headers['access-control-allow-origin'], origin);
  assert.equal(first.headers['x-ratelimit-limit'], '2');
  assert.equal(first.headers['x-ratelimit-remaining'], '1');
  for (const header of ['x-ratelimit-reset', 'ratelimit', 'ratelimit-policy']) assert.ok(first.headers[header] !== undefined, header);
  assert.equal((await preflight()).statusCode, 204);
  assertProblem(await preflight(), 429, 'rate_limited');
});

test('every REST route of the route table answers under both /v1 and /api/v1', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  assert.ok(routeTable.length >= 7);
  for (const route of routeTable) {
    for (const prefix of ['/v1', '/api/v1']) {
      assert.ok(app.hasRoute({ method: route.method, url: prefix + route.path }), `${route.method} ${prefix}${route.path} registered`);
      if (route.path.includes(':')) continue;
      // A fresh session each time: logout ends the one it is called with.
      const tokens = await login(app, owner.email);
      const url = prefix + route.path;
      const res = await app.inject({ method: route.method, url, headers: bearer(tokens.access_token) });
      assert.ok(![404, 405].includes(res.statusCode), `${route.method} ${url} answered ${res.statusCode} ${res.body}`);
    }
  }
  // And concretely, the same answer under both prefixes.
  for (const prefix of ['/v1', '/api/v1']) {
    const health = await app.inject({ url: `${prefix}/health` });
    assert.equal(health.statusCode, 200);
    assert.equal(health.json().status, 'ok');
    const tokens = await app.inject({
      method: 'POST',
      url: `${prefix}/auth/login`,
      payload: { email: owner.email, password: 'correct-horse-battery-staple' },
    });
    assert.equal(tokens.statusCode, 200);
    const models = await app.inject({ url: `${prefix}/models`, headers: bearer(tokens.json().access_token) });
    assert.equal(models.statusCode, 200);
    const fb = await app.inject({ url: `${prefix}/docs-feedback?page=/x&helpful=true` });
    assert.equal(fb.statusCode, 200);
  }
});
