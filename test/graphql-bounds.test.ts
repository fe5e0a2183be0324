import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { GraphQLBoolean, GraphQLID, GraphQLInputObjectType, GraphQLList, GraphQLObjectType, GraphQLSchema, GraphQLString, graphql } from 'graphql';
import type { LightMyRequestResponse } from 'fastify';
import { assertCode, bearer, createCompanyKey, login, seedOwner } from './helper';
import { cast } from './admin-helper';
import { buildWithAi, moduleKey } from './ai-helper';
import { compileRoutes } from '../rest-compat/compile';
import { member, query, type ArgSource, type RestRoute } from '../rest-compat/route';
import { enforceFieldPolicies } from '../subgraphs/policy/enforce';

type Loc = (string | number)[];

interface GqlAnswer {
  data: unknown;
  errors?: { extensions: { code: string; http: { status: number }; errors?: { loc: Loc; type: string }[] } }[];
}

/** A GraphQL answer refusing the value at `loc` with validation_error (HTTP status 422 in extensions), issue `type`. */
function assertGqlOutOfBounds(res: LightMyRequestResponse, loc: Loc, type: string, what: string) {
  assert.equal(res.statusCode, 200, `${what}: ${res.body}`);
  const body = res.json() as GqlAnswer;
  const error = body.errors?.[0];
  assert.ok(error, `${what}: no error in ${res.body.slice(0, 500)}`);
  assert.equal(error.extensions.code, 'validation_error', `${what}: ${res.body.slice(0, 500)}`);
  assert.equal(error.extensions.http.status, 422, what);
  assert.ok(
    error.extensions.errors?.some((e) => e.type === type && JSON.stringify(e.loc) === JSON.stringify(loc)),
    `${what}: no ${type} issue at ${JSON.stringify(loc)} in ${res.body.slice(0, 500)}`,
  );
}

function assertRestOutOfBounds(res: LightMyRequestResponse, loc: Loc, type: string, what: string) {
  assert.equal(res.statusCode, 422, `${what}: ${res.body.slice(0, 500)}`);
  const body = res.json() as { code: string; errors: { loc: Loc; type: string }[] };
  assert.equal(body.code, 'validation_error', what);
  assert.ok(
    body.errors.some((e) => e.type === type && JSON.stringify(e.loc) === JSON.stringify(loc)),
    `${what}: no ${type} issue at ${JSON.stringify(loc)} in ${res.body.slice(0, 500)}`,
  );
}

