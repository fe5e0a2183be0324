import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { bearer, build, createCompanyKey, login, PASSWORD, seedOwner, sql } from './helper';
import { hashPassword } from '../src/auth/password';
import { Company } from '../src/domains/identity/company.entity';
import { User } from '../src/domains/identity/user.entity';
import { inContext } from '../src/boot';
import { loadConnectorsConfig, type ConnectorsConfig } from '../src/domains/connectors/config';
import { loadKernelConfig } from '../src/kernel/config';

const BASE = '/v1/admin/connectors';
const SECRET = 'GOCSPX-very-secret-value-123';

async function seedUser(app: FastifyInstance, companyId: string, role: 'member' | 'admin') {
  const email = `${role}-${Math.random().toString(36).slice(2)}@example.com`;
  await inContext(app.kernel.orm, async () => {
    const em = app.kernel.orm.em.fork();
    em.create(User, { company: em.getReference(Company, companyId), email, role, passwordHash: await hashPassword(PASSWORD, 1024) });
    await em.flush();
  });
  return (await login(app, email)).access_token;
}

const patch = (app: FastifyInstance, token: string, name: string, payload: Record<string, unknown>, query = '') =>
  app.inject({ method: 'PATCH', url: `${BASE}/${name}${query}`, headers: bearer(token), payload });

async function gql(app: FastifyInstance, token: string, query: string, variables: Record<string, unknown> = {}) {
  const res = await app.inject({ method: 'POST', url: '/graphql', headers: bearer(token), payload: { query, variables } });
  return res.json() as { data: Record<string, unknown> | null; errors?: { extensions: { code: string } }[] };
}

/** A token endpoint on 127.0.0.1 that records what it was sent. */
async function tokenServer(t: { after: (fn: () => unknown) => void }) {
  const seen: { method: string; url: string; body: string }[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, body });
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end('{"error":"invalid_request"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  const port = (server.address() as AddressInfo).port;
  return { seen, port };
}

const loopbackConfig = (port: number, allowLoopback: boolean): ConnectorsConfig => ({
  googleTokenUrl: `http://127.0.0.1:${port}/token`,
  microsoftTokenUrl: `http://127.0.0.1:${port}/{tenant}/oauth2/v2.0/token`,
  allowLoopback,
  testTimeoutMs: 2000,
});

