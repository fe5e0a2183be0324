import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { bearer, build, login, seedOwner } from './helper';
import { call, cast, gql } from './admin-helper';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PROBLEM_MEMBERS = ['type', 'title', 'status', 'detail', 'instance', 'request_id', 'code'];

/** An RFC 9457 problem of this status and code, stamped like every response; returns the body. */
function assertProblem(res: LightMyRequestResponse, status: number, code: string) {
  assert.equal(res.statusCode, status, res.body);
  assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
  const body = res.json();
  for (const member of PROBLEM_MEMBERS) assert.ok(member in body, `problem lacks ${member}: ${res.body}`);
  assert.equal(body.status, status);
  assert.equal(body.code, code);
  assert.ok(String(body.type).endsWith(`/errors/${code}`), body.type);
  assert.equal(body.request_id, res.headers['x-request-id']);
  assert.equal(res.headers['x-service-version'], '2026.05.04');
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
  return body;
}

const loginWith = (payload: string | Buffer, contentType: string) => ({
  method: 'POST' as const,
  url: '/v1/auth/login',
  headers: { 'content-type': contentType },
  payload,
});

const LOGIN = JSON.stringify({ email: 'nobody@example.com', password: 'not-the-password' });

// --- Errors raised before routing: fastify's frameworkErrors ---

test('a path that does not decode (%ff, a lone %) is a 400 bad_request problem with the request id, not fastify JSON', async (t) => {
  const app = await build(t);
  for (const url of ['/v1/admin/users/%ff', '/v1/admin/users/%', '/api/v1/admin/users/%E0%A4%A']) {
    const res = await app.inject({ url, headers: { 'x-request-id': 'bad-url-1' } });
    const body = assertProblem(res, 400, 'bad_request');
    assert.equal(body.request_id, 'bad-url-1');
    assert.equal(body.instance, url);
    assert.ok(!res.body.includes('FST_ERR'), res.body);
    // Counted like any request: the rate-limit headers are there.
    assert.ok(Number(res.headers['x-ratelimit-limit']) > 0, 'x-ratelimit-limit');
  }
  // Without a client id, one is generated, as for any request.
  assert.match(String((await app.inject({ url: '/v1/admin/users/%ff' })).headers['x-request-id']), UUID);
});

test('a 10 KB path parameter is a 414 uri_too_long problem that echoes at most 256 characters of the path', async (t) => {
  const app = await build(t);
  const id = 'a'.repeat(10_000);
  const res = await app.inject({ url: `/v1/admin/users/${id}?q=${'b'.repeat(1000)}` });
  const body = assertProblem(res, 414, 'uri_too_long');
  assert.ok(res.body.length < 1200, `answer is ${res.body.length} bytes`);
  assert.ok(body.instance.length <= 257, body.instance);
  assert.ok(body.instance.startsWith('/v1/admin/users/aaa'));
  assert.ok(!body.detail.includes('aaaa'), body.detail);
  // A parameter of the router's limit is routed as usual (and is then an unknown user or a bad uuid).
  const atLimit = await app.inject({ url: `/v1/admin/users/${'a'.repeat(100)}` });
  assert.notEqual(atLimit.statusCode, 414);
});

test('a long unknown path is a 404 whose instance and detail are cut, not the whole path', async (t) => {
  const app = await build(t);
  const res = await app.inject({ url: `/v1/nope/${'x'.repeat(12_000)}` });
  const body = assertProblem(res, 404, 'not_found');
  assert.ok(res.body.length < 1200, `answer is ${res.body.length} bytes`);
  assert.equal(body.instance, `/v1/nope/${'x'.repeat(256 - '/v1/nope/'.length)}…`);
  assert.ok(body.detail.length < 300, body.detail);
});

test('a client pinned before 2026.05.04 gets its legacy {"detail", "code"} body for a path that does not decode', async (t) => {
  const app = await build(t);
  const res = await app.inject({ url: '/v1/admin/users/%ff', headers: { 'x-service-api-version': '2026.04.21' } });
  assert.equal(res.statusCode, 400);
  assert.deepEqual(Object.keys(res.json()), ['detail', 'code']);
});