test('GraphQL refuses the out-of-bounds inputs REST refuses, at the same member, and writes nothing', async (t) => {
  const app = await buildWithAi(t, { AI_BASE_URL: 'http://127.0.0.1:9/v1' });
  const owner = await seedOwner(app);
  const token = (await login(app, owner.email)).access_token;
  const key = await moduleKey(app, token, ['agent', 'chat']);
  const gql = (auth: string, query: string, variables: Record<string, unknown>) =>
    app.inject({ method: 'POST', url: '/graphql', headers: bearer(auth), payload: { query, variables } });
  const many = (n: number) => Array.from({ length: n }, () => 'calculator');
  const long = 'x'.repeat(100_000);

  const cases: [string, () => Promise<LightMyRequestResponse>, () => Promise<LightMyRequestResponse>, Loc, Loc, string][] = [
    [
      'agent tools: 10,000 items',
      () => gql(key.key, 'mutation($input: AgentRunInput!) { agentRun(input: $input) { output } }', { input: { task: 'sum', tools: many(10_000) } }),
      () => app.inject({ method: 'POST', url: '/v1/agent/run', headers: bearer(key.key), payload: { task: 'sum', tools: many(10_000) } }),
      ['input', 'tools'],
      ['body', 'tools'],
      'too_long',
    ],
    [
      'module key scopes: 10,000 items',
      () =>
        gql(token, 'mutation($input: ModuleKeyCreateInput!) { createMyApiKey(input: $input) { key } }', {
          input: { name: 'many', scopes: Array.from({ length: 10_000 }, () => 'chat') },
        }),
      () => app.inject({ method: 'POST', url: '/v1/apikeys', headers: bearer(token), payload: { name: 'many', scopes: Array.from({ length: 10_000 }, () => 'chat') } }),
      ['input', 'scopes'],
      ['body', 'scopes'],
      'too_long',
    ],
    [
      'module key scope outside the list',
      () => gql(token, 'mutation($input: ModuleKeyCreateInput!) { createMyApiKey(input: $input) { key } }', { input: { name: 'odd', scopes: ['root'] } }),
      () => app.inject({ method: 'POST', url: '/v1/apikeys', headers: bearer(token), payload: { name: 'odd', scopes: ['root'] } }),
      ['input', 'scopes', 0],
      ['body', 'scopes', 0],
      'enum',
    ],
    [
      'chat model: empty',
      () => gql(key.key, 'mutation($input: ChatInput!) { chat(input: $input) { response } }', { input: { message: 'hi', agent: 'general', sessionId: 's1', model: '' } }),
      () => app.inject({ method: 'POST', url: '/v1/chat', headers: bearer(key.key), payload: { message: 'hi', agent: 'general', session_id: 's1', model: '' } }),
      ['input', 'model'],
      ['body', 'model'],
      'string_too_short',
    ],
    [
      'TOTP code: 100,000 characters (an argument bound, @RestArgs)',
      () => gql(token, 'mutation($code: String!) { verifyMfa(code: $code) { enabled } }', { code: long }),
      () => app.inject({ method: 'POST', url: '/v1/me/mfa/verify', headers: bearer(token), payload: { totp_code: long } }),
      ['code'],
      ['body', 'totp_code'],
      'string_too_long',
    ],
    [
      'admin users q: 100,000 characters',
      () => gql(token, 'query($q: String) { adminUsers(q: $q) { total } }', { q: long }),
      () => app.inject({ url: `/v1/admin/users?q=${long.slice(0, 1000)}`, headers: bearer(token) }),
      ['q'],
      ['query', 'q'],
      'string_too_long',
    ],
  ];
  const keysBefore = await app.inject({ url: '/v1/apikeys', headers: bearer(token) });
  for (const [what, viaGraphql, viaRest, gqlLoc, restLoc, type] of cases) {
    assertGqlOutOfBounds(await viaGraphql(), gqlLoc, type, `GraphQL ${what}`);
    assertRestOutOfBounds(await viaRest(), restLoc, type, `REST ${what}`);
  }
  const keysAfter = await app.inject({ url: '/v1/apikeys', headers: bearer(token) });
  const ids = (res: LightMyRequestResponse) => (res.json() as { keys: { id: string }[] }).keys.map((k) => k.id);
  assert.deepEqual(ids(keysAfter), ids(keysBefore), 'a refused key creation created no key');

  // A null optional value is "not given", never out of bounds.
  const unbounded = await gql(token, 'query($q: String) { adminUsers(q: $q) { total } }', { q: null });
  assert.equal((unbounded.json() as GqlAnswer).errors, undefined, unbounded.body);
});

/** A schema of one query (with the given argument hints) and one mutation, each with a policy, as @Access and @RestArgs leave them. */
function probeSchema(argHints: Record<string, unknown> = {}): GraphQLSchema {
  const policy = { atriumPolicy: { auth: 'public' } };
  const extensions = { ...policy, atriumRestArgs: argHints };
  return new GraphQLSchema({
    query: new GraphQLObjectType({ name: 'Query', fields: { probe: { type: GraphQLBoolean, args: { q: { type: GraphQLString } }, extensions } } }),
    mutation: new GraphQLObjectType({ name: 'Mutation', fields: { poke: { type: GraphQLBoolean, args: { note: { type: GraphQLString } }, extensions: policy } } }),
  });
}

function probeRoute(field: string, args: Record<string, ArgSource>): RestRoute {
  return { method: 'GET', path: '/probe', operationId: field, summary: 'probe', tag: 'Probe', status: 200, field, args };
}