test('GET lists both connectors with the defaults; PATCH sets fields, seals the secret and never returns it; audited', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);

  const initial = await app.inject({ url: BASE, headers: bearer(token) });
  assert.equal(initial.statusCode, 200, initial.body);
  const defaults = { enabled: false, client_id: null, client_secret_set: false, tenant: null, sync_interval_minutes: 60, updated_at: null, updated_by: null };
  assert.deepEqual(initial.json(), [
    { company_id: owner.companyId, name: 'google_drive', ...defaults },
    { company_id: owner.companyId, name: 'onedrive', ...defaults },
  ]);
  // The same under /api/v1.
  assert.deepEqual((await app.inject({ url: '/api/v1/admin/connectors', headers: bearer(token) })).json(), initial.json());

  const set = await patch(app, token, 'google_drive', { client_id: 'client-1.apps.googleusercontent.com', client_secret: SECRET, sync_interval_minutes: 30 });
  assert.equal(set.statusCode, 200, set.body);
  assert.equal(set.json().client_id, 'client-1.apps.googleusercontent.com');
  assert.equal(set.json().client_secret_set, true);
  assert.equal(set.json().enabled, false);
  assert.equal(set.json().sync_interval_minutes, 30);
  assert.equal(set.json().updated_by, owner.userId);
  assert.ok(set.json().updated_at);
  assert.ok(!('client_secret' in set.json()));
  assert.ok(!set.body.includes(SECRET));

  const enabled = await patch(app, token, 'google_drive', { enabled: true });
  assert.equal(enabled.statusCode, 200, enabled.body);
  assert.equal(enabled.json().enabled, true);

  // Stored sealed, bound to its company and connector.
  const [row] = await sql<{ client_secret_sealed: string; company_id: string }>(app, "select * from connector_configs where name = 'google_drive'");
  assert.match(row!.client_secret_sealed, /^v1:/);
  assert.ok(!row!.client_secret_sealed.includes(SECRET));
  assert.equal(app.kernel.secretBox.openString(row!.client_secret_sealed, `connector:${owner.companyId}:google_drive`), SECRET);
  assert.throws(() => app.kernel.secretBox.open(row!.client_secret_sealed, `connector:${owner.companyId}:onedrive`));

  const listed = await app.inject({ url: BASE, headers: bearer(token) });
  assert.ok(!listed.body.includes(SECRET));
  assert.equal(listed.json()[0].client_secret_set, true);
  assert.equal(listed.json()[1].enabled, false);

  // onedrive with a tenant.
  const od = await patch(app, token, 'onedrive', { client_id: 'abc', client_secret: 'od-secret', tenant: 'Contoso.onmicrosoft.com', enabled: true });
  assert.equal(od.statusCode, 200, od.body);
  assert.equal(od.json().tenant, 'contoso.onmicrosoft.com');
  assert.equal(od.json().enabled, true);

  // Audit: changed field names, never the secret.
  const audits = await sql<{ action: string; data: string; target_id: string }>(
    app,
    "select action, data, target_id from audit_events where action like 'connector.%' order by created_at, rowid",
  );
  assert.deepEqual(audits.map((a) => [a.action, a.target_id]), [
    ['connector.updated', 'google_drive'],
    ['connector.updated', 'google_drive'],
    ['connector.updated', 'onedrive'],
  ]);
  assert.deepEqual(JSON.parse(audits[0]!.data).fields.sort(), ['client_id', 'client_secret', 'sync_interval_minutes']);
  assert.deepEqual(JSON.parse(audits[1]!.data).fields, ['enabled']);
  for (const a of audits) assert.ok(!a.data.includes(SECRET) && !a.data.includes('od-secret'));

  // Setting the same secret again is no change (nothing audited); clearing it while enabled is refused.
  const same = await patch(app, token, 'google_drive', { client_secret: SECRET });
  assert.equal(same.statusCode, 200);
  assert.equal((await sql(app, "select 1 from audit_events where action = 'connector.updated'")).length, 3);
  const cleared = await patch(app, token, 'google_drive', { client_secret: null });
  assert.equal(cleared.statusCode, 422, cleared.body);
  const off = await patch(app, token, 'google_drive', { enabled: false, client_secret: null });
  assert.equal(off.statusCode, 200, off.body);
  assert.equal(off.json().client_secret_set, false);
  const [after] = await sql<{ client_secret_sealed: string | null }>(app, "select client_secret_sealed from connector_configs where name = 'google_drive'");
  assert.equal(after!.client_secret_sealed, null);
});

