import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config';
import { boot, inContext, type Atrium } from '../src/boot';
import { currentEm } from '../src/db/unit-of-work';
import { serveSubgraph } from '../subgraphs/serve';

const PASSWORD = 'correct-horse-battery-staple';
const meta = { requestId: 'test', ip: '127.0.0.1', userAgent: null };

/** Serving options over a booted process (every domain, as the main server). */
const served = (atrium: Atrium) => ({
  host: '127.0.0.1',
  port: 0,
  orm: atrium.kernel.orm,
  budgets: atrium.kernel.budgets,
  limits: atrium.kernel.config.graphql,
  trustProxy: false,
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

test('a standalone subgraph refuses anonymous entity lookups', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-subgraph-'));
  const services = await boot(loadConfig({ DATA_DIR: dir, SCRYPT_COST: '1024' }, {}));
  const identity = await serveSubgraph('identity', served(services));
  t.after(async () => {
    await identity.stop();
    await services.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const { company } = await inContext(services.kernel.orm, () =>
    services.domains.identity.accounts.createCompanyWithOwner({ email: 'a@acme.test', password: PASSWORD, company: 'Acme' }),
  );
  const res = await fetch(identity.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      query: `{ _entities(representations: [{ __typename: "Company", id: "${company.id}" }]) { ... on Company { name } } }`,
    }),
  });
  assert.deepEqual(await res.json(), { data: { _entities: [null] } });
});
