import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { SignJWT } from 'jose';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { bearer, build, login, PASSWORD, seedOwner } from './helper';
import { User } from '../src/domains/identity/user.entity';

const PROBLEM_MEMBERS = ['type', 'title', 'status', 'detail', 'instance', 'request_id'];

/** Asserts an RFC 9457 problem with the given status and code; returns the body. */
function assertProblem(res: LightMyRequestResponse, status: number, code: string) {
  assert.equal(res.statusCode, status, res.body);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  const body = res.json();
  for (const member of PROBLEM_MEMBERS) assert.ok(member in body, `problem lacks ${member}: ${res.body}`);
  assert.equal(body.status, status);
  assert.ok(String(body.type).endsWith(`/errors/${code}`), `type ${body.type} should end with /errors/${code}`);
  assert.equal(typeof body.title, 'string');
  assert.equal(typeof body.detail, 'string');
  assert.equal(body.request_id, res.headers['x-request-id']);
  return body;
}

const loginRequest = (payload: unknown, headers: Record<string, string> = {}) => ({
  method: 'POST' as const,
  url: '/v1/auth/login',
  headers,
  payload: payload as string,
});

/** Signs an access token with the app's own secret, for claims the server would never issue. */
async function signWithAppSecret(app: FastifyInstance, claims: Record<string, unknown>, exp: number, iat: number) {
  const { jwtSecret } = JSON.parse(fs.readFileSync(path.join(app.config.dataDir, 'secrets.json'), 'utf8'));
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(app.config.publicUrl)
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .sign(new TextEncoder().encode(jwtSecret));
}

test('400 malformed_json: a body that is not JSON', async (t) => {
  const app = await build(t);
  const res = await app.inject(loginRequest('{bad', { 'content-type': 'application/json' }));
  const body = assertProblem(res, 400, 'malformed_json');
  assert.equal(body.instance, '/v1/auth/login');
});

test('400 malformed_json: an empty body declared as JSON', async (t) => {
  const app = await build(t);
  const res = await app.inject(loginRequest('', { 'content-type': 'application/json' }));
  assertProblem(res, 400, 'malformed_json');
});

test('400 on POST /graphql with a malformed body is a GraphQL error with code malformed_json, not a 500', async (t) => {
  const app = await build(t);
  const res = await app.inject({ method: 'POST', url: '/graphql', headers: { 'content-type': 'application/json' }, payload: '{bad' });
  assert.equal(res.statusCode, 400, res.body);
  assert.equal(res.json().errors[0].extensions.code, 'malformed_json');
});

test('415 unsupported_media_type: a body in a content coding (gzip, br, one unknown) is refused before it is read, on REST and POST /graphql, and changes nothing; identity is no coding', async (t) => {
  const app = await build(t);
  const { email } = await seedOwner(app);
  const { access_token: token } = await login(app, email);
  const patch = (coding: string) =>
    app.inject({
      method: 'PATCH',
      url: '/v1/me/profile',
      headers: { ...bearer(token), 'content-type': 'application/json', 'content-encoding': coding },
      payload: JSON.stringify({ name: `Named ${coding}` }),
    });
  // A plain body labelled coded: not taken as if the label were not there.
  for (const coding of ['br', 'x-unknown', 'identity, gzip']) assertProblem(await patch(coding), 415, 'unsupported_media_type');
  const profile = await app.inject({ url: '/v1/me/profile', headers: bearer(token) });
  assert.doesNotMatch(profile.json().name ?? '', /^Named/);
  // A gzip body: neither inflated nor read as broken JSON.
  const coded = gzipSync(JSON.stringify({ email, password: PASSWORD }));
  assertProblem(await app.inject(loginRequest(coded as unknown as string, { 'content-type': 'application/json', 'content-encoding': 'gzip' })), 415, 'unsupported_media_type');
  const graphql = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers: { ...bearer(token), 'content-type': 'application/json', 'content-encoding': 'deflate' },
    payload: JSON.stringify({ query: 'mutation { updateProfile(input: { name: "Named deflate" }) { name } }' }),
  });
  assert.equal(graphql.statusCode, 415, graphql.body);
  assert.equal((await patch('identity')).statusCode, 200);
});

