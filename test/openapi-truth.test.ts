import { test } from 'node:test';
import { randomUUID } from 'node:crypto';
import assert from 'node:assert/strict';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { bearer, build, createCompanyKey, login, seedOwner, seedUser } from './helper';
import { buildWithAi, moduleKey } from './ai-helper';
import { fakeOpenAi } from './fake-ai';
import { multipartBody } from './fixtures/document-files';
import { cast } from './admin-helper';
import { MAX_WAITING } from '../subgraphs/policy/scheduler';
import { bodyChecks, operations, type Doc } from './openapi-helper';

/**
 * The OpenAPI document is what a client generates its code from: a status or
 * media type it does not declare is a client that breaks. Each operation of
 * /openapi.json is called the ways a probe would (no credential, each kind of
 * credential, a bad version pin, a foreign-origin cookie, an over-long path
 * parameter, a malformed body, a caller owing MFA enrolment), and whatever
 * the server answers must be declared for that operation.
 */

const UNSAFE = new Set(['post', 'put', 'patch', 'delete']);
const GENERIC_CODES = new Set(['not_found', 'conflict', 'validation_error']);

const checks = new WeakMap<Doc, ReturnType<typeof bodyChecks>>();

/** The problems with an error answer's body: what the schema its media type declares does not allow. */
function invalidErrorBody(doc: Doc, declared: { content?: Record<string, unknown> }, type: string, res: LightMyRequestResponse): string | undefined {
  const schema = (declared.content?.[type] as { schema?: unknown } | undefined)?.schema;
  if (res.statusCode < 400 || !schema || res.body === '') return undefined;
  if (!checks.has(doc)) checks.set(doc, bodyChecks(doc));
  const check = checks.get(doc)!(schema);
  return check(res.json()) ? undefined : (check.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');
}

/** What the answer shows that the operation does not declare (its status, its media type and the body's schema, a header every response carries). */
function undeclared(doc: Doc, method: string, path: string, res: LightMyRequestResponse, how: string): string[] {
  const at = `${method.toUpperCase()} ${path} (${how}) answered ${res.statusCode}`;
  const declared = doc.paths[path]![method]!.responses[String(res.statusCode)];
  if (!declared) return [`${at}, not declared: ${res.body.slice(0, 200)}`];
  const out: string[] = [];
  // A problem's code is named where the status has others: a 404 is not_found, a 409 a conflict, a 422 a validation_error unless said.
  const code = res.statusCode >= 400 ? (res.json() as { code?: string }).code : undefined;
  if (code && !GENERIC_CODES.has(code) && !new RegExp(`\\b${code}\\b`).test(declared.description)) {
    out.push(`${at} ${code}, which its description does not name: ${declared.description}`);
  }
  const type = String(res.headers['content-type'] ?? '').split(';')[0]!.trim();
  if (res.statusCode !== 204 && !(res.statusCode >= 300 && res.statusCode < 400) && !declared.content?.[type]) {
    out.push(`${at} as ${type}, which it declares only as ${Object.keys(declared.content ?? {}).join(', ')}`);
  }
  const invalid = invalidErrorBody(doc, declared, type, res);
  if (invalid) out.push(`${at} as ${type} with a body its schema does not allow (${invalid}): ${res.body.slice(0, 200)}`);
  for (const header of ['x-service-version', 'x-request-id', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit-policy', 'ratelimit']) {
    if (res.headers[header] === undefined) out.push(`${at} without ${header}`);
  }
  return out;
}

/** A fresh company whose owner is signed in, with a company key and an AI-modules key: nothing one call does spoils the next. */
async function callers(app: FastifyInstance) {
  const owner = await seedOwner(app);
  const token = (await login(app, owner.email)).access_token;
  const member = (await login(app, (await seedUser(app, owner.companyId, 'member')).email)).access_token;
  return { owner, token, member, companyKey: (await createCompanyKey(app, owner.companyId)).key, moduleKey: (await moduleKey(app, token)).key };
}

test('every status and success media type an operation answers is declared for it in /openapi.json', async (t) => {
  const app = await build(t);
  const doc = (await app.inject({ url: '/openapi.json' })).json() as Doc;
  // A company whose policy requires MFA, and its owner, who has not enrolled.
  const enrolling = await callers(app);
  const policy = await app.inject({ method: 'PUT', url: '/v1/admin/security/policy', headers: bearer(enrolling.token), payload: { mfa_required: true } });
  assert.equal(policy.statusCode, 200, policy.body);
  const owing = (await login(app, enrolling.owner.email)).access_token;

  const found: string[] = [];
  for (const { method, path, url, operation } of operations(doc)) {
    const c = await callers(app);
    const json = operation.requestBody?.content['application/json'] !== undefined;
    const multipart = operation.requestBody?.content['multipart/form-data'] !== undefined;
    const modulesApi = operation.security?.some((s) => 'moduleKey' in s) ?? false;
    const credential = bearer(modulesApi ? c.moduleKey : c.token);
    const body: Partial<InjectOptions> = json ? { payload: {} } : {};
    const calls: [string, InjectOptions][] = [
      ['no credential', { headers: {}, ...body }],
      ['an access token', { headers: bearer(c.token), ...body }],
      ['a member', { headers: bearer(c.member), ...body }],
      ['a company key', { headers: bearer(c.companyKey), ...body }],
      ['an AI-modules key', { headers: bearer(c.moduleKey), ...body }],
      ['a caller owing MFA enrolment', { headers: bearer(owing), ...body }],
      ['an unsupported version pin', { headers: { ...credential, 'x-service-api-version': '1999.01.01' }, ...body }],
      // A client pinned before 2026.05.04 gets the legacy error body, which the document declares too.
      ['no credential, pinned to 2026.04.21', { headers: { 'x-service-api-version': '2026.04.21' }, ...body }],
      ['a member pinned to 2026.03.30', { headers: { ...bearer(c.member), 'x-service-api-version': '2026.03.30' }, ...body }],
      ['the right credential, pinned to 2026.04.21', { headers: { ...credential, 'x-service-api-version': '2026.04.21' }, ...body }],
    ];
    if (UNSAFE.has(method)) calls.push(['the session cookie from no origin', { headers: { cookie: 'service_token=whatever' }, ...body }]);
    if (path.includes('{')) calls.push(['an over-long path parameter', { headers: credential, ...body, url: url(true) }]);
    if (UNSAFE.has(method)) {
      calls.push(['malformed JSON', { headers: { ...credential, 'content-type': 'application/json' }, payload: '{"a":' }]);
      calls.push(['malformed JSON, pinned to 2026.04.21', { headers: { ...credential, 'content-type': 'application/json', 'x-service-api-version': '2026.04.21' }, payload: '{"a":' }]);
      calls.push(['a text/plain body', { headers: { ...credential, 'content-type': 'text/plain' }, payload: 'hello' }]);
    }
    if (multipart) {
      calls.push(['a truncated multipart body', { headers: { ...credential, 'content-type': 'multipart/form-data; boundary=x' }, payload: '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\nb' }]);
      calls.push(['a JSON body', { headers: credential, payload: {} }]);
    }
    for (const [how, options] of calls) {
      const res = await app.inject({ method: method.toUpperCase() as InjectOptions['method'], url: url(), ...options });
      found.push(...undeclared(doc, method, path, res, how));
    }
  }
  assert.deepEqual(found, []);
});

/** The members a schema declares: its properties, through references and allOf, oneOf and anyOf. */
function declaredMembers(doc: Doc, schema: unknown, into = new Set<string>()): Set<string> {
  if (!schema || typeof schema !== 'object') return into;
  const s = schema as { $ref?: string; properties?: object; allOf?: unknown[]; oneOf?: unknown[]; anyOf?: unknown[] };
  if (s.$ref) declaredMembers(doc, (doc.components.schemas as Record<string, unknown>)[s.$ref.replace('#/components/schemas/', '')], into);
  for (const name of Object.keys(s.properties ?? {})) into.add(name);
  for (const part of [...(s.allOf ?? []), ...(s.oneOf ?? []), ...(s.anyOf ?? [])]) declaredMembers(doc, part, into);
  return into;
}

test('the members a problem carries beyond RFC 9457 are declared for the operations that answer it: required_scope on insufficient_scope, provider_status on ai_provider_error', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ status: 500 }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url, AI_MAX_RETRIES: '0' });
  const doc = (await app.inject({ url: '/openapi.json' })).json() as Doc;
  const owner = await seedOwner(app);
  const token = (await login(app, owner.email)).access_token;
  const full = (await moduleKey(app, token)).key;
  const bulkOnly = (await moduleKey(app, token, ['bulk'], 'bulk only')).key;
  const upload = multipartBody(Buffer.from('Invoices are paid within thirty days.'), 'terms.txt');
  const calls: [string, string, string, Partial<InjectOptions>][] = [
    ['post', '/chat', '/v1/chat', { payload: { message: 'hi', agent: 'general', session_id: 's' } }],
    ['post', '/studio/process', '/v1/studio/process', { payload: { text: 'hola amigos', target_lang: 'en' } }],
    ['post', '/studio/detect', '/v1/studio/detect', { payload: { text: 'hello there' } }],
    ['post', '/agent/run', '/v1/agent/run', { payload: { task: 'add two and two' } }],
    ['post', '/rag/upload', '/v1/rag/upload', { payload: upload.payload, headers: upload.headers }],
    ['post', '/rag/query', '/v1/rag/query', { payload: { query: 'when are invoices paid' } }],
    ['get', '/rag/docs', '/v1/rag/docs', {}],
    ['post', '/research/start', '/v1/research/start', { payload: { query: 'tides' } }],
    ['delete', '/rag/docs/{doc_id}', `/v1/rag/docs/${randomUUID()}`, {}],
    ['get', '/research/status/{job_id}', `/v1/research/status/${randomUUID()}`, {}],
    ['get', '/research/list', '/v1/research/list', {}],
    ['post', '/research/cancel/{job_id}', `/v1/research/cancel/${randomUUID()}`, {}],
  ];
  // The bulk paths, with a key of every other scope.
  const bulkCalls: [string, string, string, Partial<InjectOptions>][] = [
    ['get', '/bulk/download/{job_id}', `/v1/bulk/download/${randomUUID()}`, {}],
    ['get', '/bulk/status/{job_id}', `/v1/bulk/status/${randomUUID()}`, {}],
    ['get', '/bulk/list', '/v1/bulk/list', {}],
    ['post', '/bulk/cancel/{job_id}', `/v1/bulk/cancel/${randomUUID()}`, {}],
  ];
  const noBulk = (await moduleKey(app, token, ['chat', 'rag', 'translate', 'research', 'agent'], 'no bulk')).key;
  const found: string[] = [];
  const seen = new Map<string, number>();
  const hold = (method: string, path: string, res: LightMyRequestResponse) => {
    const body = res.json() as Record<string, unknown>;
    seen.set(String(body.code), (seen.get(String(body.code)) ?? 0) + 1);
    const type = String(res.headers['content-type']).split(';')[0]!.trim();
    const schema = (doc.paths[path]![method]!.responses[String(res.statusCode)]?.content?.[type] as { schema?: unknown } | undefined)?.schema;
    const members = declaredMembers(doc, schema);
    const extra = Object.keys(body).filter((k) => !members.has(k));
    if (extra.length) found.push(`${method.toUpperCase()} ${path} ${res.statusCode} ${body.code}: ${extra.join(', ')} not declared`);
  };
  for (const [method, path, url, options, key] of [...calls.map((c) => [...c, bulkOnly] as const), ...bulkCalls.map((c) => [...c, noBulk] as const)]) {
    const res = await app.inject({ method: method.toUpperCase() as InjectOptions['method'], url, ...options, headers: { ...bearer(key), ...options.headers } });
    assert.equal(res.json().code, 'insufficient_scope', `${path}: ${res.body}`);
    assert.ok(res.json().required_scope, path);
    hold(method, path, res);
  }
  // With every scope: the upload reads, and each call of a model fails at the provider.
  for (const [method, path, url, options] of calls.filter(([, p]) => ['/rag/upload', '/chat', '/studio/process', '/agent/run', '/rag/query'].includes(p))) {
    const res = await app.inject({ method: method.toUpperCase() as InjectOptions['method'], url, ...options, headers: { ...bearer(full), ...options.headers } });
    if (path === '/rag/upload') {
      assert.equal(res.statusCode, 201, res.body);
      continue;
    }
    assert.equal(res.json().code, 'ai_provider_error', `${path}: ${res.body}`);
    assert.equal(res.json().provider_status, 500, path);
    hold(method, path, res);
  }
  assert.deepEqual(found, []);
  assert.deepEqual(Object.fromEntries(seen), { insufficient_scope: 16, ai_provider_error: 4 });
});

