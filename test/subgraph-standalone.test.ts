import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { loadConfig, loadSubgraphConfig } from '../src/config';
import { buildApp } from '../src/app';
import { boot, inContext, type Atrium } from '../src/boot';
import { currentEm } from '../src/db/unit-of-work';
import { serveSubgraph } from '../subgraphs/serve';
import { MAX_REPRESENTATIONS } from '../subgraphs/build-subgraph';
import { hashPassword } from '../src/auth/password';
import { Company } from '../src/domains/identity/company.entity';
import { User } from '../src/domains/identity/user.entity';

const PASSWORD = 'correct-horse-battery-staple';
const meta = { requestId: 'test', ip: '127.0.0.1', userAgent: null };

/** Serving options over a booted process (every domain, as the main server). */
const served = (atrium: Atrium) => ({
  host: '127.0.0.1',
  port: 0,
  orm: atrium.kernel.orm,
  budgets: atrium.kernel.budgets,
  limits: atrium.kernel.config.graphql,
  trustProxy: false as const,
  bodyLimitBytes: atrium.kernel.config.bodyLimitBytes,
  domains: atrium.domains,
});

async function gql(url: string, token: string, query: string, variables?: Record<string, unknown>) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  assert.equal(res.status, 200);
  return (await res.json()) as { data?: Record<string, unknown>; errors?: unknown[] };
}

test('identity and billing subgraphs served alone answer _service and _entities', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-subgraph-'));
  const services = await boot(loadConfig({ DATA_DIR: dir, SCRYPT_COST: '1024' }, {}));
  const identity = await serveSubgraph('identity', served(services));
  const billing = await serveSubgraph('billing', served(services));
  t.after(async () => {
    await identity.stop();
    await billing.stop();
    await services.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const { mine, other, token } = await inContext(services.kernel.orm, async () => {
    const a = await services.domains.identity.accounts.createCompanyWithOwner({ email: 'a@acme.test', password: PASSWORD, company: 'Acme' });
    const b = await services.domains.identity.accounts.createCompanyWithOwner({ email: 'b@beta.test', password: PASSWORD, company: 'Beta' });
    const session = await services.domains.identity.auth.login({ email: 'a@acme.test', password: PASSWORD }, meta);
    return { mine: a.company.id, other: b.company.id, token: session.accessToken };
  });

  const sdl = await gql(identity.url, token, '{ _service { sdl } }');
  const text = (sdl.data?._service as { sdl: string }).sdl;
  assert.match(text, /type Company/);
  assert.ok(text.includes('@key(fields: "id")'));

  // Every service call during a request runs in that request's unit of work.
  const seen: unknown[] = [];
  const companiesByIds = services.domains.identity.accounts.companiesByIds.bind(services.domains.identity.accounts);
  services.domains.identity.accounts.companiesByIds = (ids) => {
    // Inside a unit of work currentEm answers the same fork every time; outside, a new one.
    const em = currentEm(services.kernel.orm);
    seen.push(em === currentEm(services.kernel.orm) ? em : undefined);
    return companiesByIds(ids);
  };
  t.after(() => {
    services.domains.identity.accounts.companiesByIds = companiesByIds;
  });

  const entities = `query ($reps: [_Any!]!) { _entities(representations: $reps) { ... on Company { id name } } }`;
  const own = await gql(identity.url, token, entities, { reps: [{ __typename: 'Company', id: mine }] });
  assert.deepEqual(own, { data: { _entities: [{ id: mine, name: 'Acme' }] } });

  const foreign = await gql(identity.url, token, entities, { reps: [{ __typename: 'Company', id: other }] });
  assert.deepEqual(foreign.data, { _entities: [null] });

  // Two requests at once: each gets its own unit of work.
  await Promise.all([1, 2].map(() => gql(identity.url, token, entities, { reps: [{ __typename: 'Company', id: mine }] })));
  assert.equal(seen.length, 3);
  assert.ok(seen.every(Boolean), 'the reference resolver ran inside a unit of work');
  assert.equal(new Set(seen).size, 3);

  const plan = await gql(
    billing.url,
    token,
    `query ($reps: [_Any!]!) { _entities(representations: $reps) { ... on Company { plan { id } } } }`,
    { reps: [{ __typename: 'Company', id: mine }] },
  );
  assert.deepEqual(plan, { data: { _entities: [{ plan: { id: 'starter' } }] } });
});

test('_entities without a credential answers the same 401 as any field that needs one, on every subgraph with entities', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-subgraph-'));
  const services = await boot(loadConfig({ DATA_DIR: dir, SCRYPT_COST: '1024' }, {}));
  const subgraphs = {
    identity: await serveSubgraph('identity', served(services)),
    billing: await serveSubgraph('billing', served(services)),
    modules: await serveSubgraph('modules', served(services)),
  };
  t.after(async () => {
    for (const subgraph of Object.values(subgraphs)) await subgraph.stop();
    await services.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const { company } = await inContext(services.kernel.orm, () =>
    services.domains.identity.accounts.createCompanyWithOwner({ email: 'a@acme.test', password: PASSWORD, company: 'Acme' }),
  );
  const ask = async (url: string, query: string, authorization?: string) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
      body: JSON.stringify({ query }),
    });
    const body = (await res.json()) as { data?: unknown; errors?: { message: string; extensions: { code: string } }[] };
    return { status: res.status, data: body.data, code: body.errors?.[0]?.extensions.code, message: body.errors?.[0]?.message };
  };
  const entities = `{ _entities(representations: [{ __typename: "Company", id: "${company.id}" }, { __typename: "Company", id: "x" }]) { ... on Company { id } } }`;

  // What a field that needs a credential answers an anonymous caller.
  const me = await ask(subgraphs.identity.url, '{ me { __typename } }');
  assert.equal(me.code, 'unauthenticated');
  for (const [name, subgraph] of Object.entries(subgraphs)) {
    const anonymous = await ask(subgraph.url, entities);
    assert.deepEqual(anonymous, { ...me, data: null }, `${name}: _entities anonymous`);
  }
  // A refused credential gives its reason, as for any guarded field.
  const forged = await ask(subgraphs.identity.url, entities, 'Bearer not-a-token');
  assert.deepEqual(forged, { ...(await ask(subgraphs.identity.url, '{ me { __typename } }', 'Bearer not-a-token')), data: null });
  assert.notEqual(forged.code, 'unauthenticated');
});

