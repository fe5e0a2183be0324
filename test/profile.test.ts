import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { assertCode, bearer, build, createCompanyKey, login, seedOwner, sql } from './helper';
import { call, cast } from './admin-helper';
import { inContext } from '../src/boot';

const getProfile = (app: FastifyInstance, token: string, prefix = '/v1') =>
  app.inject({ url: `${prefix}/me/profile`, headers: bearer(token) });
const patchProfile = (app: FastifyInstance, token: string, payload: unknown, prefix = '/v1') =>
  app.inject({ method: 'PATCH', url: `${prefix}/me/profile`, headers: bearer(token), payload: payload as object });

async function gql(app: FastifyInstance, token: string, query: string, variables: Record<string, unknown> = {}) {
  const res = await app.inject({ method: 'POST', url: '/graphql', headers: bearer(token), payload: { query, variables } });
  return res.json() as {
    data: Record<string, unknown> | null;
    errors?: { extensions: { code: string; errors?: { loc: (string | number)[]; type: string }[] } }[];
  };
}

const UPDATE = 'mutation($input: UpdateProfileInput!) { updateMyProfile(input: $input) { id email name role company { id } } }';

test('PATCH /me/profile sets the trimmed name, answers the profile, and GET shows it at once (both prefixes)', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  const before = (await getProfile(app, access_token)).json();
  assert.equal(before.name, null);

  const changes: string[] = [];
  const off = app.kernel.events.subscribe('user.changed', (e) => changes.push(e.userId));
  t.after(off);
  const res = await app.inject({
    method: 'PATCH',
    url: '/v1/me/profile',
    headers: { ...bearer(access_token), 'x-request-id': 'profile-1' },
    payload: { name: '  Ada Lovelace  ' },
  });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().name, 'Ada Lovelace');
  // The same body as GET /me/profile.
  const after = (await getProfile(app, access_token)).json();
  assert.deepEqual(res.json(), after);
  assert.deepEqual({ ...after, name: null }, before);
  assert.deepEqual(changes, [owner.userId]);

  const rows = await sql(app, "select company_id, actor_id, target_type, target_id, request_id, data from audit_events where action = 'user.profile_updated'");
  assert.equal(rows.length, 1);
  assert.equal(rows[0]!.company_id, owner.companyId);
  assert.equal(rows[0]!.actor_id, owner.userId);
  assert.equal(rows[0]!.target_type, 'user');
  assert.equal(rows[0]!.target_id, owner.userId);
  assert.equal(rows[0]!.request_id, 'profile-1');
  assert.deepEqual(JSON.parse(String(rows[0]!.data)), { fields: ['name'] });

  // null clears it, under /api/v1 as well.
  const cleared = await patchProfile(app, access_token, { name: null }, '/api/v1');
  assert.equal(cleared.statusCode, 200, cleared.body);
  assert.equal(cleared.json().name, null);
  assert.equal((await getProfile(app, access_token, '/api/v1')).json().name, null);

  // Setting the same name again changes nothing and audits nothing.
  await patchProfile(app, access_token, { name: 'Ada' });
  const again = await patchProfile(app, access_token, { name: ' Ada ' });
  assert.equal(again.statusCode, 200);
  const audited = await sql(app, "select id from audit_events where action = 'user.profile_updated'");
  assert.equal(audited.length, 3);

  // The credential keeps working after the change.
  assert.equal((await getProfile(app, access_token)).statusCode, 200);
});

test('PATCH /me/profile refuses bad names and unknown fields with 422 and changes nothing', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  assert.equal((await patchProfile(app, access_token, { name: 'Kept' })).statusCode, 200);

  const cases: [unknown, (string | number)[], string][] = [
    [{ name: '' }, ['body', 'name'], 'string_too_short'],
    [{ name: '   ' }, ['body', 'name'], 'string_too_short'],
    [{ name: 'x'.repeat(201) }, ['body', 'name'], 'string_too_long'],
    [{ name: 42 }, ['body', 'name'], 'string_type'],
    [{}, ['body', 'name'], 'missing'],
    [{ name: 'Ok', email: 'new@example.com' }, ['body', 'email'], 'extra_forbidden'],
  ];
  for (const [payload, loc, type] of cases) {
    const res = await patchProfile(app, access_token, payload);
    assertCode(res, 422, 'validation_error');
    const errors = res.json().errors as { loc: (string | number)[]; type: string }[];
    assert.deepEqual(errors.map((e) => e.loc), [loc], JSON.stringify(payload));
    assert.equal(errors[0]!.type, type, JSON.stringify(payload));
  }
  assert.equal((await getProfile(app, access_token)).json().name, 'Kept');

  // 200 characters (not UTF-16 units) once trimmed is the limit.
  const longest = '\u{1F600}'.repeat(200);
  const ok = await patchProfile(app, access_token, { name: ` ${longest} ` });
  assert.equal(ok.statusCode, 200, ok.body);
  assert.equal(ok.json().name, longest);
});