test('a route that bounds an argument by itself fails to compile: bounds live on the field, where GraphQL holds them too', () => {
  const schema = probeSchema();
  assert.throws(() => compileRoutes(schema, [probeRoute('probe', { q: query('q', { maxLength: 10 }) })]), /the hint maxLength of q bounds GraphQL too/);
  assert.throws(() => compileRoutes(schema, [probeRoute('poke', { note: member('note', { minLength: 1 }) })]), /the hint minLength of note bounds GraphQL too/);
  // A format too: an id the route alone held to a UUID reached the resolver as anything over GraphQL.
  assert.throws(() => compileRoutes(schema, [probeRoute('probe', { q: query('q', { format: 'uuid' }) })]), /the hint format of q bounds GraphQL too/);
  // Docs and REST spelling stay the route's.
  assert.doesNotThrow(() => compileRoutes(schema, [probeRoute('probe', { q: query('q', { description: 'Contains' }) })]));
  // A field's own bound reaches the route's JSON schema.
  const [compiled] = compileRoutes(probeSchema({ q: { maxLength: 10 } }), [probeRoute('probe', { q: query('q', { description: 'Contains' }) })]);
  assert.deepEqual((compiled!.request.querystring!.properties as Record<string, object>).q, { type: 'string', maxLength: 10, description: 'Contains' });
});

test("a route naming an argument's member otherwise than its REST name fails to compile: GraphQL could not locate a service's issue at that member", () => {
  assert.throws(() => compileRoutes(probeSchema(), [probeRoute('probe', { q: query('query') })]), /argument q is the query member query: declare that name on the field/);
  assert.throws(() => compileRoutes(probeSchema(), [probeRoute('poke', { note: member('text') })]), /argument note is the body member text/);
  // Declared on the field (@RestArgs), where the policy layer reads it back.
  assert.doesNotThrow(() => compileRoutes(probeSchema({ q: { name: 'query' } }), [probeRoute('probe', { q: query('query') })]));
});

test('an argument bound naming an argument the field lacks stops the build', () => {
  // A typo in @RestArgs must not leave an argument silently unbounded.
  assert.throws(() => enforceFieldPolicies(probeSchema({ query: { maxLength: 10 } }), 'probe'), /has no argument query to hint/);
  assert.doesNotThrow(() => enforceFieldPolicies(probeSchema({ q: { maxLength: 10 } }), 'probe'));
});