test('503 server_busy is declared, with Retry-After, on exactly the operations that take a turn with heavier ones', async (t) => {
  const app = await build(t);
  const doc = (await app.inject({ url: '/openapi.json' })).json() as Doc;
  const c = await callers(app);
  // The scheduler full: one run holding all of its capacity, MAX_WAITING more in line.
  const { scheduler } = app.gate;
  scheduler.schedule(scheduler.capacity);
  for (let i = 0; i < MAX_WAITING; i++) scheduler.schedule(scheduler.capacity);
  const found: string[] = [];
  let busy = 0;
  for (const { method, path, url, operation } of operations(doc)) {
    if (method !== 'get') continue;
    const modulesApi = operation.security?.some((s) => 'moduleKey' in s) ?? false;
    // The largest page the operation allows: what its declaration is about.
    const perPage = operation.parameters?.find((p): p is { in: string; name: string; schema?: { maximum?: number } } => 'in' in p && p.in === 'query' && p.name === 'per_page');
    const query = perPage?.schema?.maximum ? `?per_page=${perPage.schema.maximum}` : '';
    const res = await app.inject({ method: 'GET', url: url() + query, headers: bearer(modulesApi ? c.moduleKey : c.token) });
    found.push(...undeclared(doc, method, path, res, 'a busy server'));
    const declared = /\bserver_busy\b/.test(operation.responses['503']?.description ?? '');
    if (res.statusCode === 503 && res.json().code === 'server_busy') {
      busy++;
      if (!operation.responses['503']?.headers?.['Retry-After']) found.push(`GET ${path}: 503 server_busy declared without Retry-After`);
    } else if (declared) found.push(`GET ${path} declares server_busy but answered ${res.statusCode} when the server was busy`);
  }
  assert.deepEqual(found, []);
  assert.ok(busy >= 5, `list reads were refused while busy (${busy})`);
});

