import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { GraphQLBoolean, GraphQLID, GraphQLInputObjectType, GraphQLList, GraphQLObjectType, GraphQLSchema, GraphQLString, graphql } from 'graphql';
import type { LightMyRequestResponse } from 'fastify';
import { bearer, login, seedOwner } from './helper';
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
  // Docs and REST spelling stay the route's.
  assert.doesNotThrow(() => compileRoutes(schema, [probeRoute('probe', { q: query('q', { description: 'Contains' }) })]));
  // A field's own bound reaches the route's JSON schema.
  const [compiled] = compileRoutes(probeSchema({ q: { maxLength: 10 } }), [probeRoute('probe', { q: query('q', { description: 'Contains' }) })]);
  assert.deepEqual((compiled!.request.querystring!.properties as Record<string, object>).q, { type: 'string', maxLength: 10, description: 'Contains' });
});

test('an argument bound naming an argument the field lacks stops the build', () => {
  // A typo in @RestArgs must not leave an argument silently unbounded.
  assert.throws(() => enforceFieldPolicies(probeSchema({ query: { maxLength: 10 } }), 'probe'), /has no argument query to hint/);
  assert.doesNotThrow(() => enforceFieldPolicies(probeSchema({ q: { maxLength: 10 } }), 'probe'));
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
