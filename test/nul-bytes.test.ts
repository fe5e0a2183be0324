import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import {
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isLeafType,
  isListType,
  isNonNullType,
  isScalarType,
  type GraphQLField,
  type GraphQLInputType,
} from 'graphql';
import { bearer, build, createCompanyKey, login, PASSWORD, seedOwner, seedUser, sql } from './helper';
import { NUL_ISSUE, SURROGATE_ISSUE } from '../src/errors/refused-text';

const NUL = 'x\u0000y';
type Loc = (string | number)[];

/**
 * Every table's rows, but what moves with any request: the job queue (the
 * worker's schedules), sessions and keys' last use.
 */
async function snapshot(app: FastifyInstance): Promise<string> {
  // A full-text index's shadow tables (some WITHOUT ROWID) change with the index itself, which is listed.
  const tables = await sql<{ name: string; sql: string }>(
    app,
    "select name, sql from sqlite_master where type = 'table' and name not like 'sqlite_%' and name not like '%\\_fts\\_%' escape '\\' order by name",
  );
  const rows: Record<string, unknown> = {};
  for (const { name, sql: definition } of tables) {
    if (name === 'jobs' || name === 'sessions') continue;
    // A table stored by its key (the ledger's) has no rowid: its key orders it.
    const order = /without rowid\s*$/i.test(definition)
      ? (await sql<{ name: string }>(app, 'select name from pragma_table_info(?) where pk > 0 order by pk', [name])).map((c) => `"${c.name}"`).join(', ')
      : 'rowid';
    const table = await sql<Record<string, unknown>>(app, `select * from "${name}" order by ${order}`);
    // When a key was last used is written by any request it authenticates.
    rows[name] = table.map(({ last_used_at: _lastUsed, ...row }) => row);
  }
  return JSON.stringify(rows);
}

/** A 422 validation_error naming a NUL at `loc`. */
function assertNulRefused(res: LightMyRequestResponse, loc: Loc, what: string) {
  assert.equal(res.statusCode, 422, `${what}: ${res.body}`);
  const body = res.json() as { code: string; errors: { loc: Loc; type: string }[] };
  assert.equal(body.code, 'validation_error', what);
  assert.ok(
    body.errors.some((e) => e.type === NUL_ISSUE.type && JSON.stringify(e.loc) === JSON.stringify(loc)),
    `${what}: no NUL issue at ${JSON.stringify(loc)} in ${res.body}`,
  );
}

interface GqlAnswer {
  data: unknown;
  errors?: { extensions: { code: string; http: { status: number }; errors?: { loc: Loc; type: string }[] } }[];
}

/** A GraphQL answer refusing the NUL at `loc` with validation_error (HTTP status 422 in extensions). */
function assertGqlNulRefused(res: LightMyRequestResponse, loc: Loc, what: string) {
  // As every error raised while a field resolves: HTTP 200, the status in extensions (see src/host/graphql.ts).
  assert.equal(res.statusCode, 200, `${what}: ${res.body}`);
  const body = res.json() as GqlAnswer;
  const error = body.errors?.[0];
  assert.ok(error, `${what}: no error in ${res.body}`);
  assert.equal(error.extensions.code, 'validation_error', `${what}: ${res.body}`);
  assert.equal(error.extensions.http.status, 422, what);
  assert.ok(
    error.extensions.errors?.some((e) => e.type === NUL_ISSUE.type && JSON.stringify(e.loc) === JSON.stringify(loc)),
    `${what}: no NUL issue at ${JSON.stringify(loc)} in ${res.body}`,
  );
}

/** An owner who is also a platform superadmin, a member of the company and a company API key. */
async function cast(app: FastifyInstance) {
  const owner = await seedOwner(app);
  await sql(app, 'update users set is_superadmin = 1 where id = ?', [owner.userId]);
  const member = await seedUser(app, owner.companyId, 'member');
  const key = await createCompanyKey(app, owner.companyId);
  const token = (await login(app, owner.email)).access_token;
  return { owner, member, key, token };
}

