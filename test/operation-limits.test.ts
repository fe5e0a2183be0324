import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import WebSocket from 'ws';
import { createClient } from 'graphql-ws';
import { getIntrospectionQuery, parse } from 'graphql';
import { bearer, build, login, PASSWORD, seedOwner, sql } from './helper';
import { serveSubgraph } from '../subgraphs/serve';
import { loadKernelConfig } from '../src/kernel/config';

/**
 * Every GraphQL operation is measured before it runs (tokens, depth,
 * aliases, root fields, estimated cost) on every transport, and refused with
 * 400 query_too_complex, naming the cap, without running anything. Each
 * root field, aliases included, spends its own unit of its budget.
 */

interface GraphQLAnswer {
  status: number;
  body: { data?: Record<string, unknown> | null; errors?: { message: string; extensions: Record<string, unknown> & { code: string } }[] };
}

async function gql(app: FastifyInstance, query: string, options: { token?: string; variables?: Record<string, unknown> } = {}): Promise<GraphQLAnswer> {
  const res = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers: options.token ? bearer(options.token) : {},
    payload: { query, variables: options.variables },
  });
  return { status: res.statusCode, body: res.json() };
}

function assertTooComplex(answer: GraphQLAnswer, limit: string) {
  assert.equal(answer.status, 400, JSON.stringify(answer.body));
  const error = answer.body.errors?.[0];
  assert.equal(error?.extensions.code, 'query_too_complex', JSON.stringify(answer.body));
  assert.equal(error?.extensions.limit, limit);
  assert.equal(answer.body.data ?? null, null, 'nothing ran');
}

const aliases = (n: number, field: string) => Array.from({ length: n }, (_, i) => `a${i}: ${field}`).join(' ');

async function owner(app: FastifyInstance) {
  const seeded = await seedOwner(app);
  return { ...seeded, token: (await login(app, seeded.email)).access_token };
}

test('aliases over the cap are refused before anything runs, without a credential too', async (t) => {
  const app = await build(t);
  assertTooComplex(await gql(app, `{ ${aliases(31, 'health { database }')} }`), 'aliases');
  // 34,000 aliases, as an attacker sent them: refused as fast, with no body echoing them.
  const res = await app.inject({ method: 'POST', url: '/graphql', payload: { query: `{ ${aliases(34_000, 'health { database }')} }` } });
  assert.equal(res.statusCode, 400);
  assert.equal(res.json().errors[0].extensions.code, 'query_too_complex');
  assert.ok(res.body.length < 1000, 'the refusal is short');
  // At the cap it runs.
  const ok = await gql(app, `{ ${aliases(20, 'health { database }')} }`);
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  assert.equal(Object.keys(ok.body.data!).length, 20);
});

test('root fields over the cap are refused', async (t) => {
  const app = await build(t, { graphql: { ...(await defaults()), maxAliases: 100 } });
  assertTooComplex(await gql(app, `{ ${aliases(21, 'health { status }')} }`), 'root fields');
  // The same field asked twice under one response key is one field.
  const merged = await gql(app, '{ health { status } health { database } }');
  assert.equal(merged.status, 200, JSON.stringify(merged.body));
});

test('a document deeper than the cap is refused, fragments followed', async (t) => {
  const app = await build(t, { graphql: { ...(await defaults()), maxDepth: 3 } });
  const { token } = await owner(app);
  assertTooComplex(await gql(app, '{ __type(name: "Query") { fields { type { name } } } }', { token }), 'depth');
  const nested = await gql(app, 'query { ...A } fragment A on Query { __type(name: "Query") { ...B } } fragment B on __Type { fields { type { name } } }', { token });
  assertTooComplex(nested, 'depth');
  const shallow = await gql(app, '{ auditLog { items { id } } }', { token });
  assert.equal(shallow.status, 200, JSON.stringify(shallow.body));
});