test('HEAD of a path that does not decode is a 400 problem head without a body', async (t) => {
  const app = await build(t);
  const res = await app.inject({ method: 'HEAD', url: '/v1/admin/users/%ff' });
  assert.equal(res.statusCode, 400);
  assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
  assert.match(String(res.headers['x-request-id']), UUID);
  assert.equal(res.body, '');
  const missing = await app.inject({ method: 'HEAD', url: '/v1/nope' });
  assert.equal(missing.statusCode, 404);
  assert.equal(missing.headers['content-type'], 'application/problem+json; charset=utf-8');
});

test('a failing async route constraint is a masked 500 internal_error problem, not fastify JSON', async (t) => {
  const app = await build(t);
  app.addConstraintStrategy({
    name: 'tenant',
    storage() {
      const stores = new Map<string, unknown>();
      return { get: (value: string) => (stores.get(value) ?? null) as never, set: (value: string, store: unknown) => void stores.set(value, store) };
    },
    deriveConstraint(_request: unknown, _context: unknown, done?: (error: Error | null, value?: string) => void) {
      setImmediate(() => done!(new Error('secret constraint internals')));
    },
    mustMatchWhenDerived: false,
  });
  app.get('/constrained', { constraints: { tenant: 'a' }, config: { auth: 'public' } }, async () => 'ok');
  const res = await app.inject({ url: '/constrained' });
  assertProblem(res, 500, 'internal_error');
  assert.ok(!res.body.includes('secret'), res.body);
});

// --- fastify's body errors ---

test('body errors are problems: 413 too large, 415 media type, empty JSON, invalid JSON, Content-Length mismatch', async (t) => {
  const app = await build(t, { bodyLimitBytes: 2048 });
  const cases: [string, InjectOptions, number, string][] = [
    ['too large', loginWith(JSON.stringify({ email: 'a@example.com', password: 'x'.repeat(4096) }), 'application/json'), 413, 'payload_too_large'],
    ['media type', loginWith('<login/>', 'application/xml'), 415, 'unsupported_media_type'],
    ['text', loginWith(LOGIN, 'text/plain'), 415, 'unsupported_media_type'],
    ['empty', loginWith('', 'application/json'), 400, 'malformed_json'],
    ['syntax', loginWith('{"email": "a@example.com",', 'application/json'), 400, 'malformed_json'],
    ['length', { ...loginWith(LOGIN, 'application/json'), headers: { 'content-type': 'application/json', 'content-length': '5' } }, 400, 'bad_request'],
  ];
  for (const [name, request, status, code] of cases) {
    const res = await app.inject(request);
    assert.equal(res.statusCode, status, `${name}: ${res.body}`);
    assertProblem(res, status, code);
  }
});

// --- JSON bodies are UTF-8 ---

test('a JSON body with a UTF-8 byte order mark is a 400 malformed_json problem', async (t) => {
  const app = await build(t);
  const res = await app.inject(loginWith(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(LOGIN)]), 'application/json'));
  const body = assertProblem(res, 400, 'malformed_json');
  assert.match(body.detail, /byte order mark/);
});

test('a JSON body that is not valid UTF-8 is a 400 malformed_json problem, never replaced by U+FFFD', async (t) => {
  const app = await build(t);
  for (const bytes of [[0xff], [0xc3], [0xed, 0xa0, 0x80], [0xc0, 0xaf]]) {
    const payload = Buffer.concat([Buffer.from('{"email":"a'), Buffer.from(bytes), Buffer.from('@example.com","password":"not-the-password"}')]);
    const res = await app.inject(loginWith(payload, 'application/json'));
    const body = assertProblem(res, 400, 'malformed_json');
    assert.match(body.detail, /UTF-8/);
  }
});