test('atrium subgraph accepts the tokens of the server started on the same DATA_DIR with another PORT', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-subgraph-'));
  // The server as `PORT=18999 npm start` configures it: its tokens are issued by http://127.0.0.1:18999.
  const app = await buildApp({ env: { DATA_DIR: dir, SCRYPT_COST: '1024', PORT: '18999' }, logger: false });
  await inContext(app.kernel.orm, () => app.domains.identity.accounts.createCompanyWithOwner({ email: 'a@acme.test', password: PASSWORD, company: 'Acme' }));
  const login = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: 'a@acme.test', password: PASSWORD } });
  const token = (login.json() as { access_token: string }).access_token;

  // Started as the README shows, from a shell that never saw the server's PORT.
  const env: Record<string, string | undefined> = { ...process.env, DATA_DIR: dir, SCRYPT_COST: '1024', LOG_LEVEL: 'silent' };
  for (const name of ['HOST', 'PORT', 'PUBLIC_URL']) delete env[name];
  const child = spawn(process.execPath, [path.resolve(__dirname, '../src/cli.js'), 'subgraph', 'identity', '--port', '0'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  t.after(async () => {
    child.kill('SIGTERM');
    await exited;
    await app.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  let stderr = '';
  const [, url, issuer] = await new Promise<RegExpExecArray>((resolve, reject) => {
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const started = /listening at (\S+), accepting the tokens of (\S+)/.exec(stderr);
      if (started) resolve(started);
    });
    child.once('exit', (code) => reject(new Error(`atrium subgraph exited (${code}):\n${stderr}`)));
  });
  assert.equal(issuer, 'http://127.0.0.1:18999');
  assert.deepEqual(await gql(url!, token, '{ me { __typename } }'), { data: { me: { __typename: 'Viewer' } } });
});