test('fragment cycles and chains of thousands are a 400, not a stack overflow', async (t) => {
  const app = await build(t);
  const cycle = ['query { ...F0 }'];
  for (let i = 0; i < 10_000; i++) cycle.push(`fragment F${i} on Query { ...F${(i + 1) % 10_000} }`);
  const tooMany = await gql(app, cycle.join('\n'));
  assertTooComplex(tooMany, 'tokens');
  // A parse stopped at the cap knows no count: the message says "more than", never "Infinity".
  assert.match(tooMany.body.errors![0]!.message, /limit on tokens: more than \d+$/);
  const chain = ['query { ...F0 }'];
  for (let i = 0; i < 5_000; i++) chain.push(`fragment F${i} on Query { ${i === 4_999 ? 'health { status }' : `...F${i + 1}`} }`);
  assertTooComplex(await gql(app, chain.join('\n')), 'tokens');
  // A short cycle stays the validator's: a 400 naming the cycle.
  const short = await gql(app, 'query { ...A } fragment A on Query { ...B } fragment B on Query { ...A }');
  assert.equal(short.status, 400);
  assert.equal(short.body.errors?.[0]?.extensions.code, 'bad_request');
});

test('the estimated cost counts page sizes, from literals and from variables', async (t) => {
  const app = await build(t);
  const { token } = await owner(app);
  const page = (n: number | string) => `auditLog(perPage: ${n}) { items { id action actorLabel actorType createdAt ip requestId data } total }`;
  // Nine full pages of 100 events: about 7,200 units, over the default 5,000.
  assertTooComplex(await gql(app, `{ ${aliases(9, page(100))} }`, { token }), 'estimated cost');
  const small = await gql(app, `{ ${aliases(9, page(5))} }`, { token });
  assert.equal(small.status, 200, JSON.stringify(small.body));
  const query = `query($n: Int!) { ${aliases(9, page('$n'))} }`;
  assertTooComplex(await gql(app, query, { token, variables: { n: 100 } }), 'estimated cost');
  const fits = await gql(app, query, { token, variables: { n: 5 } });
  assert.equal(fits.status, 200, JSON.stringify(fits.body));
  // A variable left out takes its declared default: the default is measured, not the field's own.
  const defaulted = `query($n: Int = 100) { ${aliases(9, page('$n'))} }`;
  assertTooComplex(await gql(app, defaulted, { token }), 'estimated cost');
  assert.equal((await gql(app, defaulted, { token, variables: { n: 5 } })).status, 200);
});

test('the refusal names the cap, its limit and what was asked', async (t) => {
  const app = await build(t);
  const answer = await gql(app, `{ ${aliases(40, 'health { status }')} }`);
  assert.deepEqual(
    { limit: answer.body.errors![0]!.extensions.limit, max: answer.body.errors![0]!.extensions.max, actual: answer.body.errors![0]!.extensions.actual },
    { limit: 'aliases', max: 30, actual: 40 },
  );
});

test('aliased password resets spend one unit each of the auth budget and mail no more than the per-account cap', async (t) => {
  const app = await build(t, { rateLimit: { windowSeconds: 60, authenticated: 1000, moduleKey: 10_000, anonymous: 1000, auth: 20, feedback: 1000 } });
  const { email } = await seedOwner(app);
  const resets = (n: number) => `mutation { ${aliases(n, `requestPasswordReset(email: "${email}")`)} }`;
  const first = await gql(app, resets(20));
  assert.equal(first.status, 200, JSON.stringify(first.body));
  await app.kernel.worker.drain();
  const [{ n: mails }] = await sql<{ n: number }>(app, "select count(*) as n from mail_outbox where template = 'password_reset'");
  assert.ok(Number(mails) <= 5, `at most 5 reset mails an hour, got ${mails}`);
  // The budget of 20 is spent: one more reset is a 429.
  const more = await gql(app, resets(1));
  assert.equal(more.status, 429, JSON.stringify(more.body));
});