/** The token of a pending invitation to `email`, read from its mail. */
async function invitationToken(app: FastifyInstance, token: string, email: string): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/v1/admin/invitations', headers: bearer(token), payload: { email, role: 'member' } });
  assert.equal(res.statusCode, 201, res.body);
  await app.kernel.worker.drain();
  const [mail] = await sql<{ text: string }>(app, "select text from mail_outbox where to_address = ? and template = 'invitation'", [email]);
  return /accept-invitation\?token=([A-Za-z0-9_-]+)/.exec(mail!.text)![1]!;
}

test('each NUL case found in issue 10 answers 422 validation_error and writes nothing (REST and GraphQL)', async (t) => {
  const app = await build(t);
  const { owner, member, key, token } = await cast(app);
  const invited = await invitationToken(app, token, 'invited@example.com');
  const auth = bearer(token);
  const gql = (query: string, variables: Record<string, unknown>, headers: Record<string, string> = {}) =>
    app.inject({ method: 'POST', url: '/graphql', payload: { query, variables }, headers });
  const q = encodeURIComponent(NUL);
  const rest: [string, () => Promise<LightMyRequestResponse>, Loc][] = [
    ['login email', () => app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: `${owner.email}\u0000`, password: PASSWORD } }), ['body', 'email']],
    ['docs feedback page', () => app.inject({ url: `/v1/docs-feedback?page=${q}&helpful=true` }), ['query', 'page']],
    ['docs feedback comment', () => app.inject({ url: `/v1/docs-feedback?page=%2Fdocs&comment=${q}` }), ['query', 'comment']],
    ['profile name', () => app.inject({ method: 'PATCH', url: '/v1/me/profile', headers: auth, payload: { name: NUL } }), ['body', 'name']],
    ['user name', () => app.inject({ method: 'PATCH', url: `/v1/admin/users/${member.userId}`, headers: auth, payload: { name: NUL } }), ['body', 'name']],
    ['company name', () => app.inject({ method: 'PATCH', url: `/v1/admin/companies/${owner.companyId}`, headers: auth, payload: { name: NUL } }), ['body', 'name']],
    ['API key name', () => app.inject({ method: 'POST', url: '/v1/admin/api-keys', headers: auth, payload: { name: NUL } }), ['body', 'name']],
    ['API key name (by a key)', () => app.inject({ method: 'POST', url: '/v1/admin/api-keys', headers: bearer(key.key), payload: { name: NUL } }), ['body', 'name']],
    [
      'invitation acceptance name',
      () => app.inject({ method: 'POST', url: '/v1/invitations/accept', payload: { token: invited, password: 'a-new-long-password', name: NUL } }),
      ['body', 'name'],
    ],
    [
      'new model name',
      () =>
        app.inject({
          method: 'POST',
          url: '/v1/admin/models',
          headers: auth,
          payload: { id: 'nul-model', display_name: NUL, provider: 'acme', family: 'x', credit_cost: 1, context_length: 1000 },
        }),
      ['body', 'display_name'],
    ],
    ['model name', () => app.inject({ method: 'PATCH', url: '/v1/admin/models/gpt-4o', headers: auth, payload: { display_name: NUL } }), ['body', 'display_name']],
    ['admin users q', () => app.inject({ url: `/v1/admin/users?q=${q}`, headers: auth }), ['query', 'q']],
    ['companies q', () => app.inject({ url: `/v1/admin/companies?q=${q}`, headers: auth }), ['query', 'q']],
    ['audit action', () => app.inject({ url: `/v1/admin/companies/${owner.companyId}/audit?action=${q}`, headers: auth }), ['query', 'action']],
    ['audit actor', () => app.inject({ url: `/v1/admin/companies/${owner.companyId}/audit?actor=${q}`, headers: auth }), ['query', 'actor']],
  ];
  const graphql: [string, () => Promise<LightMyRequestResponse>, Loc][] = [
    [
      'GraphQL login',
      () => gql('mutation($input: LoginInput!) { login(input: $input) { accessToken } }', { input: { email: `${owner.email}\u0000`, password: PASSWORD } }),
      ['input', 'email'],
    ],
    ['GraphQL adminUsers(q:)', () => gql('query($q: String) { adminUsers(q: $q) { total } }', { q: NUL }, auth), ['q']],
    [
      'GraphQL updateMyProfile',
      () => gql('mutation($input: UpdateProfileInput!) { updateMyProfile(input: $input) { id } }', { input: { name: NUL } }, auth),
      ['input', 'name'],
    ],
    [
      'GraphQL updateMyProfile (NUL in the document itself)',
      () => gql('mutation { updateMyProfile(input: { name: "x\\u0000y" }) { id } }', {}, auth),
      ['input', 'name'],
    ],
  ];
  for (const [what, send, loc] of [...rest, ...graphql]) {
    const before = await snapshot(app);
    const res = await send();
    if (what.startsWith('GraphQL')) assertGqlNulRefused(res, loc, what);
    else assertNulRefused(res, loc, what);
    assert.equal(await snapshot(app), before, `${what} wrote something`);
  }
  // The same requests without the NUL go through: the NUL alone was refused.
  const fine = await app.inject({ method: 'PATCH', url: '/v1/me/profile', headers: auth, payload: { name: 'x y' } });
  assert.equal(fine.statusCode, 200, fine.body);
  const accepted = await app.inject({ method: 'POST', url: '/v1/invitations/accept', payload: { token: invited, password: 'a-new-long-password', name: 'New' } });
  assert.equal(accepted.statusCode, 201, accepted.body);
});

