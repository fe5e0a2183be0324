import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import type { FastifyInstance } from 'fastify';
import { bearer, build, createCompanyKey, login, seedOwner } from './helper';
import { sqlDuring } from './sql-counter';
import { EXTERNAL_WRITES_SEEN_MS } from '../src/db/change-signal';

/**
 * The hot reads (the caller's profile, the company plan) are cached until the
 * database changes. These tests guard the "never stale" half of that promise
 * as much as the "no read" half.
 */

const profile = (app: FastifyInstance, token: string) => app.inject({ method: 'GET', url: '/v1/me/profile', headers: bearer(token) });

const PLAN_QUERY = '{ me { company { plan { id monthlyCredits } } } }';
async function plan(app: FastifyInstance, token: string) {
  const res = await app.inject({ method: 'POST', url: '/graphql', headers: bearer(token), payload: { query: PLAN_QUERY } });
  const body = res.json();
  assert.equal(body.errors, undefined, res.body);
  return body.data.me.company.plan as { id: string; monthlyCredits: number };
}

/** Another process writing the same SQLite file, as `npx atrium …` does while the server runs. */
function otherProcessWrite(app: FastifyInstance, sql: string, ...params: unknown[]) {
  const db = new Database(app.config.databaseFile);
  try {
    db.pragma('busy_timeout = 5000');
    db.prepare(sql).run(...params);
  } finally {
    db.close();
  }
}

test('a repeated profile read is served from the cache: no user or company read', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  // The session's first use writes its "last seen" time, and any write empties the cache; SQLite's
  // data_version shows that write again up to EXTERNAL_WRITES_SEEN_MS later, so the warm-up read waits it out.
  assert.equal((await profile(app, access_token)).statusCode, 200);
  await new Promise((resolve) => setTimeout(resolve, EXTERNAL_WRITES_SEEN_MS + 20));
  assert.equal((await profile(app, access_token)).statusCode, 200);
  const seen = await sqlDuring(async () => assert.equal((await profile(app, access_token)).statusCode, 200));
  assert.deepEqual(
    seen.filter((sql) => /\b(users|companies|plans)\b/.test(sql)),
    [],
    `the second read went to the tables:\n${seen.join('\n')}`,
  );
});

test("the caller's own profile change shows in the next read at once", async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  assert.equal((await profile(app, access_token)).json().name, null);
  const patched = await app.inject({ method: 'PATCH', url: '/v1/me/profile', headers: bearer(access_token), payload: { name: 'Ada' } });
  assert.equal(patched.statusCode, 200, patched.body);
  assert.equal((await profile(app, access_token)).json().name, 'Ada');
});

test(`another process's write to the database shows within ${EXTERNAL_WRITES_SEEN_MS} ms`, async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  const settle = () => new Promise((resolve) => setTimeout(resolve, EXTERNAL_WRITES_SEEN_MS + 20));
  assert.equal((await profile(app, access_token)).json().name, null);
  otherProcessWrite(app, 'update users set name = ? where id = ?', 'Grace', owner.userId);
  await settle();
  assert.equal((await profile(app, access_token)).json().name, 'Grace');

  assert.equal((await plan(app, access_token)).id, 'starter');
  otherProcessWrite(app, 'update companies set plan_id = ? where id = ?', 'professional', owner.companyId);
  await settle();
  assert.deepEqual(await plan(app, access_token), { id: 'professional', monthlyCredits: 6000 });
});

test("a superadmin's plan change shows in the company's next read at once", async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const root = await seedOwner(app, undefined, 'Platform');
  otherProcessWrite(app, 'update users set is_superadmin = 1 where id = ?', root.userId);
  const { access_token } = await login(app, owner.email);
  const { access_token: rootToken } = await login(app, root.email);
  assert.equal((await plan(app, access_token)).id, 'starter');
  const res = await app.inject({
    method: 'PATCH',
    url: `/v1/admin/companies/${owner.companyId}`,
    headers: bearer(rootToken),
    payload: { plan_id: 'professional' },
  });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal((await plan(app, access_token)).id, 'professional');
});

test('a revoked company key is refused at once, though its profile was cached', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { key, id } = await createCompanyKey(app, owner.companyId);
  const { access_token } = await login(app, owner.email);
  assert.equal((await profile(app, key)).statusCode, 200);
  const deleted = await app.inject({ method: 'DELETE', url: `/v1/admin/api-keys/${id}`, headers: bearer(access_token) });
  assert.equal(deleted.statusCode, 204, deleted.body);
  const res = await profile(app, key);
  assert.equal(res.statusCode, 401, res.body);
  assert.equal(res.json().code, 'token_invalid');
});
