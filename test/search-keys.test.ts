import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertSearchKeysInStep, bearer, build, login, seedOwner, seedUser } from './helper';

test('search keys stay in step with the names and emails they fold, through every write that changes them', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app, 'Owner.Ärger@Example.com', 'Ärger & Co');
  const { access_token: token } = await login(app, 'Owner.Ärger@Example.com');
  await assertSearchKeysInStep(app);

  const patch = async (url: string, payload: object) => {
    const res = await app.inject({ method: 'PATCH', url, headers: bearer(token), payload });
    assert.equal(res.statusCode, 200, res.body);
  };
  // The owner's own name (an ORM flush).
  await patch('/v1/me/profile', { name: 'Émile ZOLA' });
  await assertSearchKeysInStep(app);
  // Another user's name through the admin API (a native update), set and cleared.
  const member = await seedUser(app, owner.companyId);
  await patch(`/v1/admin/users/${member.userId}`, { name: 'ÖMER Straße' });
  await assertSearchKeysInStep(app);
  await patch(`/v1/admin/users/${member.userId}`, { name: null });
  await assertSearchKeysInStep(app);
  // The company's name.
  await patch(`/v1/admin/companies/${owner.companyId}`, { name: 'ÇA VA Ltd' });
  await assertSearchKeysInStep(app);

  // And what the keys are for: the list finds each by any case of its text.
  const found = await app.inject({ url: '/v1/admin/users?q=%C3%A9MILE', headers: bearer(token) });
  assert.equal(found.statusCode, 200, found.body);
  assert.deepEqual(
    found.json().items.map((u: { id: string }) => u.id),
    [owner.userId],
  );
});