test('NUL in a raw route (single sign-on), an object key or a deeply nested value is refused with 422 too', async (t) => {
  const app = await build(t);
  const q = encodeURIComponent(NUL);
  assertNulRefused(await app.inject({ url: `/v1/auth/${q}/start` }), ['path', 'provider'], 'provider');
  assertNulRefused(await app.inject({ url: `/v1/auth/google/start?redirect_uri=${q}` }), ['query', 'redirect_uri'], 'redirect_uri');
  assertNulRefused(await app.inject({ url: `/v1/auth/google/callback?state=${q}&code=c` }), ['query', 'state'], 'state');
  // The callback takes any extra parameter a provider adds: their names and values are checked as well.
  assertNulRefused(await app.inject({ url: `/v1/auth/google/callback?state=s&extra=${q}` }), ['query', 'extra'], 'extra value');
  assertNulRefused(await app.inject({ url: `/v1/auth/google/callback?state=s&${q}=1` }), ['query', NUL], 'extra name');
  assertNulRefused(
    await app.inject({ method: 'POST', url: '/v1/auth/sso/mfa', headers: { origin: app.config.publicUrl }, payload: { challenge: NUL, totp_code: '123456' } }),
    ['body', 'challenge'],
    'challenge',
  );
  // 100 000 levels deep: refused (the schema already says so), without a stack overflow (a 500).
  const deep = `${'['.repeat(100_000)}"x\\u0000y"${']'.repeat(100_000)}`;
  const res = await app.inject({ method: 'POST', url: '/v1/auth/login', headers: { 'content-type': 'application/json' }, payload: `{"email":${deep},"password":"p"}` });
  assert.equal(res.statusCode, 422, res.body.slice(0, 500));
});

test('a request id holding NUL is not echoed: the server makes its own', async (t) => {
  const app = await build(t);
  const res = await app.inject({ url: '/v1/health', headers: { 'x-request-id': 'abc\u0000def' } });
  assert.equal(res.statusCode, 200);
  assert.ok(!String(res.headers['x-request-id']).includes('\u0000'));
  assert.notEqual(res.headers['x-request-id'], 'abc\u0000def');
});

// ---------------------------------------------------------------------------
// Fuzz over the generated OpenAPI document: every operation, every string input.

type Schema = Record<string, unknown> & {
  type?: string | string[];
  format?: string;
  enum?: unknown[];
  minLength?: number;
  minimum?: number;
  minItems?: number;
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  $ref?: string;
};

interface Parameter {
  name: string;
  in: 'path' | 'query';
  schema: Schema;
  required?: boolean;
}

const typesOf = (schema: Schema): string[] => [schema.type ?? []].flat().filter((t) => t !== 'null');