test('a JSON body declared in a charset other than UTF-8 is a 415 unsupported_media_type problem', async (t) => {
  const app = await build(t);
  for (const contentType of ['application/json; charset=utf-16', 'application/json;charset=UTF-16LE', 'application/json; charset=iso-8859-1', 'application/json; charset="utf-32"', 'application/json; charset=utf-8; charset=latin1']) {
    const res = await app.inject(loginWith(LOGIN, contentType));
    assertProblem(res, 415, 'unsupported_media_type');
  }
});

test('UTF-8 JSON is parsed whatever the spelling of its charset, multi-byte characters intact', async (t) => {
  const app = await build(t);
  for (const contentType of ['application/json', 'application/json; charset=utf-8', 'Application/JSON;Charset="UTF-8"', 'application/json; charset=utf8']) {
    // Reaching the service: a wrong password, not a parse error.
    const res = await app.inject(loginWith(LOGIN, contentType));
    assertProblem(res, 401, 'invalid_credentials');
  }
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  const name = 'Zoë 日本 🚀';
  const res = await app.inject({ method: 'PATCH', url: '/v1/me/profile', headers: { ...bearer(access_token), 'content-type': 'application/json' }, payload: Buffer.from(JSON.stringify({ name })) });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().name, name);
});

test('prototype poisoning in a JSON body is still refused: __proto__ and constructor.prototype are 400 malformed_json', async (t) => {
  const app = await build(t);
  for (const payload of ['{"email":"a@example.com","password":"x","__proto__":{"admin":true}}', '{"email":"a@example.com","password":"x","constructor":{"prototype":{"admin":true}}}']) {
    assertProblem(await app.inject(loginWith(payload, 'application/json')), 400, 'malformed_json');
  }
});

test('POST /graphql goes through the same JSON parser: UTF-8 works; a BOM, bad UTF-8, UTF-16, a bare document or text is refused with its code', async (t) => {
  const app = await build(t);
  const query = JSON.stringify({ query: '{ health { status } }' });
  for (const contentType of ['application/json', 'application/json; charset=utf-8']) {
    const ok = await app.inject({ method: 'POST', url: '/graphql', headers: { 'content-type': contentType }, payload: query });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal(ok.json().data.health.status, 'ok');
  }
  const refusals: [Buffer | string, string, number, string][] = [
    // JSON only, as REST: a bare document (application/graphql) or text is 415 as REST answers it, not a 400 or a run.
    ['{ health { status } }', 'application/graphql', 415, 'unsupported_media_type'],
    [query, 'text/plain', 415, 'unsupported_media_type'],
    [query, 'text/plain; charset=utf-8', 415, 'unsupported_media_type'],
    [Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(query)]), 'application/json', 400, 'malformed_json'],
    [Buffer.from('{"query":"{ health { status } }\xff"}', 'latin1'), 'application/json', 400, 'malformed_json'],
    [query, 'application/json; charset=utf-16', 415, 'unsupported_media_type'],
  ];
  for (const [payload, contentType, status, code] of refusals) {
    const res = await app.inject({ method: 'POST', url: '/graphql', headers: { 'content-type': contentType }, payload });
    assert.equal(res.statusCode, status, res.body);
    assert.equal(res.json().errors[0].extensions.code, code);
    assert.equal(res.json().data, null);
  }
  // No Content-Type, or a multipart body: the same 415, saying what /graphql takes (not the REST uploads' wording).
  for (const headers of [{}, { 'content-type': 'multipart/form-data; boundary=x' }]) {
    const res = await app.inject({ method: 'POST', url: '/graphql', headers, payload: query });
    assert.equal(res.statusCode, 415, res.body);
    assert.equal(res.json().errors[0].extensions.code, 'unsupported_media_type');
    assert.equal(res.json().errors[0].message, 'POST /graphql takes a JSON body (application/json)');
  }
});

// --- Integers are written as integers ---