test('aliased root fields of the default budget spend a unit each, as many REST requests would, over HTTP and the socket', async (t) => {
  const app = await build(t, { rateLimit: { windowSeconds: 60, authenticated: 12, moduleKey: 10_000, anonymous: 1000, auth: 1000, feedback: 1000 } });
  const { token } = await owner(app);
  const five = await app.inject({ method: 'POST', url: '/graphql', headers: bearer(token), payload: { query: `{ ${aliases(5, 'me { role }')} }` } });
  assert.equal(five.statusCode, 200, five.body);
  assert.equal(five.headers['x-ratelimit-remaining'], '7', 'five fields spent five of twelve (login is its own budget)');
  // Eight fields with seven units left: refused whole, nothing spent beyond the request's own unit.
  const eight = await gql(app, `{ ${aliases(8, 'me { role }')} }`, { token });
  assert.equal(eight.status, 429, JSON.stringify(eight.body));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const url = `ws://127.0.0.1:${(app.server.address() as AddressInfo).port}/graphql`;
  const client = createClient({ url, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${token}` }, retryAttempts: 0, lazy: true });
  t.after(() => client.dispose());
  const overSocket = (fields: number) =>
    new Promise<unknown>((resolve) => {
      client.subscribe({ query: `{ ${aliases(fields, 'me { role }')} }` }, { next: resolve, error: resolve, complete: () => undefined });
    });
  // Six units left (the refused operation spent only its request's): three fields leave three, four more are too many.
  assert.doesNotMatch(JSON.stringify(await overSocket(3)), /rate_limited/);
  assert.match(JSON.stringify(await overSocket(4)), /rate_limited/);
});

test('aliased logins over the auth budget are refused together: no session opened, no hash paid', async (t) => {
  const app = await build(t, { rateLimit: { windowSeconds: 60, authenticated: 1000, moduleKey: 10_000, anonymous: 1000, auth: 5, feedback: 1000 } });
  const { email } = await seedOwner(app);
  const loginField = `login(input: { email: "${email}", password: "${PASSWORD}" }) { accessToken }`;
  const refused = await gql(app, `mutation { ${aliases(6, loginField)} }`);
  assert.equal(refused.status, 429, JSON.stringify(refused.body));
  assert.equal(refused.body.errors?.[0]?.extensions.code, 'rate_limited');
  const [{ n }] = await sql<{ n: number }>(app, 'select count(*) as n from sessions');
  assert.equal(Number(n), 0);
});

test('a subscription sent over HTTP is a 400 that runs nothing', async (t) => {
  const app = await build(t);
  const { token } = await owner(app);
  const post = await gql(app, 'subscription { auditEvents { action } }', { token });
  assert.equal(post.status, 400, JSON.stringify(post.body));
  assert.equal(post.body.errors?.[0]?.extensions.code, 'bad_request');
  const get = await app.inject({ method: 'GET', url: '/graphql', headers: bearer(token), query: { query: 'subscription { auditEvents { action } }' } });
  assert.ok(get.statusCode === 400 || get.statusCode === 405, get.body);
});

test('a document sent as JSON AST text is refused, never run around the policy layer', async (t) => {
  const app = await build(t);
  const ast = JSON.stringify(parse(`{ ${aliases(100, 'health { status }')} }`, { noLocation: true }));
  const answer = await gql(app, ast);
  assert.equal(answer.status, 400, JSON.stringify(answer.body));
  assert.equal(answer.body.errors?.[0]?.extensions.code, 'bad_request');
});

test('introspection needs a credential by default, can be opened or turned off', async (t) => {
  const query = getIntrospectionQuery();
  const closed = await build(t);
  const { token } = await owner(closed);
  const anonymous = await gql(closed, query);
  assert.equal(anonymous.status, 401, JSON.stringify(anonymous.body).slice(0, 300));
  assert.equal(anonymous.body.errors?.[0]?.extensions.code, 'unauthenticated');
  assert.equal((await gql(closed, '{ __type(name: "Query") { name } }')).status, 401);
  // __typename is not introspection.
  assert.equal((await gql(closed, '{ __typename }')).status, 200);
  assert.equal((await gql(closed, query, { token })).status, 200);
  // The whole schema once per operation: a second __schema is refused before anything runs.
  assertTooComplex(await gql(closed, '{ a: __schema { queryType { name } } b: __schema { queryType { name } } }', { token }), '__schema');

  const open = await build(t, { graphql: { ...(await defaults()), introspection: 'public' } });
  const publicAnswer = await gql(open, query);
  assert.equal(publicAnswer.status, 200);
  assert.equal((publicAnswer.body.data!.__schema as { queryType: { name: string } }).queryType.name, 'Query');

  const { app: off, url } = await listening(t, { graphql: { ...(await defaults()), introspection: 'off' } });
  const offOwner = await owner(off);
  const refused = await gql(off, query, { token: offOwner.token });
  assert.equal(refused.status, 403);
  assert.equal(refused.body.errors?.[0]?.extensions.code, 'introspection_disabled');
  // Over the socket too, where __schema reaches no resolver of ours.
  const client = createClient({ url, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${offOwner.token}` }, retryAttempts: 0, lazy: true });
  t.after(() => client.dispose());
  const overSocket = await new Promise<unknown>((resolve) => {
    client.subscribe({ query: '{ __schema { queryType { name } } }' }, { next: resolve, error: resolve, complete: () => undefined });
  });
  assert.match(JSON.stringify(overSocket), /introspection_disabled/);
});