/** A value the schema accepts (enough to let one NUL be the only thing wrong). */
function sample(schema: Schema): unknown {
  if (schema.enum) return schema.enum.find((v) => v !== null);
  const [type] = typesOf(schema);
  switch (type) {
    case 'string':
      if (schema.format === 'uuid') return randomUUID();
      if (schema.format === 'date-time') return new Date().toISOString();
      if (schema.format === 'email') return 'someone@example.com';
      return 'a'.repeat(Math.max(12, schema.minLength ?? 1));
    case 'integer':
    case 'number':
      return Math.max(1, schema.minimum ?? 1);
    case 'boolean':
      return true;
    case 'array':
      return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => sample(schema.items ?? {}));
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const name of schema.required ?? []) out[name] = sample(schema.properties?.[name] ?? {});
      return out;
    }
    default:
      return 'a';
  }
}

/** Every string slot of a body schema, as [path, body with NUL there and samples elsewhere]. */
function bodiesWithNul(schema: Schema): [Loc, unknown][] {
  const out: [Loc, unknown][] = [];
  const visit = (s: Schema, path: Loc, place: (value: unknown) => unknown) => {
    const types = typesOf(s);
    if (types.includes('string')) out.push([path, place(NUL)]);
    if (types.includes('array') && s.items) visit(s.items, [...path, 0], (value) => place([value]));
    if (types.includes('object') && s.properties) {
      for (const [name, prop] of Object.entries(s.properties)) {
        visit(prop, [...path, name], (value) => place({ ...(sample(s) as object), [name]: value }));
      }
    }
  };
  visit(schema, [], (value) => value);
  return out;
}

interface Operation {
  method: string;
  path: string;
  parameters: Parameter[];
  body?: Schema;
  authenticated: boolean;
  /** A path of the AI modules API, which takes only AI-modules keys. */
  moduleKey: boolean;
}

function operationsOf(doc: { paths: Record<string, Record<string, Record<string, unknown>>>; components: { schemas: Record<string, Schema> } }): Operation[] {
  const operations: Operation[] = [];
  // A body the spec names is a reference to components.schemas.
  const resolved = (schema: (Schema & { $ref?: string }) | undefined) =>
    schema?.$ref ? doc.components.schemas[schema.$ref.replace('#/components/schemas/', '')] : schema;
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const content = (op.requestBody as { content?: Record<string, { schema: Schema }> } | undefined)?.content;
      operations.push({
        method: method.toUpperCase(),
        path,
        parameters: ((op.parameters ?? []) as Parameter[]).filter((p) => p.in === 'path' || p.in === 'query'),
        body: resolved(content?.['application/json']?.schema),
        authenticated: (op.security as unknown[]).length > 0,
        moduleKey: (op.security as Record<string, unknown>[]).some((scheme) => 'moduleKey' in scheme),
      });
    }
  }
  return operations;
}

test('fuzz: a NUL in each string path parameter, query parameter and body field of every OpenAPI operation is a 422, never a 5xx, and writes nothing', async (t) => {
  const app = await build(t);
  const { key, token } = await cast(app);
  const doc = (await app.inject({ url: '/openapi.json' })).json();
  const operations = operationsOf(doc);
  assert.ok(operations.length >= 50, `only ${operations.length} operations in the document`);
  const moduleKey = (await app.inject({ method: 'POST', url: '/v1/apikeys', headers: bearer(token), payload: { name: 'fuzz' } })).json().key as string;
  const before = await snapshot(app);
  let sent = 0;
  let operationsWithText = 0;
  for (const op of operations) {
    // Valid values everywhere, then one NUL at a time.
    const pathValues = Object.fromEntries(op.parameters.filter((p) => p.in === 'path').map((p) => [p.name, String(sample(p.schema))]));
    const queryValues = Object.fromEntries(op.parameters.filter((p) => p.in === 'query' && p.required).map((p) => [p.name, String(sample(p.schema))]));
    const validBody = op.body ? sample(op.body) : undefined;
    const attempts: { loc: Loc; path: Record<string, string>; query: Record<string, string>; body: unknown }[] = [];
    for (const p of op.parameters) {
      if (!typesOf(p.schema).includes('string')) continue;
      if (p.in === 'path') attempts.push({ loc: ['path', p.name], path: { ...pathValues, [p.name]: NUL }, query: queryValues, body: validBody });
      else attempts.push({ loc: ['query', p.name], path: pathValues, query: { ...queryValues, [p.name]: NUL }, body: validBody });
    }
    if (op.body) {
      for (const [loc, body] of bodiesWithNul(op.body)) attempts.push({ loc: ['body', ...loc], path: pathValues, query: queryValues, body });
    }
    if (attempts.length) operationsWithText++;
    // A user (superadmin, owner of their company) and, where a credential is needed, the company's API key.
    const credentials = op.moduleKey ? [bearer(moduleKey)] : op.authenticated ? [bearer(token), bearer(key.key)] : [{}];
    for (const attempt of attempts) {
      const url =
        '/v1' +
        op.path.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURIComponent(attempt.path[name]!)) +
        (Object.keys(attempt.query).length ? `?${new URLSearchParams(attempt.query).toString()}` : '');
      for (const headers of credentials) {
        const res = await app.inject({
          method: op.method as 'GET',
          url,
          // The browser-only route checks its origin before it reads the body.
          headers: { ...headers, origin: app.config.publicUrl },
          ...(attempt.body !== undefined ? { payload: attempt.body as object } : {}),
        });
        sent++;
        const what = `${op.method} ${op.path} with NUL at ${attempt.loc.join('.')}`;
        assert.ok(res.statusCode < 500, `${what}: ${res.statusCode} ${res.body}`);
        assertNulRefused(res, attempt.loc, what);
      }
    }
  }
  t.diagnostic(`${sent} requests over ${operationsWithText} of ${operations.length} operations`);
  assert.equal(await snapshot(app), before, 'a refused request wrote something');
});