test('downloads and streams declare their media types, uploads their form fields', async (t) => {
  const app = await build(t);
  const { paths } = (await app.inject({ url: '/openapi.json' })).json();
  const types = (op: { responses: Record<string, { content?: object }> }, status: string) => Object.keys(op.responses[status]!.content ?? {}).sort();
  assert.deepEqual(types(paths['/admin/usage/export'].get, '200'), ['text/csv']);
  const table = ['application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', 'text/csv'];
  assert.deepEqual(types(paths['/bulk/download/{job_id}'].get, '200'), table);
  assert.deepEqual(types(paths['/bulk/jobs/{id}/download'].get, '200'), table);
  assert.deepEqual(types(paths['/bulk/jobs/{id}/rows'].get, '200'), ['application/x-ndjson']);
  assert.deepEqual(types(paths['/chat'].post, '200'), ['application/json', 'text/event-stream']);

  for (const path of ['/bulk/submit', '/bulk/jobs']) {
    const form = paths[path].post.requestBody.content['multipart/form-data'].schema;
    assert.deepEqual(form.required, ['file', 'input_column', 'prompt_template'], path);
    assert.deepEqual(Object.keys(form.properties).sort(), ['file', 'input_column', 'model', 'output_column', 'prompt_template'], path);
    assert.equal(form.properties.output_column.default, 'AI_Result');
    assert.match(form.properties.prompt_template.description, /\{text\}/);
  }
  assert.deepEqual(Object.keys(paths['/rag/upload'].post.requestBody.content['multipart/form-data'].schema.properties), ['file']);
});