test('"Did you mean" suggestions reach only callers who may introspect: over HTTP, the socket and a standalone subgraph, with introspection authenticated or off', async (t) => {
  const mistakes = [
    '{ adminUserz { id } }',
    '{ health { statu } }',
    '{ adminUsers(sor: "name") { total } }',
    'query ($x: AdminUserPatchInpu) { health { status } }',
    // An input's fields and an enum's values are suggested too.
    'mutation { updateAdminUser(userId: "00000000-0000-4000-8000-000000000000", input: { nam: "x" }) { id } }',
    'mutation { updateAdminUser(userId: "00000000-0000-4000-8000-000000000000", input: { role: OWNR }) { id } }',
  ];
  const messages = (answer: GraphQLAnswer) => (answer.body.errors ?? []).map((e) => e.message).join(' | ');
  const suggests = (text: string) => /Did you mean/.test(text);

  // authenticated (the default): an anonymous caller gets the errors without the hints, a signed-in one with them.
  const { app: closed, url: closedUrl } = await listening(t, {});
  const { token } = await owner(closed);
  for (const query of mistakes) {
    const anonymous = await gql(closed, query);
    assert.equal(anonymous.status, 400, query);
    assert.ok(!suggests(messages(anonymous)), `anonymous: ${messages(anonymous)}`);
    assert.equal(anonymous.body.errors?.[0]?.extensions.code, 'bad_request');
    const signedIn = await gql(closed, query, { token });
    assert.ok(suggests(messages(signedIn)), `signed in: ${messages(signedIn)}`);
  }
  // The message still says what is wrong, only without the schema's nearest names.
  assert.match(messages(await gql(closed, '{ adminUserz { id } }')), /^Cannot query field "adminUserz" on type "Query"\.$/);

  // off: nobody reads the schema, so nobody gets the hints; the socket alike.
  const { app: off, url: offUrl } = await listening(t, { graphql: { ...(await defaults()), introspection: 'off' } });
  const offOwner = await owner(off);
  for (const query of mistakes) {
    const signedIn = await gql(off, query, { token: offOwner.token });
    assert.equal(signedIn.status, 400, query);
    assert.ok(!suggests(messages(signedIn)), `off, signed in: ${messages(signedIn)}`);
  }
  const overSocket = async (url: string, bearerToken: string, query: string) => {
    const client = createClient({ url, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${bearerToken}` }, retryAttempts: 0, lazy: true });
    t.after(() => client.dispose());
    return JSON.stringify(await new Promise<unknown>((resolve) => client.subscribe({ query }, { next: resolve, error: resolve, complete: () => undefined })));
  };
  for (const query of ['{ adminUserz { id } }', 'subscription { auditEventz { action } }']) {
    const refused = await overSocket(offUrl, offOwner.token, query);
    assert.match(refused, /Cannot query field/);
    assert.ok(!suggests(refused), `off, socket: ${refused}`);
    assert.ok(suggests(await overSocket(closedUrl, token, query)), 'authenticated, socket: the signed-in caller may introspect');
  }

  // A standalone subgraph (Apollo's validation) follows the same setting.
  const subgraph = await serveSubgraph('identity', {
    host: '127.0.0.1',
    port: 0,
    orm: closed.kernel.orm,
    budgets: closed.kernel.budgets,
    limits: closed.kernel.config.graphql,
    trustProxy: false,
    bodyLimitBytes: closed.kernel.config.bodyLimitBytes,
    domains: closed.domains,
  });
  t.after(() => subgraph.stop());
  const viaSubgraph = async (query: string, headers: Record<string, string> = {}) => {
    const res = await fetch(subgraph.url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ query }) });
    return messages({ status: res.status, body: (await res.json()) as GraphQLAnswer['body'] });
  };
  const anonymousSubgraph = await viaSubgraph('{ mee { id } }');
  assert.match(anonymousSubgraph, /Cannot query field "mee"/);
  assert.ok(!suggests(anonymousSubgraph), `subgraph, anonymous: ${anonymousSubgraph}`);
  assert.ok(suggests(await viaSubgraph('{ mee { id } }', bearer(token))), 'subgraph, signed in');
});

test('REST routes are measured as GraphQL operations: a page over the operator cost cap is refused', async (t) => {
  const app = await build(t, { graphql: { ...(await defaults()), maxCost: 300 } });
  const { token } = await owner(app);
  const big = await app.inject({ method: 'GET', url: '/v1/admin/users?per_page=100', headers: bearer(token) });
  assert.equal(big.statusCode, 400, big.body);
  assert.equal(big.headers['content-type'], 'application/problem+json; charset=utf-8');
  assert.equal(big.json().code, 'query_too_complex');
  assert.equal(big.json().limit, 'estimated cost');
  const small = await app.inject({ method: 'GET', url: '/v1/admin/users?per_page=5', headers: bearer(token) });
  assert.equal(small.statusCode, 200, small.body);
});

test('an operation over a cap sent over the socket is refused before any field runs', async (t) => {
  const { app, url } = await listening(t, { rateLimit: { windowSeconds: 60, authenticated: 1000, moduleKey: 10_000, anonymous: 1000, auth: 1000, feedback: 1000 } });
  const { email, token } = await owner(app);
  const client = createClient({ url, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${token}` }, retryAttempts: 0, lazy: true });
  t.after(() => client.dispose());
  const run = (query: string) =>
    new Promise<{ data?: unknown; errors?: { extensions?: { code?: string; limit?: string } }[] }>((resolve, reject) => {
      let result: { data?: unknown; errors?: { extensions?: { code?: string; limit?: string } }[] } = {};
      client.subscribe({ query }, { next: (value) => (result = value as typeof result), error: (err) => (Array.isArray(err) ? resolve({ errors: err }) : reject(err)), complete: () => resolve(result) });
    });
  const refused = await run(`mutation { ${aliases(25, `requestPasswordReset(email: "${email}")`)} }`);
  assert.equal(refused.errors?.[0]?.extensions?.code, 'query_too_complex', JSON.stringify(refused));
  const subscription = await run(`subscription { ${aliases(31, 'auditEvents { action }')} }`);
  assert.equal(subscription.errors?.[0]?.extensions?.code, 'query_too_complex', JSON.stringify(subscription));
  await app.kernel.worker.drain();
  const [{ n }] = await sql<{ n: number }>(app, "select count(*) as n from jobs where kind = 'identity.password_reset_mail'");
  assert.equal(Number(n), 0, 'no reset ran');
  // Introspection fields alone reach no resolver: they are measured and admitted all the same.
  const metaOnly = await run(`{ ${aliases(31, '__typename')} }`);
  assert.equal(metaOnly.errors?.[0]?.extensions?.code, 'query_too_complex', JSON.stringify(metaOnly));
  const fine = await run('{ me { role } }');
  assert.deepEqual(fine.data, { me: { role: 'OWNER' } });
});