test('validation: unknown fields, unknown connector, enabling incomplete, tenant on google_drive, interval bounds', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);

  const unknownField = await patch(app, token, 'google_drive', { client_id: 'x', scope: 'drive' });
  assert.equal(unknownField.statusCode, 422, unknownField.body);
  const unknownConnector = await patch(app, token, 'dropbox', { enabled: false });
  assert.equal(unknownConnector.statusCode, 404, unknownConnector.body);
  assert.equal(unknownConnector.json().code, 'not_found');
  assert.equal((await app.inject({ method: 'POST', url: `${BASE}/dropbox/test`, headers: bearer(token) })).statusCode, 404);

  const noSecret = await patch(app, token, 'google_drive', { enabled: true, client_id: 'x' });
  assert.equal(noSecret.statusCode, 422, noSecret.body);
  assert.deepEqual(noSecret.json().errors.map((e: { loc: string[] }) => e.loc.join('.')), ['body.client_secret']);
  const nothing = await patch(app, token, 'onedrive', { enabled: true });
  assert.equal(nothing.statusCode, 422);
  assert.deepEqual(nothing.json().errors.map((e: { loc: string[] }) => e.loc.join('.')), ['body.client_id', 'body.client_secret']);

  assert.equal((await patch(app, token, 'google_drive', { tenant: 'common' })).statusCode, 422);
  assert.equal((await patch(app, token, 'onedrive', { tenant: '../../evil?x=' })).statusCode, 422);
  assert.equal((await patch(app, token, 'onedrive', { tenant: 'a/b' })).statusCode, 422);
  for (const value of [14, 1441, 60.5, null, '60']) {
    assert.equal((await patch(app, token, 'onedrive', { sync_interval_minutes: value })).statusCode, 422, String(value));
  }
  assert.equal((await patch(app, token, 'onedrive', { sync_interval_minutes: 15 })).statusCode, 200);
  assert.equal((await patch(app, token, 'onedrive', { sync_interval_minutes: 1440 })).statusCode, 200);
  assert.equal((await patch(app, token, 'onedrive', { client_id: '   ' })).statusCode, 422);
  assert.equal((await patch(app, token, 'onedrive', { client_secret: '' })).statusCode, 422);
  assert.equal((await patch(app, token, 'onedrive', { client_id: 'a\nb' })).statusCode, 422);
  // Nothing invalid was stored.
  assert.deepEqual((await sql<{ name: string; sync_interval_minutes: number }>(app, 'select name, sync_interval_minutes from connector_configs')), [
    { name: 'onedrive', sync_interval_minutes: 1440 },
  ]);
});

test('roles: owner, admin and company key may; a member is 403; another company only for a superadmin (anyone else: 404)', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const other = await seedOwner(app, undefined, 'Other Co');
  const { access_token: ownerToken } = await login(app, owner.email);
  const { access_token: otherToken } = await login(app, other.email);
  const adminToken = await seedUser(app, owner.companyId, 'admin');
  const memberToken = await seedUser(app, owner.companyId, 'member');
  const { key } = await createCompanyKey(app, owner.companyId);

  assert.equal((await app.inject({ url: BASE })).statusCode, 401);
  for (const token of [ownerToken, adminToken, key]) {
    assert.equal((await app.inject({ url: BASE, headers: bearer(token) })).statusCode, 200);
  }
  assert.equal((await patch(app, key, 'onedrive', { client_id: 'by-key' })).json().updated_by?.length > 0, true);
  assert.equal((await app.inject({ url: BASE, headers: bearer(memberToken) })).statusCode, 403);
  assert.equal((await patch(app, memberToken, 'onedrive', { client_id: 'x' })).statusCode, 403);
  assert.equal((await app.inject({ method: 'POST', url: `${BASE}/onedrive/test`, headers: bearer(memberToken) })).statusCode, 403);

  // The other company sees its own (unconfigured) connectors, and cannot name ours.
  const theirs = await app.inject({ url: BASE, headers: bearer(otherToken) });
  assert.equal(theirs.json()[1].client_id, null);
  assert.equal(theirs.json()[1].company_id, other.companyId);
  assert.equal((await app.inject({ url: `${BASE}?company_id=${owner.companyId}`, headers: bearer(otherToken) })).statusCode, 404);
  assert.equal((await patch(app, otherToken, 'onedrive', { client_id: 'hijack' }, `?company_id=${owner.companyId}`)).statusCode, 404);
  assert.equal(
    (await app.inject({ method: 'POST', url: `${BASE}/onedrive/test?company_id=${owner.companyId}`, headers: bearer(otherToken) })).statusCode,
    404,
  );

  // A superadmin acts in any company.
  await inContext(app.kernel.orm, () =>
    app.domains.identity.accounts.createCompanyWithOwner({ email: 'ops@example.com', password: PASSWORD, company: 'Platform', superadmin: true }),
  );
  const { access_token: superToken } = await login(app, 'ops@example.com');
  const asSuper = await app.inject({ url: `${BASE}?company_id=${owner.companyId}`, headers: bearer(superToken) });
  assert.equal(asSuper.statusCode, 200);
  assert.equal(asSuper.json()[1].client_id, 'by-key');
  const superPatch = await patch(app, superToken, 'google_drive', { sync_interval_minutes: 120 }, `?company_id=${other.companyId}`);
  assert.equal(superPatch.statusCode, 200, superPatch.body);
  assert.equal(superPatch.json().company_id, other.companyId);
  assert.equal((await app.inject({ url: `${BASE}?company_id=00000000-0000-4000-8000-000000000000`, headers: bearer(superToken) })).statusCode, 404);
});