test('sign-in, refresh and the deprecated invite declare what they answer; every answer declares the rate-limit headers', async (t) => {
  const app = await build(t);
  const doc = (await app.inject({ url: '/openapi.json' })).json();
  const login = doc.paths['/auth/login'].post.responses['401'].description;
  for (const code of ['invalid_credentials', 'mfa_required', 'mfa_invalid']) assert.match(login, new RegExp(code));
  assert.match(doc.paths['/auth/refresh'].post.responses['401'].description, /token_invalid/);

  const invite = doc.paths['/admin/users/invite'].post;
  for (const status of ['201', '400', '422']) {
    assert.deepEqual(invite.responses[status].headers.Deprecation, { $ref: '#/components/headers/Deprecation' }, status);
    assert.deepEqual(invite.responses[status].headers.Sunset, { $ref: '#/components/headers/Sunset' }, status);
    assert.deepEqual(invite.responses[status].headers.Link, { $ref: '#/components/headers/Successor-Link' }, status);
  }
  for (const name of ['Deprecation', 'Sunset', 'Successor-Link', 'RateLimit-Policy', 'RateLimit']) assert.ok(doc.components.headers[name], name);
  for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, { responses: Record<string, { headers: object }> }>>)) {
    for (const [method, op] of Object.entries(methods)) {
      for (const [status, response] of Object.entries(op.responses)) {
        for (const header of ['RateLimit-Policy', 'RateLimit', 'X-RateLimit-Limit', 'X-Service-Version']) {
          assert.ok(header in response.headers, `${method} ${path} ${status} lacks ${header}`);
        }
      }
    }
  }
});

