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
