import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { build, login, PASSWORD, seedOwner, sql } from './helper';
import { inContext } from '../src/boot';
import type { SecurityPolicyPatch } from '../src/domains/identity';
import { serveSubgraph } from '../subgraphs/serve';

/**
 * The policy layer runs for a standalone subgraph exactly as for /graphql:
 * the same operation gets the same HTTP status, code and data either way.
 */

interface Answer {
  status: number;
  code?: string;
  data: unknown;
  retryAfter: string | null;
}

async function viaGraphql(app: FastifyInstance, query: string, token?: string): Promise<Answer> {
  const res = await app.inject({
    method: 'POST',
    url: '/graphql',
    payload: { query },
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  const body = res.json() as { data?: unknown; errors?: { extensions: { code: string } }[] };
  const retryAfter = res.headers['retry-after'];
  return { status: res.statusCode, code: body.errors?.[0]?.extensions.code, data: body.data ?? null, retryAfter: retryAfter === undefined ? null : String(retryAfter) };
}

async function viaSubgraph(url: string, query: string, token?: string): Promise<Answer> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ query }),
  });
  const body = (await res.json()) as { data?: unknown; errors?: { extensions: { code: string } }[] };
  return { status: res.status, code: body.errors?.[0]?.extensions.code, data: body.data ?? null, retryAfter: res.headers.get('retry-after') };
}

/** An app and the identity subgraph served alone over its own domains (own budgets, same rules). */
async function appWithSubgraph(t: TestContext, config: Parameters<typeof build>[1] = {}) {
  const main = await build(t, config);
  const other = await build(t, config);
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
  return { main, other, url: subgraph.url };
}

/** Sets the company policy as its owner would, from an address inside the allow-list being set. */
async function setPolicy(app: FastifyInstance, token: string, patch: SecurityPolicyPatch) {
  const principal = await inContext(app.kernel.orm, () => app.domains.identity.auth.authenticate(token));
  await inContext(app.kernel.orm, () =>
    app.domains.identity.policyAdmin.update(principal, patch, { requestId: 'test', ip: '203.0.113.5', userAgent: null }),
  );
}

const TIGHT_AUTH = { rateLimit: { windowSeconds: 60, authenticated: 1000, moduleKey: 10_000, anonymous: 1000, auth: 2, feedback: 1000 } };

test('a standalone subgraph answers rate_limited (429, nothing run) as /graphql does', async (t) => {
  const { main, other, url } = await appWithSubgraph(t, TIGHT_AUTH);
  const a = await seedOwner(main, 'limited@example.com');
  await seedOwner(other, 'limited@example.com');
  const loginOp = `mutation { login(input: { email: "${a.email}", password: "${PASSWORD}" }) { accessToken } }`;
  const answers: Answer[][] = [[], []];
  for (let i = 0; i < 3; i++) {
    answers[0]!.push(await viaGraphql(main, loginOp));
    answers[1]!.push(await viaSubgraph(url, loginOp));
  }
  const [graphql, subgraph] = answers as [Answer[], Answer[]];
  assert.equal(graphql[0]!.status, 200);
  assert.equal(subgraph[0]!.status, 200);
  assert.deepEqual(
    { status: subgraph[2]!.status, code: subgraph[2]!.code, data: subgraph[2]!.data },
    { status: graphql[2]!.status, code: graphql[2]!.code, data: graphql[2]!.data },
  );
  assert.equal(subgraph[2]!.status, 429);
  assert.equal(subgraph[2]!.code, 'rate_limited');
  assert.ok(Number(subgraph[2]!.retryAfter) >= 1, 'Retry-After on the subgraph refusal');
  // The refused login ran on neither: two sessions each.
  for (const app of [main, other]) {
    const [{ n }] = await sql<{ n: number }>(app, "select count(*) as n from audit_events where action = 'auth.login'");
    assert.equal(Number(n), 2);
  }
});

test('a standalone subgraph answers ip_not_allowed as /graphql does', async (t) => {
  const { main, other, url } = await appWithSubgraph(t);
  const tokens: string[] = [];
  for (const app of [main, other]) {
    const owner = await seedOwner(app);
    const token = (await login(app, owner.email)).access_token;
    tokens.push(token);
    // Only a documentation network may call; every test request comes from loopback.
    await setPolicy(app, token, { ipAllowlist: ['203.0.113.0/24'] });
  }
  const query = '{ me { role } }';
  const graphql = await viaGraphql(main, query, tokens[0]);
  const subgraph = await viaSubgraph(url, query, tokens[1]);
  assert.equal(graphql.code, 'ip_not_allowed');
  assert.deepEqual(subgraph, graphql);
});