test('an integer query value must be decimal digits: 1e3, 1.0, 0x10, " 5", "5 ", +5 are 422 at [query, page]', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  for (const page of ['1e3', '1.0', '0x10', '%205', '5%20', '%2B5', '1_000', 'Infinity', '']) {
    const res = await app.inject({ url: `/v1/admin/users?page=${page}`, headers: bearer(access_token) });
    const body = assertProblem(res, 422, 'validation_error');
    assert.deepEqual(body.errors.map((e: { loc: unknown[]; type: string }) => [e.loc, e.type]), [[['query', 'page'], 'integer_type']], `page=${page}: ${res.body}`);
  }
  // Every failed check is still listed.
  const both = await app.inject({ url: '/v1/admin/users?page=1e3&per_page=1000', headers: bearer(access_token) });
  const locs = assertProblem(both, 422, 'validation_error').errors.map((e: { loc: string[] }) => e.loc.join('.')).sort();
  assert.deepEqual(locs, ['query.page', 'query.per_page']);
  // Digits pass, and a negative is refused by the bound, not the form.
  const fine = await app.inject({ url: '/v1/admin/users?page=1&per_page=010', headers: bearer(access_token) });
  assert.equal(fine.statusCode, 200, fine.body);
  assert.equal(fine.json().per_page, 10);
  const negative = assertProblem(await app.inject({ url: '/v1/admin/users?page=-1', headers: bearer(access_token) }), 422, 'validation_error');
  assert.deepEqual(negative.errors.map((e: { loc: string[]; type: string }) => [e.loc.join('.'), e.type]), [['query.page', 'greater_than_equal']]);
  // Another route, another integer: the rule is the validator's, not the route's.
  const usage = await app.inject({ url: `/v1/admin/users/${owner.userId}/usage?days=3e1`, headers: bearer(access_token) });
  assert.equal(assertProblem(usage, 422, 'validation_error').errors[0].loc.join('.'), 'query.days');
  assert.equal((await app.inject({ url: `/v1/admin/users/${owner.userId}/usage?days=30`, headers: bearer(access_token) })).statusCode, 200);
});

test('an integer beyond 32 bits in the query is a client error, never a 500', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  const res = await app.inject({ url: '/v1/admin/users?page=99999999999999999999', headers: bearer(access_token) });
  assert.ok(res.statusCode >= 400 && res.statusCode < 500, res.body);
  assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
});

test('integer path and query members of any route take digits only; a negative one is refused by its bound, not its form', async (t) => {
  const app = await build(t);
  app.get(
    '/numbers/:n',
    {
      config: { auth: 'public' },
      schema: {
        params: { type: 'object', properties: { n: { type: 'integer' } } },
        querystring: { type: 'object', properties: { m: { type: 'integer', minimum: 0 }, list: { type: 'array', items: { type: 'integer' } } } },
      },
    },
    async (request) => ({ params: request.params, query: request.query }),
  );
  const ok = await app.inject({ url: '/numbers/-12?m=7&list=1&list=-2' });
  assert.equal(ok.statusCode, 200, ok.body);
  assert.deepEqual(ok.json(), { params: { n: -12 }, query: { m: 7, list: [1, -2] } });
  const badPath = await app.inject({ url: '/numbers/1e3' });
  assert.deepEqual(assertProblem(badPath, 422, 'validation_error').errors[0].loc, ['path', 'n']);
  const minusZero = await app.inject({ url: '/numbers/1?m=-0' });
  assert.deepEqual(assertProblem(minusZero, 422, 'validation_error').errors[0].loc, ['query', 'm']);
  const negative = assertProblem(await app.inject({ url: '/numbers/1?m=-1' }), 422, 'validation_error').errors[0];
  assert.deepEqual([negative.loc, negative.type], [['query', 'm'], 'greater_than_equal']);
  const inList = await app.inject({ url: '/numbers/1?list=1&list=0x2' });
  assert.deepEqual(assertProblem(inList, 422, 'validation_error').errors[0].loc, ['query', 'list']);
});

// --- One rule for a superadmin's unknown company_id ---