test('401 unauthenticated: no credential on /v1/me/profile', async (t) => {
  const app = await build(t);
  const body = assertProblem(await app.inject({ url: '/v1/me/profile' }), 401, 'unauthenticated');
  assert.equal(body.instance, '/v1/me/profile');
});

test('every 401 carries a WWW-Authenticate challenge (RFC 9110): Bearer, with error="invalid_token" for a token presented and refused', async (t) => {
  const app = await build(t);
  const { email } = await seedOwner(app);
  const none = await app.inject({ url: '/v1/me/profile' });
  assert.equal(none.statusCode, 401);
  assert.equal(none.headers['www-authenticate'], 'Bearer realm="atrium"');
  const garbage = await app.inject({ url: '/v1/me/profile', headers: bearer('not-a-token') });
  assert.equal(garbage.statusCode, 401);
  assert.equal(garbage.headers['www-authenticate'], 'Bearer realm="atrium", error="invalid_token"');
  const wrong = await app.inject(loginRequest(JSON.stringify({ email, password: 'not the password' }), { 'content-type': 'application/json' }));
  assert.equal(wrong.statusCode, 401);
  assert.equal(wrong.headers['www-authenticate'], 'Bearer realm="atrium"');
  // A pinned legacy client gets the header too.
  const legacy = await app.inject({ url: '/v1/me/profile', headers: { 'x-service-api-version': '2026.04.21' } });
  assert.equal(legacy.headers['www-authenticate'], 'Bearer realm="atrium"');
  // No other status carries it.
  assert.equal((await app.inject({ url: '/v1/nowhere' })).headers['www-authenticate'], undefined);
});

test('401 token_invalid: a garbage bearer token', async (t) => {
  const app = await build(t);
  assertProblem(await app.inject({ url: '/v1/me/profile', headers: bearer('not.a.jwt') }), 401, 'token_invalid');
  assertProblem(await app.inject({ url: '/v1/me/profile', headers: bearer('garbage') }), 401, 'token_invalid');
});

test('401 token_invalid: a JWT signed with another secret', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  const [header, payload] = access_token.split('.');
  const forged = `${header}.${payload}.${Buffer.from('x'.repeat(32)).toString('base64url')}`;
  assertProblem(await app.inject({ url: '/v1/me/profile', headers: bearer(forged) }), 401, 'token_invalid');
});

test('401 token_expired: an expired access token signed with the app secret', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  const claims = JSON.parse(Buffer.from(access_token.split('.')[1]!, 'base64url').toString());
  const now = Math.floor(Date.now() / 1000);
  const expired = await signWithAppSecret(app, { cid: claims.cid, role: claims.role, sid: claims.sid, sub: claims.sub }, now - 60, now - 960);
  assertProblem(await app.inject({ url: '/v1/me/profile', headers: bearer(expired) }), 401, 'token_expired');
  // The same claims, still valid, are accepted: the 401 is about expiry alone.
  const fresh = await signWithAppSecret(app, { cid: claims.cid, role: claims.role, sid: claims.sid, sub: claims.sub }, now + 60, now);
  assert.equal((await app.inject({ url: '/v1/me/profile', headers: bearer(fresh) })).statusCode, 200);
});

test('401 token_invalid: an Authorization header that is not a Bearer credential', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  for (const authorization of [`Basic ${Buffer.from('a:b').toString('base64')}`, `Token ${access_token}`, 'Bearer', 'Bearer a b']) {
    assertProblem(await app.inject({ url: '/v1/me/profile', headers: { authorization } }), 401, 'token_invalid');
  }
});

test('403 account_suspended: a suspended user cannot log in', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  await app.kernel.orm.em.fork().nativeUpdate(User, { id: owner.userId }, { status: 'suspended' });
  const res = await app.inject(loginRequest({ email: owner.email, password: PASSWORD }));
  assertProblem(res, 403, 'account_suspended');
  // A wrong password still says invalid_credentials: suspension is not revealed to guessers.
  assertProblem(await app.inject(loginRequest({ email: owner.email, password: 'wrong-password-123' })), 401, 'invalid_credentials');
});