test('a standalone subgraph refuses an operation over a cap as /graphql does', async (t) => {
  const main = await build(t);
  const other = await build(t);
  const subgraph = await serveSubgraph('identity', {
    host: '127.0.0.1',
    port: 0,
    orm: other.kernel.orm,
    budgets: other.kernel.budgets,
    limits: other.kernel.config.graphql,
    trustProxy: false,
    bodyLimitBytes: other.kernel.config.bodyLimitBytes,
    domains: other.domains,
  });
  t.after(() => subgraph.stop());
  const query = `{ ${aliases(31, 'me { id }')} }`;
  const viaMain = await gql(main, query);
  const res = await fetch(subgraph.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
  const body = (await res.json()) as GraphQLAnswer['body'];
  assertTooComplex({ status: res.status, body }, 'aliases');
  assert.deepEqual(body.errors![0]!.extensions, viaMain.body.errors![0]!.extensions);
  // Introspection follows the same setting there: a credential is needed.
  const introspection = await fetch(subgraph.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ __schema { queryType { name } } }' }) });
  assert.equal(introspection.status, 401);
});

async function defaults() {
  return loadKernelConfig({}).graphql;
}

async function listening(t: TestContext, config: Parameters<typeof build>[1]) {
  const cleanups: (() => unknown)[] = [];
  const app = await build({ after: (fn: () => unknown) => cleanups.push(fn) }, config);
  t.after(async () => {
    for (const fn of cleanups) await fn();
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, url: `ws://127.0.0.1:${(app.server.address() as AddressInfo).port}/graphql` };
}