test('a superadmin company_id naming no company is 404 not_found on /admin/overview, REST and GraphQL', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const unknown = randomUUID();
  assertProblem(await call(app, c.tokens.superadmin, 'GET', `/v1/admin/overview?company_id=${unknown}`), 404, 'not_found');
  const viaGraphql = await gql(app, c.tokens.superadmin, 'query ($id: ID) { adminOverview(companyId: $id) { companyId } }', { id: unknown });
  assert.equal(viaGraphql.errors?.[0]?.extensions.code, 'not_found');
  // An existing company is what the superadmin sees; without company_id, their own.
  const other = await call(app, c.tokens.superadmin, 'GET', `/api/v1/admin/overview?company_id=${c.b.companyId}`);
  assert.equal(other.statusCode, 200, other.body);
  assert.equal(other.json().company_id, c.b.companyId);
  assert.equal(other.json().users.total, 1);
  const own = await gql(app, c.tokens.superadmin, '{ adminOverview { companyId } }');
  assert.deepEqual(own.data?.adminOverview, { companyId: c.platformCompanyId });
  // Anyone else naming another company is refused as on the other settings routes; their own id is fine.
  assertProblem(await call(app, c.tokens.ownerA, 'GET', `/v1/admin/overview?company_id=${c.b.companyId}`), 404, 'not_found');
  assert.equal((await call(app, c.tokens.ownerA, 'GET', `/v1/admin/overview?company_id=${c.a.companyId}`)).json().company_id, c.a.companyId);
  assertProblem(await call(app, c.tokens.ownerA, 'GET', '/v1/admin/overview?company_id=not-a-uuid'), 422, 'validation_error');
});

test('a superadmin company_id naming no company is 404 not_found on /admin/users and the settings routes, REST and GraphQL', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const unknown = randomUUID();
  for (const url of ['/v1/admin/users', '/v1/admin/security/policy', '/v1/admin/security/sessions', '/v1/admin/connectors']) {
    assertProblem(await call(app, c.tokens.superadmin, 'GET', `${url}?company_id=${unknown}`), 404, 'not_found');
  }
  for (const field of ['adminUsers(companyId: $id) { total }', 'securityPolicy(companyId: $id) { companyId }', 'connectors(companyId: $id) { name }']) {
    const res = await gql(app, c.tokens.superadmin, `query ($id: ID) { ${field} }`, { id: unknown });
    assert.equal(res.errors?.[0]?.extensions.code, 'not_found', field);
  }
  // An existing company still narrows the list.
  const onlyB = await call(app, c.tokens.superadmin, 'GET', `/v1/admin/users?company_id=${c.b.companyId}`);
  assert.equal(onlyB.json().total, 1);
});

test('a member is 403 on every administration page, whichever company its company_id names, REST and GraphQL', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const pages = ['/v1/admin/overview', '/v1/admin/users', '/v1/admin/security/policy', '/v1/admin/security/sessions', '/v1/admin/connectors', '/v1/admin/billing/summary'];
  for (const url of pages) {
    for (const company of ['', `?company_id=${c.a.companyId}`, `?company_id=${c.b.companyId}`, `?company_id=${randomUUID()}`]) {
      assertProblem(await call(app, c.tokens.memberA, 'GET', `${url}${company}`), 403, 'forbidden');
    }
  }
  for (const field of ['adminOverview(companyId: $id) { companyId }', 'adminUsers(companyId: $id) { total }', 'securityPolicy(companyId: $id) { companyId }', 'connectors(companyId: $id) { name }']) {
    const res = await gql(app, c.tokens.memberA, `query ($id: ID) { ${field} }`, { id: c.b.companyId });
    assert.equal(res.errors?.[0]?.extensions.code, 'forbidden', field);
  }
});

// --- Refusals of node's HTTP parser, on a real socket ---

interface RawAnswer {
  statusLine: string;
  headers: Record<string, string>;
  body: string;
  closedByServer: boolean;
}

/** Sends raw bytes to the listening app and reads until the server closes the connection. */
function rawRequest(port: number, bytes: string | Buffer): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let closedByServer = false;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('the server did not close the connection'));
    }, 5000);
    socket.on('data', (chunk) => chunks.push(chunk));
    // The server may close while the client is still sending its oversize head.
    socket.on('error', () => undefined);
    socket.on('end', () => (closedByServer = true));
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      if (split === -1) return reject(new Error(`no HTTP answer: ${JSON.stringify(text)}`));
      const [statusLine, ...lines] = text.slice(0, split).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ statusLine: statusLine!, headers, body: text.slice(split + 4), closedByServer: closedByServer || socket.readableEnded });
    });
    socket.write(bytes);
  });
}