test('request and response schemas the spec names are components, referenced by their operations', async (t) => {
  const app = await build(t);
  const doc = (await app.inject({ url: '/openapi.json' })).json();
  const body = (path: string, method: string) => doc.paths[path][method].requestBody.content['application/json'].schema.$ref;
  const named: [string, string, string][] = [
    ['UserPatchRequest', '/admin/users/{user_id}', 'patch'],
    ['SuspendRequest', '/admin/users/{user_id}/suspend', 'post'],
    ['InviteRequest', '/admin/users/invite', 'post'],
    ['InvitationRequest', '/admin/invitations', 'post'],
    ['BulkInvitationRequest', '/admin/invitations/bulk', 'post'],
    ['CompanyPatchRequest', '/admin/companies/{company_id}', 'patch'],
    ['CreditGrantRequest', '/admin/companies/{company_id}/credits/grant', 'post'],
    ['CreditGrantRequest', '/admin/companies/{company_id}/credits/revoke', 'post'],
    ['PlanChangeRequest', '/admin/billing/plan/change', 'post'],
    ['TopupRequest', '/admin/billing/topup/checkout', 'post'],
    ['ModelCreateRequest', '/admin/models', 'post'],
    ['ModelPatchRequest', '/admin/models/{model_id}', 'patch'],
    ['ApiKeyCreateRequest', '/admin/api-keys', 'post'],
    ['PolicyPatchRequest', '/admin/security/policy', 'put'],
    ['PolicyPatchRequest', '/admin/security/policy', 'patch'],
  ];
  for (const [name, path, method] of named) {
    assert.equal(body(path, method), `#/components/schemas/${name}`, `${method} ${path}`);
    assert.equal(doc.components.schemas[name].type, 'object', name);
  }
  assert.equal(doc.paths['/health'].get.responses['200'].content['application/json'].schema.$ref, '#/components/schemas/HealthResponse');
  assert.equal(doc.paths['/models'].get.responses['200'].content['application/json'].schema.items.$ref, '#/components/schemas/ModelItem');
  assert.ok(doc.components.schemas.ModelItem.properties.display_name);
});