test('a damaged server.json names itself and the two ways out, and PUBLIC_URL still wins over it', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-subgraph-'));
  try {
    for (const text of ['{"public_url": "https://atrium.exa', '[]', '{"public_url": 7}', 'null']) {
      fs.writeFileSync(path.join(dir, 'server.json'), text);
      assert.throws(() => loadSubgraphConfig({}, { DATA_DIR: dir }), (error: Error) => {
        assert.match(error.message, /server\.json does not hold the server's PUBLIC_URL/);
        assert.match(error.message, /start the server once to write it again, or give this process PUBLIC_URL/);
        return true;
      });
      assert.equal(loadSubgraphConfig({}, { DATA_DIR: dir, PUBLIC_URL: 'https://other.example.com' }).publicUrl, 'https://other.example.com');
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a subgraph given its own PUBLIC_URL keeps it; with no server recorded it is HOST:PORT', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-subgraph-'));
  try {
    assert.equal(loadSubgraphConfig({ port: 4001 }, { DATA_DIR: dir }).publicUrl, 'http://127.0.0.1:8080');
    const app = await buildApp({ env: { DATA_DIR: dir, PUBLIC_URL: 'https://atrium.example.com/' }, logger: false });
    await app.close();
    const derived = loadSubgraphConfig({ port: 4001 }, { DATA_DIR: dir });
    assert.deepEqual([derived.publicUrl, derived.docsUrl, derived.port], ['https://atrium.example.com', 'https://atrium.example.com/docs', 4001]);
    assert.equal(loadSubgraphConfig({}, { DATA_DIR: dir, PUBLIC_URL: 'https://other.example.com' }).publicUrl, 'https://other.example.com');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a standalone subgraph bounds what one request may ask: BODY_LIMIT_BYTES (413 unread), entity representations (400), reads batched within SQLite\'s limits; a member resolves no coworker', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-subgraph-'));
  const services = await boot(loadConfig({ DATA_DIR: dir, SCRYPT_COST: '1024', BODY_LIMIT_BYTES: String(256 * 1024) }, {}));
  const identity = await serveSubgraph('identity', served(services));
  t.after(async () => {
    await identity.stop();
    await services.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const { owner, member, ownerToken, memberToken } = await inContext(services.kernel.orm, async () => {
    const { accounts, auth } = services.domains.identity;
    const a = await accounts.createCompanyWithOwner({ email: 'owner@acme.test', password: PASSWORD, company: 'Acme' });
    const em = services.kernel.orm.em.fork();
    const m = em.create(User, { company: em.getReference(Company, a.company.id), email: 'member@acme.test', role: 'member', passwordHash: await hashPassword(PASSWORD, 1024) });
    await em.flush();
    return {
      owner: a.user.id,
      member: m.id,
      ownerToken: (await auth.login({ email: 'owner@acme.test', password: PASSWORD }, meta)).accessToken,
      memberToken: (await auth.login({ email: 'member@acme.test', password: PASSWORD }, meta)).accessToken,
    };
  });

  // Over the limit: refused before it is read, without a credential, as the main server refuses it.
  const big = await fetch(identity.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ __typename }', variables: { pad: 'x'.repeat(300 * 1024) } }),
  });
  assert.equal(big.status, 413);
  assert.equal(((await big.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code, 'payload_too_large');

  const entities = `query ($reps: [_Any!]!) { _entities(representations: $reps) { ... on User { id email } } }`;
  const reps = (n: number) => Array.from({ length: n }, (_, i) => ({ __typename: 'User', id: i === 0 ? owner : `00000000-0000-4000-8000-${String(i).padStart(12, '0')}` }));
  // More keys than one statement binds (MAX_BATCH): read in batches, every unknown id null.
  const many = await gql(identity.url, ownerToken, entities, { reps: reps(1500) });
  assert.equal(many.errors, undefined, JSON.stringify(many.errors?.slice(0, 2)));
  const found = (many.data!._entities as ({ id: string } | null)[]);
  assert.equal(found.length, 1500);
  assert.equal(found[0]!.id, owner);
  assert.ok(found.slice(1).every((e) => e === null));

  const tooMany = await fetch(identity.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ownerToken}` },
    body: JSON.stringify({ query: entities, variables: { reps: reps(MAX_REPRESENTATIONS + 1) } }),
  });
  const refused = (await tooMany.json()) as { errors: { extensions: { code: string; limit: string; max: number } }[] };
  assert.equal(refused.errors[0]!.extensions.code, 'query_too_complex');
  assert.equal(refused.errors[0]!.extensions.limit, 'representations');
  assert.equal(refused.errors[0]!.extensions.max, MAX_REPRESENTATIONS);

  // The bound holds for the operation, aliases of `_entities` together.
  const aliased = await fetch(identity.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ownerToken}` },
    body: JSON.stringify({
      query: `query ($reps: [_Any!]!) { a: _entities(representations: $reps) { ... on User { id } } b: _entities(representations: $reps) { ... on User { id } } }`,
      variables: { reps: reps(1500) },
    }),
  });
  const twice = (await aliased.json()) as { errors: { extensions: { code: string; limit: string } }[] };
  assert.ok(twice.errors.some((e) => e.extensions.code === 'query_too_complex' && e.extensions.limit === 'representations'), JSON.stringify(twice.errors));

  // A representation of no entity type of the subgraph is the client's mistake (400), never a 500.
  for (const odd of [{ __typename: 'Nope', id: 'x' }, { id: 'x' }, { __typename: 5 }]) {
    const res = (await (
      await fetch(identity.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${ownerToken}` },
        body: JSON.stringify({ query: entities, variables: { reps: [odd] } }),
      })
    ).json()) as { errors?: unknown[] };
    const error = res.errors?.[0] as { extensions: { code: string; http: { status: number } } } | undefined;
    assert.equal(error?.extensions.code, 'bad_request', JSON.stringify(res));
    assert.equal(error?.extensions.http.status, 400);
  }

  // A member reads no coworker (as GET /v1/admin/users/{id} refuses them), only themselves.
  const asMember = await gql(identity.url, memberToken, entities, { reps: [{ __typename: 'User', id: owner }, { __typename: 'User', id: member }] });
  assert.deepEqual(asMember.data, { _entities: [null, { id: member, email: 'member@acme.test' }] });
});

test('_entities takes ids as every other field does: an upper-cased UUID names the same entity, a key that is no UUID (or missing, or a number) is 422 validation_error at its path', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-subgraph-'));
  const services = await boot(loadConfig({ DATA_DIR: dir, SCRYPT_COST: '1024' }, {}));
  const identity = await serveSubgraph('identity', served(services));
  const billing = await serveSubgraph('billing', served(services));
  const modules = await serveSubgraph('modules', served(services));
  t.after(async () => {
    for (const subgraph of [identity, billing, modules]) await subgraph.stop();
    await services.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const { company, user, token } = await inContext(services.kernel.orm, async () => {
    const a = await services.domains.identity.accounts.createCompanyWithOwner({ email: 'a@acme.test', password: PASSWORD, company: 'Acme' });
    const session = await services.domains.identity.auth.login({ email: 'a@acme.test', password: PASSWORD }, meta);
    return { company: a.company.id, user: a.user.id, token: session.accessToken };
  });
  const ask = async (url: string, query: string, reps: unknown[]) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, variables: { reps } }),
    });
    return (await res.json()) as { data?: { _entities: unknown[] } | null; errors?: { extensions: { code: string; http: { status: number }; errors?: unknown[] } }[] };
  };
  const identityQuery = 'query ($reps: [_Any!]!) { _entities(representations: $reps) { ... on Company { id name } ... on User { id email } } }';
  const billingQuery = 'query ($reps: [_Any!]!) { _entities(representations: $reps) { ... on Company { id plan { id } } } }';

  // Upper-cased, the caller's own company and user are found, and answered with the ids as stored.
  const upper = await ask(identity.url, identityQuery, [{ __typename: 'Company', id: company.toUpperCase() }, { __typename: 'User', id: user.toUpperCase() }]);
  assert.deepEqual(upper, { data: { _entities: [{ id: company, name: 'Acme' }, { id: user, email: 'a@acme.test' }] } });
  const plan = await ask(billing.url, billingQuery, [{ __typename: 'Company', id: company.toUpperCase() }]);
  assert.deepEqual(plan, { data: { _entities: [{ id: company, plan: { id: 'starter' } }] } });

  // A key that names no row anywhere is refused as adminUser(userId: "nope") is, each at its path.
  const bad = await ask(identity.url, identityQuery, [
    { __typename: 'Company', id: company },
    { __typename: 'Company', id: 'nope' },
    { __typename: 'User' },
    { __typename: 'User', id: 5 },
  ]);
  assert.equal(bad.data?._entities ?? null, null, JSON.stringify(bad));
  const error = bad.errors?.[0];
  assert.equal(error?.extensions.code, 'validation_error', JSON.stringify(bad));
  assert.equal(error?.extensions.http.status, 422);
  assert.deepEqual(
    (error?.extensions.errors as { loc: unknown[]; type: string }[]).map(({ loc, type }) => ({ loc, type })),
    [
      { loc: ['representations', 1, 'id'], type: 'value_error.format' },
      { loc: ['representations', 2, 'id'], type: 'missing' },
      { loc: ['representations', 3, 'id'], type: 'string_type' },
    ],
  );
  assert.equal((await ask(billing.url, billingQuery, [{ __typename: 'Company', id: 'nope' }])).errors?.[0]?.extensions.code, 'validation_error');

  // A key that is not a UUID by its type (a catalog model's id) is taken as it is, but must be a string.
  const modelQuery = 'query ($reps: [_Any!]!) { _entities(representations: $reps) { ... on Model { id } } }';
  const model = await ask(modules.url, modelQuery, [{ __typename: 'Model', id: 'gpt-4o' }]);
  assert.deepEqual(model, { data: { _entities: [{ id: 'gpt-4o' }] } });
  assert.equal((await ask(modules.url, modelQuery, [{ __typename: 'Model', id: 4 }])).errors?.[0]?.extensions.code, 'validation_error');
});