test('GraphQL updateMyProfile returns the updated User; omitted name leaves it; the same validation', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);

  const updated = await gql(app, access_token, UPDATE, { input: { name: '  Grace Hopper ' } });
  assert.equal(updated.errors, undefined, JSON.stringify(updated.errors));
  assert.deepEqual(updated.data, {
    updateMyProfile: { id: owner.userId, email: owner.email, name: 'Grace Hopper', role: 'OWNER', company: { id: owner.companyId } },
  });
  assert.equal((await getProfile(app, access_token)).json().name, 'Grace Hopper');

  const untouched = await gql(app, access_token, UPDATE, { input: {} });
  assert.equal((untouched.data!.updateMyProfile as { name: string }).name, 'Grace Hopper');

  const invalid = await gql(app, access_token, UPDATE, { input: { name: ' ' } });
  assert.equal(invalid.errors?.[0]?.extensions.code, 'validation_error');
  assert.deepEqual(invalid.errors?.[0]?.extensions.errors?.map((e) => e.loc), [['input', 'name']]);

  const cleared = await gql(app, access_token, UPDATE, { input: { name: null } });
  assert.equal((cleared.data!.updateMyProfile as { name: string | null }).name, null);
  const me = await gql(app, access_token, '{ me { user { name } } }');
  assert.deepEqual(me.data, { me: { user: { name: null } } });
});

test('a company API key cannot update a profile: 403 forbidden', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { key } = await createCompanyKey(app, owner.companyId);
  assertCode(await patchProfile(app, key, { name: 'Robot' }), 403, 'forbidden');
  const viaGraphql = await gql(app, key, UPDATE, { input: { name: 'Robot' } });
  assert.equal(viaGraphql.errors?.[0]?.extensions.code, 'forbidden');
  assertCode(await app.inject({ method: 'PATCH', url: '/v1/me/profile', payload: { name: 'Nobody' } }), 401, 'unauthenticated');
  const rows = await sql(app, "select id from audit_events where action = 'user.profile_updated'");
  assert.equal(rows.length, 0);
});

test('a name with a control or bidirectional formatting character is 422 wherever a user or company name is set, and nothing is written', async (t) => {
  const app = await build(t);
  const c = await cast(app);
  const spoof = 'Ann\u202Egnp.exe';
  const hidden = (res: { statusCode: number; json(): unknown; body: string }) => {
    assert.equal(res.statusCode, 422, res.body);
    assert.deepEqual((res.json() as { errors: unknown[] }).errors, [
      { loc: ['body', 'name'], msg: 'must not contain control characters or bidirectional formatting characters', type: 'string_hidden_character' },
    ]);
  };
  hidden(await call(app, c.tokens.memberA, 'PATCH', '/v1/me/profile', { name: spoof }));
  hidden(await call(app, c.tokens.ownerA, 'PATCH', `/v1/admin/users/${c.memberA.userId}`, { name: 'line\u0007bell' }));
  hidden(await call(app, c.tokens.superadmin, 'PATCH', `/v1/admin/companies/${c.a.companyId}`, { name: 'Acme\u2066' }));
  const [member] = await sql<{ name: string | null }>(app, 'select name from users where id = ?', [c.memberA.userId]);
  assert.ok(!(member!.name ?? '').includes('bell'), 'the name stays as it was');
  await assert.rejects(
    inContext(app.kernel.orm, () => app.domains.identity.accounts.createCompanyWithOwner({ email: 'bidi@example.com', password: 'a-long-enough-password', company: 'Evil\u202Eroc' })),
    (error: { code?: string }) => error.code === 'validation_error',
  );
  // A name without them is taken as before.
  assert.equal((await call(app, c.tokens.memberA, 'PATCH', '/v1/me/profile', { name: 'Ann Smith' })).statusCode, 200);
});