test('a text as long as its published maxLength passes the service too, in emoji: lengths count characters (code points), as JSON Schema does', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const token = c.tokens.ownerA;
  const key = (await moduleKey(app, token)).key;
  // U+1F600: one character, two UTF-16 units.
  const text = (n: number) => '\u{1F600}'.repeat(n);
  const cases: [string, InjectOptions['method'], string, string, Record<string, unknown> | undefined, string[]][] = [
    ['an AI-modules key', 'POST', '/v1/chat', key, { message: text(32_000), agent: 'general', session_id: text(128) }, ['body.message', 'body.session_id']],
    ['an AI-modules key', 'POST', '/v1/agent/run', key, { task: text(8000) }, ['body.task']],
    ['an AI-modules key', 'POST', '/v1/studio/process', key, { text: text(20_000) }, ['body.text']],
    ['an AI-modules key', 'POST', '/v1/studio/detect', key, { text: text(20_000) }, ['body.text']],
    ['an AI-modules key', 'POST', '/v1/rag/query', key, { query: text(2000) }, ['body.query']],
    ['an AI-modules key', 'POST', '/v1/research/start', key, { query: text(2000) }, ['body.query']],
    ['an access token', 'POST', '/v1/apikeys', token, { name: text(200) }, ['body.name']],
    ['an access token', 'POST', '/v1/admin/api-keys', token, { name: text(200) }, ['body.name']],
    ['an access token', 'PATCH', `/v1/admin/companies/${c.a.companyId}`, token, { name: text(200) }, ['body.name']],
    ['an access token', 'PATCH', `/v1/admin/users/${c.memberA.userId}`, token, { name: text(200) }, ['body.name']],
    ['an access token', 'POST', `/v1/admin/users/${c.memberA.userId}/suspend`, token, { reason: text(500) }, ['body.reason']],
    ['an access token', 'PATCH', '/v1/admin/connectors/google_drive', token, { client_id: text(256), client_secret: text(1024) }, ['body.client_id', 'body.client_secret']],
    ['a superadmin', 'POST', `/v1/admin/companies/${c.b.companyId}/credits/grant`, c.tokens.superadmin, { credits: 1, reason: text(500) }, ['body.reason']],
    ['a superadmin', 'PATCH', '/v1/admin/models/gpt-4o-mini', c.tokens.superadmin, { display_name: text(200), family: text(64), provider: text(64) }, ['body.display_name', 'body.family', 'body.provider']],
    ['no credential', 'POST', '/v1/invitations/accept', '', { token: 'x', password: text(1024), name: text(200) }, ['body.password', 'body.name']],
    ['no credential', 'POST', '/v1/auth/password-reset/confirm', '', { token: 'x', new_password: text(1024) }, ['body.new_password']],
    ['no credential', 'GET', `/v1/docs-feedback?page=${encodeURIComponent(text(500))}&comment=${encodeURIComponent(text(2000))}`, '', undefined, ['query.page', 'query.comment']],
  ];
  const refused: string[] = [];
  for (const [who, method, url, credential, payload, members] of cases) {
    const res = await app.inject({ method, url, headers: credential ? bearer(credential) : {}, ...(payload ? { payload } : {}) });
    const issues = res.statusCode === 422 ? ((res.json() as { errors?: { loc: (string | number)[]; msg: string }[] }).errors ?? []) : [];
    for (const issue of issues) {
      if (members.includes(issue.loc.join('.'))) refused.push(`${method} ${url.split('?')[0]} (${who}): ${issue.loc.join('.')} ${issue.msg}`);
    }
  }
  assert.deepEqual(refused, []);
});