test('test: incomplete configuration fails without a request; complete reaches the token endpoint (loopback, test switch on)', async (t) => {
  const server = await tokenServer(t);
  const app = await build(t, { connectors: loopbackConfig(server.port, true) });
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  const run = (name: string) => app.inject({ method: 'POST', url: `${BASE}/${name}/test`, headers: bearer(token) });

  const incomplete = await run('google_drive');
  assert.equal(incomplete.statusCode, 200, incomplete.body);
  assert.equal(incomplete.json().ok, false);
  assert.deepEqual(incomplete.json().checks.map((c: { name: string; ok: boolean }) => [c.name, c.ok]), [
    ['configuration', false],
    ['token_endpoint', false],
  ]);
  assert.equal(server.seen.length, 0, 'no request for an incomplete configuration');

  await patch(app, token, 'google_drive', { client_id: 'cid', client_secret: SECRET });
  const complete = await run('google_drive');
  assert.equal(complete.statusCode, 200, complete.body);
  assert.equal(complete.json().ok, true, complete.body);
  assert.deepEqual(complete.json().checks.map((c: { name: string; ok: boolean }) => [c.name, c.ok]), [
    ['configuration', true],
    ['client_secret', true],
    ['token_endpoint', true],
  ]);
  assert.match(complete.json().checks[2].detail, /HTTP 400/);
  assert.equal(server.seen.length, 1);
  assert.equal(server.seen[0]!.url, '/token');
  assert.ok(!server.seen[0]!.body.includes(SECRET), 'no credentials are sent');

  // onedrive: the tenant goes into the template; `common` without one.
  await patch(app, token, 'onedrive', { client_id: 'cid', client_secret: 'x' });
  assert.equal((await run('onedrive')).json().ok, true);
  await patch(app, token, 'onedrive', { tenant: 'contoso.onmicrosoft.com' });
  assert.equal((await run('onedrive')).json().ok, true);
  assert.deepEqual(server.seen.slice(1).map((s) => s.url), ['/common/oauth2/v2.0/token', '/contoso.onmicrosoft.com/oauth2/v2.0/token']);

  // GraphQL alike.
  const viaGql = await gql(app, token, 'mutation { testConnector(name: "google_drive") { name ok checks { name ok detail } } }');
  assert.equal((viaGql.data!.testConnector as { ok: boolean }).ok, true);

  const audits = await sql<{ data: string }>(app, "select data from audit_events where action = 'connector.tested' order by created_at, rowid");
  assert.equal(audits.length, 5);
  assert.deepEqual(JSON.parse(audits[0]!.data), {
    connector: 'google_drive',
    ok: false,
    checks: [
      { name: 'configuration', ok: false },
      { name: 'token_endpoint', ok: false },
    ],
  });
});