test('404 not_found: an unknown route, with instance = the path', async (t) => {
  const app = await build(t);
  for (const url of ['/v1/nope', '/api/v1/nope/deeper', '/nothing-here']) {
    const body = assertProblem(await app.inject({ url: `${url}?q=1` }), 404, 'not_found');
    assert.equal(body.instance, url);
  }
  assertProblem(await app.inject({ method: 'POST', url: '/v1/nope', payload: {} }), 404, 'not_found');
});

test('405 method_not_allowed with an Allow header listing the methods of the path', async (t) => {
  const app = await build(t);
  const res = await app.inject({ method: 'DELETE', url: '/v1/health' });
  const body = assertProblem(res, 405, 'method_not_allowed');
  assert.equal(body.instance, '/v1/health');
  const allow = String(res.headers.allow).split(/,\s*/);
  assert.ok(allow.includes('GET'), `Allow: ${res.headers.allow}`);
  assert.ok(!allow.includes('DELETE'));
  const login405 = await app.inject({ method: 'GET', url: '/api/v1/auth/login' });
  assertProblem(login405, 405, 'method_not_allowed');
  assert.ok(String(login405.headers.allow).split(/,\s*/).includes('POST'));
});

test('413 payload_too_large: a body over bodyLimitBytes', async (t) => {
  const app = await build(t, { bodyLimitBytes: 2048 });
  const res = await app.inject(loginRequest({ email: 'a@example.com', password: 'x'.repeat(4096) }));
  assertProblem(res, 413, 'payload_too_large');
  // Just under the limit is parsed (and then validated).
  const under = await app.inject(loginRequest({ email: 'a@example.com', password: 'x'.repeat(1000) }));
  assert.equal(under.statusCode, 401);
});

test('415 unsupported_media_type: a text/plain body to POST /v1/auth/login', async (t) => {
  const app = await build(t);
  const res = await app.inject(loginRequest('email=a@example.com', { 'content-type': 'text/plain' }));
  assertProblem(res, 415, 'unsupported_media_type');
  const form = await app.inject(loginRequest('email=a', { 'content-type': 'application/x-www-form-urlencoded' }));
  assertProblem(form, 415, 'unsupported_media_type');
});

test('422 validation_error: a missing field is loc [body, email], type missing', async (t) => {
  const app = await build(t);
  const body = assertProblem(await app.inject(loginRequest({ password: 'x' })), 422, 'validation_error');
  assert.ok(Array.isArray(body.errors));
  for (const item of body.errors) {
    assert.deepEqual(Object.keys(item).sort(), ['loc', 'msg', 'type']);
    assert.ok(Array.isArray(item.loc));
    assert.equal(typeof item.msg, 'string');
  }
  assert.deepEqual(body.errors, [{ loc: ['body', 'email'], msg: body.errors[0].msg, type: 'missing' }]);
});

test('422 validation_error: every failed check is listed, not only the first', async (t) => {
  const app = await build(t);
  const body = assertProblem(await app.inject(loginRequest({})), 422, 'validation_error');
  const locs = body.errors.map((e: { loc: string[] }) => e.loc.join('.')).sort();
  assert.deepEqual(locs, ['body.email', 'body.password']);
});

test('422 validation_error: a wrong type is reported at [body, email] and is not coerced', async (t) => {
  const app = await build(t);
  const body = assertProblem(await app.inject(loginRequest({ email: 123, password: 'x' })), 422, 'validation_error');
  assert.ok(body.errors.some((e: { loc: unknown[] }) => JSON.stringify(e.loc) === '["body","email"]'), JSON.stringify(body.errors));
  assert.ok(body.errors.every((e: { type: string }) => e.type !== 'missing'));
  const bool = await app.inject(loginRequest({ email: 'a@example.com', password: true }));
  assertProblem(bool, 422, 'validation_error');
});