test('an id that is not a UUID is validation_error over GraphQL as over REST, before the resolver runs; an unknown UUID stays not_found, an upper-cased one names the same row', async (t) => {
  const app = await buildWithAi(t, { AI_BASE_URL: 'http://127.0.0.1:9/v1' });
  const s = await cast(app);
  const modules = await moduleKey(app, s.tokens.ownerA, ['research', 'bulk']);
  const gql = (auth: string, query: string, variables: Record<string, unknown>) =>
    app.inject({ method: 'POST', url: '/graphql', headers: bearer(auth), payload: { query, variables } });
  const rest = (auth: string, method: 'GET' | 'POST' | 'DELETE', url: string) => app.inject({ method, url, headers: bearer(auth) });
  const gqlCode = (res: LightMyRequestResponse) => (res.json() as GqlAnswer).errors?.[0]?.extensions.code;

  // Each field, the REST route running it, and the argument and path parameter naming the id.
  const fields: { what: string; auth: string; query: string; arg: string; method: 'GET' | 'POST' | 'DELETE'; url: (id: string) => string; param: Loc }[] = [
    { what: 'adminUser', auth: s.tokens.ownerA, query: 'query($id: ID!) { adminUser(userId: $id) { id } }', arg: 'userId', method: 'GET', url: (id) => `/v1/admin/users/${id}`, param: ['path', 'user_id'] },
    { what: 'unlockUser', auth: s.tokens.ownerA, query: 'mutation($id: ID!) { unlockUser(userId: $id) { wasLocked } }', arg: 'userId', method: 'POST', url: (id) => `/v1/admin/users/${id}/unlock`, param: ['path', 'user_id'] },
    { what: 'revokeApiKey', auth: s.tokens.ownerA, query: 'mutation($id: ID!) { revokeApiKey(id: $id) }', arg: 'id', method: 'DELETE', url: (id) => `/v1/admin/api-keys/${id}`, param: ['path', 'key_id'] },
    { what: 'adminCompany', auth: s.tokens.superadmin, query: 'query($id: ID!) { adminCompany(id: $id) { id } }', arg: 'id', method: 'GET', url: (id) => `/v1/admin/companies/${id}`, param: ['path', 'company_id'] },
    { what: 'companyAuditLog', auth: s.tokens.superadmin, query: 'query($id: ID!) { companyAuditLog(companyId: $id) { total } }', arg: 'companyId', method: 'GET', url: (id) => `/v1/admin/companies/${id}/audit`, param: ['path', 'company_id'] },
    { what: 'resendInvitation', auth: s.tokens.ownerA, query: 'mutation($id: ID!) { resendInvitation(id: $id) { id } }', arg: 'id', method: 'POST', url: (id) => `/v1/admin/invitations/${id}/resend`, param: ['path', 'invitation_id'] },
    { what: 'researchJob (AI-modules key)', auth: modules.key, query: 'query($id: ID!) { researchJob(id: $id) { id } }', arg: 'id', method: 'GET', url: (id) => `/v1/research/status/${id}`, param: ['path', 'job_id'] },
    { what: 'bulkJob (company API key)', auth: s.tokens.keyA, query: 'query($id: ID!) { bulkJob(id: $id) { id } }', arg: 'id', method: 'GET', url: (id) => `/v1/bulk/jobs/${id}`, param: ['path', 'id'] },
    { what: 'adminUsers companyId (optional)', auth: s.tokens.superadmin, query: 'query($id: ID) { adminUsers(companyId: $id) { total } }', arg: 'companyId', method: 'GET', url: (id) => `/v1/admin/users?company_id=${id}`, param: ['query', 'company_id'] },
  ];
  for (const field of fields) {
    // A urn:uuid: prefix, which a bare format check lets through, names no row: refused like any other non-id.
    for (const malformed of ['nope', `${randomUUID()}x`, `urn:uuid:${randomUUID()}`]) {
      assertGqlOutOfBounds(await gql(field.auth, field.query, { id: malformed }), [field.arg], 'value_error.format', `GraphQL ${field.what} ${malformed}`);
      assertRestOutOfBounds(await rest(field.auth, field.method, field.url(malformed)), field.param, 'value_error.format', `REST ${field.what} ${malformed}`);
    }
  }
  for (const field of fields) {
    const unknown = randomUUID();
    assert.equal(gqlCode(await gql(field.auth, field.query, { id: unknown })), 'not_found', `GraphQL ${field.what}: an unknown id`);
    assertCode(await rest(field.auth, field.method, field.url(unknown)), 404, 'not_found');
  }

  // Upper-cased, an id names the row stored lower-case, over both transports alike.
  const upper = (id: string) => id.toUpperCase();
  const user = await gql(s.tokens.ownerA, 'query($id: ID!) { adminUser(userId: $id) { id } }', { id: upper(s.memberA.userId) });
  assert.deepEqual((user.json() as GqlAnswer).data, { adminUser: { id: s.memberA.userId } }, user.body);
  assert.equal((await rest(s.tokens.ownerA, 'GET', `/v1/admin/users/${upper(s.memberA.userId)}`)).json().id, s.memberA.userId);
  const company = await gql(s.tokens.ownerA, 'query($id: ID!) { adminCompany(id: $id) { id } }', { id: upper(s.a.companyId) });
  assert.deepEqual((company.json() as GqlAnswer).data, { adminCompany: { id: s.a.companyId } }, company.body);
  // The caller's own company, named upper-cased, is not "another company".
  const users = await gql(s.tokens.ownerA, 'query($id: ID) { adminUsers(companyId: $id) { total } }', { id: upper(s.a.companyId) });
  assert.equal((users.json() as GqlAnswer).errors, undefined, users.body);
  assert.equal((await rest(s.tokens.ownerA, 'GET', `/v1/admin/users?company_id=${upper(s.a.companyId)}`)).statusCode, 200);
  const [viaGraphql, viaRest] = [await createCompanyKey(app, s.a.companyId, 'one'), await createCompanyKey(app, s.a.companyId, 'two')];
  const revoked = await gql(s.tokens.ownerA, 'mutation($id: ID!) { revokeApiKey(id: $id) }', { id: upper(viaGraphql.id) });
  assert.deepEqual((revoked.json() as GqlAnswer).data, { revokeApiKey: true }, revoked.body);
  assert.equal((await rest(s.tokens.ownerA, 'DELETE', `/v1/admin/api-keys/${upper(viaRest.id)}`)).statusCode, 204);
  for (const key of [viaGraphql, viaRest]) assert.equal((await app.inject({ url: '/v1/admin/api-keys', headers: bearer(key.key) })).statusCode, 401, 'the key is revoked');

  const submitted = await gql(modules.key, 'mutation($input: BulkCsvInput!) { submitBulkJob(input: $input) { id } }', {
    input: { csv: 'review\nfine\n', inputColumn: 'review', promptTemplate: 'Classify: {text}' },
  });
  const jobId = ((submitted.json() as GqlAnswer).data as { submitBulkJob: { id: string } } | null)?.submitBulkJob.id;
  assert.ok(jobId, submitted.body);
  const job = await gql(modules.key, 'query($id: ID!) { bulkJob(id: $id) { id } }', { id: upper(jobId) });
  assert.deepEqual((job.json() as GqlAnswer).data, { bulkJob: { id: jobId } }, job.body);
  assert.equal((await rest(modules.key, 'GET', `/v1/bulk/status/${upper(jobId)}`)).json().job_id, jobId);
});

