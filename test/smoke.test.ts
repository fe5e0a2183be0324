import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bearer, build, login, seedOwner } from './helper';

test('owner signs in and reads the profile under both prefixes', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const tokens = await login(app, owner.email);
  for (const prefix of ['/v1', '/api/v1']) {
    const res = await app.inject({ url: `${prefix}/me/profile`, headers: bearer(tokens.access_token) });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().email, owner.email);
    assert.equal(res.json().company.plan.id, 'starter');
  }
});