// ---------------------------------------------------------------------------
// The same over GraphQL: every query and mutation of the served schema with a string argument.

function sampleInput(type: GraphQLInputType): unknown {
  const nullable = getNullableType(type);
  if (isListType(nullable)) return [sampleInput(nullable.ofType)];
  // A variable names an enum value; its internal value is the resolver's.
  if (isEnumType(nullable)) return nullable.getValues()[0]!.name;
  if (isInputObjectType(nullable)) {
    const out: Record<string, unknown> = {};
    for (const field of Object.values(nullable.getFields())) {
      if (isNonNullType(field.type) && field.defaultValue === undefined) out[field.name] = sampleInput(field.type);
    }
    return out;
  }
  if (isScalarType(nullable)) {
    switch (nullable.name) {
      case 'Int':
      case 'Float':
        return 1;
      case 'Boolean':
        return true;
      case 'ID':
        return randomUUID();
      case 'String':
        return 'a'.repeat(12);
      default:
        return new Date().toISOString();
    }
  }
  return null;
}

/** Every String slot of an argument's type, as [path, value with NUL there]. */
function inputsWithNul(type: GraphQLInputType): [Loc, unknown][] {
  const nullable = getNullableType(type);
  if (isScalarType(nullable) && nullable.name === 'String') return [[[], NUL]];
  if (isListType(nullable)) return inputsWithNul(nullable.ofType).map(([loc, value]) => [[0, ...loc], [value]]);
  if (isInputObjectType(nullable)) {
    const base = sampleInput(nullable) as Record<string, unknown>;
    return Object.values(nullable.getFields()).flatMap((field) =>
      inputsWithNul(field.type).map(([loc, value]): [Loc, unknown] => [[field.name, ...loc], { ...base, [field.name]: value }]),
    );
  }
  return [];
}