test('a standalone subgraph answers mfa_enrollment_required as /graphql does, and lets enrolment fields through', async (t) => {
  const { main, other, url } = await appWithSubgraph(t);
  const tokens: string[] = [];
  for (const app of [main, other]) {
    const owner = await seedOwner(app);
    const token = (await login(app, owner.email)).access_token;
    tokens.push(token);
    await setPolicy(app, token, { mfaRequired: true });
  }
  const refused = '{ mySessions { total } }';
  const graphql = await viaGraphql(main, refused, tokens[0]);
  const subgraph = await viaSubgraph(url, refused, tokens[1]);
  assert.equal(graphql.code, 'mfa_enrollment_required');
  assert.deepEqual(subgraph, graphql);

  const allowed = '{ me { role } }';
  const graphqlMe = await viaGraphql(main, allowed, tokens[0]);
  const subgraphMe = await viaSubgraph(url, allowed, tokens[1]);
  assert.deepEqual(graphqlMe.data, { me: { role: 'OWNER' } });
  assert.deepEqual(subgraphMe, graphqlMe);
});

/** The same raw request to /graphql and to the subgraph: status and first error code of each. */
async function bothAnswer(
  main: FastifyInstance,
  url: string,
  request: { method: 'GET' | 'POST'; query?: Record<string, string>; body?: Buffer | string; token?: string; headers?: Record<string, string> },
) {
  const headers: Record<string, string> = {
    ...(request.body !== undefined ? { 'content-type': 'application/json' } : {}),
    ...(request.token ? { authorization: `Bearer ${request.token}` } : {}),
    ...request.headers,
  };
  const search = request.query ? `?${new URLSearchParams(request.query)}` : '';
  const viaMain = await main.inject({ method: request.method, url: `/graphql${search}`, headers, ...(request.body !== undefined ? { payload: request.body } : {}) });
  // Apollo asks a GET for a preflight header (its CSRF rule); a gateway sends one.
  const viaSub = await fetch(`${url}${search}`, { method: request.method, headers: { ...headers, 'apollo-require-preflight': '1' }, ...(request.body !== undefined ? { body: request.body } : {}) });
  const subBody = (await viaSub.json()) as { errors?: { extensions: { code: string } }[] };
  return {
    main: { status: viaMain.statusCode, code: (viaMain.json() as typeof subBody).errors?.[0]?.extensions.code },
    subgraph: { status: viaSub.status, code: subBody.errors?.[0]?.extensions.code },
  };
}

test('a standalone subgraph refuses what /graphql refuses with the same status and code: GET mutations, subscriptions, bodies that are not UTF-8 JSON or come in a content coding', async (t) => {
  const { main, other, url } = await appWithSubgraph(t);
  await seedOwner(main, 'refusals@example.com');
  await seedOwner(other, 'refusals@example.com');
  const token = (await login(main, 'refusals@example.com')).access_token;
  const otherToken = (await login(other, 'refusals@example.com')).access_token;
  const cases = [
    { what: 'a mutation over GET', request: { method: 'GET' as const, query: { query: 'mutation { logout }' } }, status: 405, code: 'method_not_allowed' },
    { what: 'a subscription over HTTP', request: { method: 'POST' as const, body: JSON.stringify({ query: 'subscription { auditEvents { action } }' }) }, status: 400, code: 'bad_request' },
    { what: 'invalid UTF-8', request: { method: 'POST' as const, body: Buffer.concat([Buffer.from('{"query":"{ me { role } }","x":"'), Buffer.from([0xff]), Buffer.from('"}')]) }, status: 400, code: 'malformed_json' },
    { what: 'a __proto__ key', request: { method: 'POST' as const, body: '{"query":"{ me { role } }","__proto__":{"x":1}}' }, status: 400, code: 'malformed_json' },
    {
      what: 'a body in a content coding',
      request: { method: 'POST' as const, body: '{"query":"{ me { role } }"}', headers: { 'content-encoding': 'br' } },
      status: 415,
      code: 'unsupported_media_type',
    },
  ];
  for (const { what, request, status, code } of cases) {
    const answers = await bothAnswer(main, url, { ...request, token });
    assert.deepEqual(answers.main, { status, code }, `/graphql, ${what}`);
    const again = await bothAnswer(other, url, { ...request, token: otherToken });
    assert.deepEqual(again.subgraph, { status, code }, `the subgraph, ${what}`);
  }
});

test('a standalone subgraph with introspection off answers 403 introspection_disabled, as /graphql does', async (t) => {
  const main = await build(t);
  const limits = { ...main.kernel.config.graphql, introspection: 'off' as const };
  const { main: off, url } = await appWithSubgraph(t, { graphql: limits });
  await seedOwner(off, 'introspect@example.com');
  const token = (await login(off, 'introspect@example.com')).access_token;
  for (const query of ['{ __schema { queryType { name } } }', '{ __type(name: "Query") { name } }']) {
    const answers = await bothAnswer(off, url, { method: 'POST', body: JSON.stringify({ query }), token });
    assert.deepEqual(answers.main, { status: 403, code: 'introspection_disabled' }, query);
    assert.deepEqual(answers.subgraph, { status: 403, code: 'introspection_disabled' }, query);
  }
});

test('a standalone subgraph sends the rate-limit headers on every answer, as /graphql does', async (t) => {
  const { other, url } = await appWithSubgraph(t);
  await seedOwner(other, 'headers@example.com');
  const token = (await login(other, 'headers@example.com')).access_token;
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ query: '{ me { role } }' }) });
  assert.equal(res.status, 200, await res.clone().text());
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit-policy', 'ratelimit']) {
    assert.ok(res.headers.get(name), `${name} is sent`);
  }
});