test('422 validation_error: an unknown field is extra_forbidden', async (t) => {
  const app = await build(t);
  const res = await app.inject(loginRequest({ email: 'a@example.com', password: 'x', admin: true }));
  const body = assertProblem(res, 422, 'validation_error');
  assert.deepEqual(
    body.errors.map((e: { loc: unknown[]; type: string }) => ({ loc: e.loc, type: e.type })),
    [{ loc: ['body', 'admin'], type: 'extra_forbidden' }],
  );
});

test('422 validation_error on the query: /v1/docs-feedback without page is loc [query, page]', async (t) => {
  const app = await build(t);
  const body = assertProblem(await app.inject({ url: '/v1/docs-feedback?helpful=true' }), 422, 'validation_error');
  assert.ok(
    body.errors.some((e: { loc: unknown[]; type: string }) => JSON.stringify(e.loc) === '["query","page"]' && e.type === 'missing'),
    JSON.stringify(body.errors),
  );
});

test('422 validation_error from the core service: docs-feedback with page but neither helpful nor comment', async (t) => {
  const app = await build(t);
  const body = assertProblem(await app.inject({ url: '/v1/docs-feedback?page=/docs/x' }), 422, 'validation_error');
  assert.ok(body.errors.length >= 1);
  for (const item of body.errors) {
    assert.deepEqual(Object.keys(item).sort(), ['loc', 'msg', 'type']);
    assert.equal(item.loc[0], 'query');
  }
  // The same rule through GraphQL carries the same code.
  const gql = await app.inject({
    method: 'POST',
    url: '/graphql',
    payload: { query: 'mutation { submitDocsFeedback(input: { page: "/docs/x" }) { id } }' },
  });
  assert.equal(gql.json().errors[0].extensions.code, 'validation_error');
});

test('429 rate_limited is a problem with Retry-After', async (t) => {
  const app = await build(t, {
    rateLimit: { windowSeconds: 60, authenticated: 10_000, moduleKey: 10_000, anonymous: 1, auth: 10_000, feedback: 10_000 },
  });
  assert.equal((await app.inject({ url: '/v1/health' })).statusCode, 200);
  const res = await app.inject({ url: '/v1/health' });
  assertProblem(res, 429, 'rate_limited');
  assert.ok(Number(res.headers['retry-after']) >= 1);
});

test('500 internal_error is masked: no internals in the detail, request_id present', async (t) => {
  const app = await build(t);
  app.get('/boom', { config: { auth: 'public' } }, async () => {
    throw new Error('secret internals');
  });
  const res = await app.inject({ url: '/boom', headers: { 'x-request-id': 'boom-1' } });
  const body = assertProblem(res, 500, 'internal_error');
  assert.ok(!res.body.includes('secret internals'), res.body);
  assert.ok(!res.body.includes('stack'), res.body);
  assert.equal(body.request_id, 'boom-1');
  assert.equal(body.instance, '/boom');
});

test('GraphQL errors carry extensions.code: me without a credential is unauthenticated', async (t) => {
  const app = await build(t);
  const res = await app.inject({ method: 'POST', url: '/graphql', payload: { query: '{ me { role } }' } });
  const body = res.json();
  assert.equal(body.errors[0].extensions.code, 'unauthenticated');
  assert.equal(body.errors[0].extensions.http.status, 401);
  assert.equal(body.data, null);

  const garbage = await app.inject({ method: 'POST', url: '/graphql', headers: bearer('garbage'), payload: { query: '{ me { role } }' } });
  assert.equal(garbage.json().errors[0].extensions.code, 'token_invalid');

  const badDocument = await app.inject({ method: 'POST', url: '/graphql', payload: { query: '{ noSuchField }' } });
  assert.equal(badDocument.statusCode, 400);
  assert.equal(badDocument.json().errors[0].extensions.code, 'bad_request');

  const badLogin = await app.inject({
    method: 'POST',
    url: '/graphql',
    payload: { query: 'mutation { login(input: { email: "nobody@example.com", password: "x" }) { accessToken } }' },
  });
  assert.equal(badLogin.json().errors[0].extensions.code, 'invalid_credentials');
});