test('the policy layer lowers UUID arguments, in lists and nested inputs too, before the resolver reads them', async () => {
  const seen: unknown[] = [];
  const policy = { atriumPolicy: { auth: 'public' } };
  const Filter = new GraphQLInputObjectType({
    name: 'Filter',
    fields: { ownerId: { type: GraphQLID, extensions: { atriumRest: { format: 'uuid' } } }, label: { type: GraphQLString } },
  });
  const schema = new GraphQLSchema({
    query: new GraphQLObjectType({
      name: 'Query',
      fields: {
        probe: {
          type: GraphQLBoolean,
          args: { id: { type: GraphQLID }, ids: { type: new GraphQLList(GraphQLID) }, filter: { type: Filter }, label: { type: GraphQLString } },
          extensions: { ...policy, atriumRestArgs: { id: { format: 'uuid' }, ids: { items: { format: 'uuid' } } } },
          resolve: (_source, args) => (seen.push(args), true),
        },
      },
    }),
  });
  const id = randomUUID();
  const result = await graphql({
    schema: enforceFieldPolicies(schema, 'probe'),
    source: 'query($id: ID, $ids: [ID], $filter: Filter) { probe(id: $id, ids: $ids, filter: $filter, label: "MiXed") }',
    variableValues: { id: id.toUpperCase(), ids: [id.toUpperCase(), id], filter: { ownerId: id.toUpperCase(), label: 'MiXed' } },
    contextValue: { principal: { kind: 'anonymous' }, meta: { requestId: 'r' } },
  });
  assert.equal(result.errors, undefined, JSON.stringify(result.errors));
  // Only what is declared a UUID changes case.
  assert.deepEqual(JSON.parse(JSON.stringify(seen)), [{ id, ids: [id, id], filter: { ownerId: id, label: 'MiXed' }, label: 'MiXed' }]);
});