test('fuzz: a NUL in each String argument (nested inputs and lists included) of every query and mutation is refused with validation_error before the resolver runs', async (t) => {
  const app = await build(t);
  const { token } = await cast(app);
  const schema = app.graphql.schema;
  const before = await snapshot(app);
  let sent = 0;
  for (const [operation, root] of [
    ['query', schema.getQueryType()],
    ['mutation', schema.getMutationType()],
  ] as const) {
    for (const field of Object.values(root?.getFields() ?? {}) as GraphQLField<unknown, unknown>[]) {
      if (field.name.startsWith('_')) continue; // federation's _service and _entities
      const required = field.args.filter((a) => isNonNullType(a.type) && a.defaultValue === undefined);
      const selection = isLeafType(getNamedType(field.type)) ? '' : '{ __typename }';
      for (const arg of field.args) {
        // The required arguments and the one fuzzed; the others keep their defaults.
        const used = [...new Set([...required, arg])];
        const document = `${operation}(${used.map((a) => `$${a.name}: ${String(a.type)}`).join(', ')}) { ${field.name}(${used
          .map((a) => `${a.name}: $${a.name}`)
          .join(', ')}) ${selection} }`;
        for (const [loc, value] of inputsWithNul(arg.type)) {
          const variables: Record<string, unknown> = Object.fromEntries(required.map((a) => [a.name, sampleInput(a.type)]));
          variables[arg.name] = value;
          const res = await app.inject({ method: 'POST', url: '/graphql', headers: bearer(token), payload: { query: document, variables } });
          sent++;
          assertGqlNulRefused(res, [arg.name, ...loc], `${field.name}(${[arg.name, ...loc].join('.')})`);
        }
      }
    }
  }
  t.diagnostic(`${sent} GraphQL operations`);
  assert.ok(sent > 20, `only ${sent} GraphQL operations carried a String`);
  assert.equal(await snapshot(app), before, 'a refused operation wrote something');
});

test('other control characters are not refused by the text screen: only U+0000 is (a name refuses them by its own rule)', async (t) => {
  const app = await build(t);
  const { token } = await cast(app);
  const res = await app.inject({ url: '/v1/admin/users?q=x%01y', headers: bearer(token) });
  assert.equal(res.statusCode, 200, res.body);
  // Names (users, companies, keys) are shown in lists and mails, where a control character hides what follows: their own issue.
  const profile = await app.inject({ method: 'PATCH', url: '/v1/me/profile', headers: bearer(token), payload: { name: 'x\u0001y' } });
  assert.equal(profile.statusCode, 422, profile.body);
  assert.equal(profile.json().errors[0].type, 'string_hidden_character');
});

test('a lone UTF-16 surrogate (an unpaired \\ud800 escape) is 422 string_unicode on REST and GraphQL and writes nothing; a paired one is kept', async (t) => {
  const app = await build(t);
  const { owner, token } = await cast(app);
  const before = await snapshot(app);
  const json = { ...bearer(token), 'content-type': 'application/json' };
  // Raw bodies: JSON.stringify would keep the escape, but the point is what the client's escape decodes to.
  for (const [method, url, body, loc] of [
    ['PATCH', '/v1/me/profile', '{"name":"x\\ud800y"}', ['body', 'name']],
    ['POST', '/v1/admin/api-keys', '{"name":"\\udc00"}', ['body', 'name']],
    ['PATCH', '/v1/me/profile', '{"name\\ud800":"x"}', ['body', 'name\ud800']],
  ] as const) {
    const res = await app.inject({ method, url, headers: json, payload: body });
    assert.equal(res.statusCode, 422, `${method} ${url}: ${res.body}`);
    const issues = (res.json() as { errors: { loc: Loc; type: string }[] }).errors;
    assert.ok(issues.some((e) => e.type === SURROGATE_ISSUE.type && JSON.stringify(e.loc) === JSON.stringify(loc)), res.body);
  }
  const viaGraphql = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers: json,
    payload: '{"query":"mutation($name: String) { updateMyProfile(input: { name: $name }) { name } }","variables":{"name":"x\\ud800"}}',
  });
  const error = (viaGraphql.json() as GqlAnswer).errors?.[0];
  assert.equal(error?.extensions.code, 'validation_error', viaGraphql.body);
  assert.ok(error?.extensions.errors?.some((e) => e.type === SURROGATE_ISSUE.type), viaGraphql.body);
  assert.equal(await snapshot(app), before, 'nothing written');
  // A surrogate pair is one character (an emoji), stored and answered as sent.
  const kept = await app.inject({ method: 'PATCH', url: '/v1/me/profile', headers: json, payload: '{"name":"x\\ud83d\\ude00"}' });
  assert.equal(kept.statusCode, 200, kept.body);
  assert.equal(kept.json().name, 'x\u{1F600}');
  const [stored] = await sql<{ name: string }>(app, 'select name from users where id = ?', [owner.userId]);
  assert.equal(stored!.name, 'x\u{1F600}');
});