test('test: without the test switch the guard refuses the loopback endpoint and nothing is sent; unreachable is a failed check', async (t) => {
  const server = await tokenServer(t);
  const app = await build(t, { connectors: loopbackConfig(server.port, false) });
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  await patch(app, token, 'google_drive', { client_id: 'cid', client_secret: SECRET });
  const res = await app.inject({ method: 'POST', url: `${BASE}/google_drive/test`, headers: bearer(token) });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().ok, false);
  const endpoint = res.json().checks.find((c: { name: string }) => c.name === 'token_endpoint');
  assert.equal(endpoint.ok, false);
  assert.match(endpoint.detail, /^refused: /);
  assert.deepEqual(server.seen, []);

  // With the switch on but nobody listening: a failed check, not an HTTP error.
  const closed = await build(t, { connectors: { ...loopbackConfig(1, true) } });
  const owner2 = await seedOwner(closed);
  const { access_token: token2 } = await login(closed, owner2.email);
  await patch(closed, token2, 'google_drive', { client_id: 'cid', client_secret: SECRET });
  const unreachable = await closed.inject({ method: 'POST', url: `${BASE}/google_drive/test`, headers: bearer(token2) });
  assert.equal(unreachable.statusCode, 200);
  assert.equal(unreachable.json().ok, false);
  assert.match(unreachable.json().checks[2].detail, /not reachable/);
});

test('settings: SSRF_ALLOW_LOOPBACK, or its old name CONNECTOR_ALLOW_LOOPBACK, turns the loopback switch on for the kernel and the connectors alike', () => {
  const cases: [Record<string, string>, boolean][] = [
    [{}, false],
    [{ SSRF_ALLOW_LOOPBACK: 'true' }, true],
    [{ CONNECTOR_ALLOW_LOOPBACK: 'true' }, true],
    [{ SSRF_ALLOW_LOOPBACK: 'false', CONNECTOR_ALLOW_LOOPBACK: '1' }, true],
    [{ SSRF_ALLOW_LOOPBACK: 'off', CONNECTOR_ALLOW_LOOPBACK: 'no' }, false],
  ];
  for (const [env, expected] of cases) {
    assert.equal(loadKernelConfig(env).ssrfAllowLoopback, expected, JSON.stringify(env));
    assert.equal(loadConnectorsConfig(env).allowLoopback, expected, JSON.stringify(env));
  }
  assert.throws(() => loadConnectorsConfig({ SSRF_ALLOW_LOOPBACK: 'maybe' }), /SSRF_ALLOW_LOOPBACK must be true or false/);
});

test('GraphQL: connectors, updateConnector and testConnector; the secret is not a field', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  const updated = await gql(
    app,
    token,
    'mutation($input: ConnectorInput!) { updateConnector(name: "onedrive", input: $input) { name enabled clientId clientSecretSet tenant syncIntervalMinutes } }',
    { input: { clientId: 'gql-client', clientSecret: SECRET, enabled: true, tenant: 'organizations' } },
  );
  assert.deepEqual(updated.errors, undefined);
  assert.deepEqual(updated.data!.updateConnector, {
    name: 'onedrive',
    enabled: true,
    clientId: 'gql-client',
    clientSecretSet: true,
    tenant: 'organizations',
    syncIntervalMinutes: 60,
  });
  const listed = await gql(app, token, '{ connectors { name enabled clientSecretSet } }');
  assert.deepEqual(listed.data!.connectors, [
    { name: 'google_drive', enabled: false, clientSecretSet: false },
    { name: 'onedrive', enabled: true, clientSecretSet: true },
  ]);
  const noSecretField = await gql(app, token, '{ connectors { clientSecret } }');
  assert.ok(noSecretField.errors?.length);
  const unknown = await gql(app, token, 'mutation { updateConnector(name: "box", input: { enabled: false }) { name } }');
  assert.equal(unknown.errors![0]!.extensions.code, 'not_found');
  const invalid = await gql(app, token, 'mutation { updateConnector(name: "google_drive", input: { enabled: true }) { name } }');
  assert.equal(invalid.errors![0]!.extensions.code, 'validation_error');
  const memberToken = await seedUser(app, owner.companyId, 'member');
  assert.equal((await gql(app, memberToken, '{ connectors { name } }')).errors![0]!.extensions.code, 'forbidden');
});