async function listening(t: Parameters<typeof build>[0]) {
  const app = await build(t);
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, port: (app.server.address() as net.AddressInfo).port };
}

/** A complete HTTP/1.1 problem answer that closes the connection; returns the problem. */
function assertRawProblem(answer: RawAnswer, status: number, reason: string, code: string) {
  assert.equal(answer.statusLine, `HTTP/1.1 ${status} ${reason}`);
  assert.equal(answer.headers['content-type'], 'application/problem+json; charset=utf-8');
  assert.equal(answer.headers.connection, 'close');
  assert.equal(Number(answer.headers['content-length']), Buffer.byteLength(answer.body));
  assert.equal(answer.headers['x-service-version'], '2026.05.04');
  assert.equal(answer.headers['x-content-type-options'], 'nosniff');
  assert.match(answer.headers['x-request-id']!, UUID);
  assert.ok(answer.closedByServer, 'the server closes the connection');
  const body = JSON.parse(answer.body);
  assert.equal(body.status, status);
  assert.equal(body.code, code);
  assert.ok(String(body.type).endsWith(`/errors/${code}`));
  assert.equal(body.request_id, answer.headers['x-request-id']);
  assert.equal(typeof body.title, 'string');
  assert.equal(typeof body.detail, 'string');
  // The request line could not be read, or was what overflowed: nothing of it is echoed.
  assert.equal(body.instance, undefined);
  assert.ok(answer.body.length < 600, answer.body);
  return body;
}

test('a 100 KB request path is a 431 request_header_fields_too_large problem on the socket, then the connection closes', async (t) => {
  const { port } = await listening(t);
  const answer = await rawRequest(port, `GET /v1/admin/users/${'a'.repeat(100_000)} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
  assertRawProblem(answer, 431, 'Request Header Fields Too Large', 'request_header_fields_too_large');
  assert.ok(!answer.body.includes('aaaa'));
});

test('oversize headers are a 431 request_header_fields_too_large problem on the socket', async (t) => {
  const { port } = await listening(t);
  const answer = await rawRequest(port, `GET /v1/health HTTP/1.1\r\nHost: localhost\r\nX-Filler: ${'b'.repeat(20_000)}\r\n\r\n`);
  assertRawProblem(answer, 431, 'Request Header Fields Too Large', 'request_header_fields_too_large');
});

test('a header value with a DEL byte is a 400 bad_request problem on the socket, not "Client Error" JSON', async (t) => {
  const { port } = await listening(t);
  const answer = await rawRequest(port, `GET /v1/health HTTP/1.1\r\nHost: localhost\r\nX-Note: a\x7fb\r\n\r\n`);
  const body = assertRawProblem(answer, 400, 'Bad Request', 'bad_request');
  assert.match(body.detail, /^The request is not valid HTTP\/1\.1/);
});

test('bytes that are not HTTP get a 400 bad_request problem; a valid request on the same server is unaffected', async (t) => {
  const { app, port } = await listening(t);
  assertRawProblem(await rawRequest(port, 'HELLO THERE\r\n\r\n'), 400, 'Bad Request', 'bad_request');
  const ok = await fetch(`http://127.0.0.1:${port}/v1/health`);
  assert.equal(ok.status, 200);
  assert.equal(((await ok.json()) as { status: string }).status, 'ok');
  assert.ok(app.server.listening);
});

test('every catalog code added for framework errors has its documentation page', async (t) => {
  const app = await build(t);
  for (const code of ['bad_request', 'request_timeout', 'uri_too_long', 'request_header_fields_too_large', 'malformed_json', 'unsupported_media_type']) {
    const res = await app.inject({ url: `/docs/errors/${code}` });
    assert.equal(res.statusCode, 200, code);
    assert.match(res.body, new RegExp(`<code>${code}</code>`));
  }
});
