import { test } from 'node:test';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { assertCode, assertInvalid, call, gql, sql } from './admin-helper';
import { build, createCompanyKey, login } from './helper';
import { buildWithAi, moduleKey, modulesCast } from './ai-helper';
import { MemoryRateLimiter } from '../src/rate-limit/rate-limiter';
import { buildApp } from '../src/app';

test('an AI-modules key is shown once, stored as its SHA-256 only, and listed by prefix with all six scopes by default', async (t) => {
  const app = await build(t);
  const { tokens } = await modulesCast(app);
  const res = await call(app, tokens.ownerA, 'POST', '/v1/apikeys', { name: 'ci' });
  assert.equal(res.statusCode, 201, res.body);
  const created = res.json();
  assert.match(created.key, /^sk_live_svc_[A-Za-z0-9_-]{43}$/);
  assert.deepEqual(created.scopes, ['chat', 'rag', 'translate', 'research', 'agent', 'bulk']);
  assert.ok(created.key.startsWith(created.prefix));
  const rows = await sql<{ key_hash: string }>(app, 'select key_hash from api_keys where id = ?', [created.id]);
  assert.equal(rows[0]!.key_hash.length, 64);
  assert.ok(!JSON.stringify(await sql(app, 'select * from api_keys where id = ?', [created.id])).includes(created.key));

  const list = await call(app, tokens.ownerA, 'GET', '/api/v1/apikeys');
  assert.equal(list.statusCode, 200);
  const keys = list.json().keys as Record<string, unknown>[];
  assert.ok(keys.some((k) => k.id === created.id && k.name === 'ci' && !('key' in k)));
  assert.ok(!list.body.includes(created.key));
});

test('the eleventh active key of an account is 409 api_key_limit_reached; revoking one frees a slot', async (t) => {
  const app = await build(t);
  const { tokens } = await modulesCast(app); // the cast made one key per user
  const made = [];
  for (let i = 0; i < 9; i++) made.push(await moduleKey(app, tokens.ownerA, ['chat'], `k${i}`));
  assertCode(await call(app, tokens.ownerA, 'POST', '/v1/apikeys', { name: 'eleventh' }), 409, 'api_key_limit_reached');
  // Another user of the same company is not affected.
  assert.equal((await call(app, tokens.memberA, 'POST', '/v1/apikeys', { name: 'mine' })).statusCode, 201);
  assert.equal((await call(app, tokens.ownerA, 'DELETE', `/v1/apikeys/${made[0]!.id}`)).statusCode, 204);
  assert.equal((await call(app, tokens.ownerA, 'POST', '/v1/apikeys', { name: 'eleventh' })).statusCode, 201);
});

test('unknown scopes are 422 and a key management call with a key is 401', async (t) => {
  const app = await build(t);
  const { tokens, keys } = await modulesCast(app);
  const bad = await call(app, tokens.ownerA, 'POST', '/v1/apikeys', { name: 'x', scopes: ['chat', 'admin'] });
  assert.equal(bad.statusCode, 422, bad.body);
  assertCode(await call(app, keys.ownerA.key, 'GET', '/v1/apikeys'), 401, 'token_invalid');
  assertCode(await call(app, keys.ownerA.key, 'POST', '/v1/apikeys', { name: 'x' }), 401, 'token_invalid');
});

test('a key name with a control or bidi character is 422 at body.name, on REST and GraphQL, for AI-modules and company keys', async (t) => {
  const app = await build(t);
  const { tokens } = await modulesCast(app);
  const refused = ['\u0007bell', '\u202Egnp.exe', 'a\u0085b', 'a\u009Bb', 'x\u2066y\u2069', 'left\u200Emark', 'r\u200Fl', 'arabic\u061Cmark', 'line\nbreak', 'tab\tinside', 'esc\u001b[31m'];
  for (const name of refused) {
    assertInvalid(await call(app, tokens.ownerA, 'POST', '/v1/apikeys', { name }), 'body.name');
    assertInvalid(await call(app, tokens.ownerA, 'POST', '/v1/admin/api-keys', { name }), 'body.name');
  }
  const viaGql = await gql(app, tokens.ownerA, 'mutation($name: String!) { createMyApiKey(input: { name: $name }) { key } }', { name: '\u202Egnp.exe' });
  assert.equal(viaGql.errors?.[0]?.extensions.code, 'validation_error', JSON.stringify(viaGql));
  const stored = await sql<{ name: string }>(app, 'select name from api_keys');
  assert.ok(stored.every((k) => !/[\p{Cc}\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/u.test(k.name)), JSON.stringify(stored));
  // Other scripts, emoji and joiners are names like any other; surrounding whitespace is trimmed as before.
  for (const name of ['\u05E9\u05DC\u05D5\u05DD keys', '\u6771\u4EAC', '\u{1F468}\u200D\u{1F4BB} laptop', ' padded ']) {
    assert.equal((await call(app, tokens.memberA, 'POST', '/v1/apikeys', { name })).statusCode, 201, name);
  }
});

test('a revoked key fails at once; another user cannot revoke it (404)', async (t) => {
  const app = await build(t);
  const { tokens, keys } = await modulesCast(app);
  assert.equal((await call(app, keys.ownerA.key, 'GET', '/v1/apikeys/verify')).statusCode, 200);
  assertCode(await call(app, tokens.memberA, 'DELETE', `/v1/apikeys/${keys.ownerA.id}`), 404, 'not_found');
  assertCode(await call(app, tokens.ownerB, 'DELETE', `/v1/apikeys/${keys.ownerA.id}`), 404, 'not_found');
  assert.equal((await call(app, tokens.ownerA, 'DELETE', `/v1/apikeys/${keys.ownerA.id}`)).statusCode, 204);
  assertCode(await call(app, keys.ownerA.key, 'GET', '/v1/apikeys/verify'), 401, 'token_invalid');
});

test('GET /apikeys/verify and GET /usage describe the key, the plan and the credits', async (t) => {
  const app = await build(t);
  const { a, keys } = await modulesCast(app);
  const verify = await call(app, keys.ownerA.key, 'GET', '/api/v1/apikeys/verify');
  assert.equal(verify.statusCode, 200, verify.body);
  assert.deepEqual(verify.json(), { valid: true, username: a.email, plan: 'starter', scopes: ['chat', 'rag', 'translate', 'research', 'agent', 'bulk'], auth_method: 'api_key' });
  const usage = await call(app, keys.ownerA.key, 'GET', '/v1/usage');
  assert.equal(usage.statusCode, 200, usage.body);
  assert.deepEqual(usage.json(), { username: a.email, plan: 'starter', credits_remaining: 2000, credits_monthly: 2000, trial_days_left: null });
});

test('the AI modules API takes only AI-modules keys: access tokens and company keys are 401', async (t) => {
  const app = await build(t);
  const { a, tokens } = await modulesCast(app);
  const companyKey = await createCompanyKey(app, a.companyId);
  for (const credential of [tokens.ownerA, companyKey.key, 'sk_live_svc_not-a-real-key', 'nonsense']) {
    for (const [method, url] of [['GET', '/v1/usage'], ['GET', '/v1/apikeys/verify'], ['POST', '/v1/chat'], ['POST', '/v1/studio/process']] as const) {
      const res = await call(app, credential, method, url, method === 'POST' ? {} : undefined);
      assert.equal(res.statusCode, 401, `${method} ${url} with ${credential.slice(0, 12)}: ${res.body}`);
    }
  }
  assert.equal((await app.inject({ method: 'GET', url: '/v1/usage' })).statusCode, 401);
});

test('an AI-modules key is refused (401) everywhere but the AI modules API: REST, GraphQL and its raw routes', async (t) => {
  const app = await build(t);
  const { keys } = await modulesCast(app);
  assertCode(await call(app, keys.ownerA.key, 'GET', '/v1/me/profile'), 401, 'token_invalid');
  assertCode(await call(app, keys.ownerA.key, 'GET', '/v1/billing/credits'), 401, 'token_invalid');
  assertCode(await call(app, keys.ownerA.key, 'GET', '/v1/admin/usage/export'), 401, 'token_invalid');
  const res = await gql(app, keys.ownerA.key, '{ me { role } }');
  assert.equal(res.errors?.[0]?.extensions.code, 'token_invalid');
});

test('a key without the scope a path needs is 403 insufficient_scope naming it', async (t) => {
  const app = await buildWithAi(t, { AI_BASE_URL: 'http://127.0.0.1:9/v1' });
  const { tokens } = await modulesCast(app);
  const ragOnly = await moduleKey(app, tokens.ownerA, ['rag']);
  const chat = await call(app, ragOnly.key, 'POST', '/v1/chat', { message: 'hi', agent: 'general', session_id: 's' });
  assertCode(chat, 403, 'insufficient_scope');
  assert.equal(chat.json().required_scope, 'chat');
  const studio = await call(app, ragOnly.key, 'POST', '/v1/studio/process', { text: 'hallo' });
  assertCode(studio, 403, 'insufficient_scope');
  assert.equal(studio.json().required_scope, 'translate');
  // Verification and usage need no particular scope.
  assert.equal((await call(app, ragOnly.key, 'GET', '/v1/usage')).statusCode, 200);
});

test('30 requests per key over a rolling minute, not a fixed window: the 31st is 429 with Retry-After', async (t) => {
  const app = await build(t, { rateLimit: { windowSeconds: 60, authenticated: 10_000, moduleKey: 30, anonymous: 10_000, auth: 10_000, feedback: 10_000 } });
  const { keys } = await modulesCast(app);
  for (let i = 0; i < 30; i++) {
    const res = await call(app, keys.ownerA.key, 'GET', '/v1/usage');
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['x-ratelimit-remaining'], String(29 - i));
  }
  const refused = await call(app, keys.ownerA.key, 'GET', '/v1/usage');
  assertCode(refused, 429, 'rate_limited');
  assert.ok(Number(refused.headers['retry-after']) >= 1 && Number(refused.headers['retry-after']) <= 61);
  // Another key of the same user has its own window.
  assert.equal((await call(app, keys.memberA.key, 'GET', '/v1/usage')).statusCode, 200);
});

test('the rolling window frees one slot as each hit ages out, never a whole window at once', () => {
  const store = new MemoryRateLimiter(60);
  const t0 = 1_000_000_000_000;
  // 10 hits at t0, 20 at t0+30s: the window holds 30.
  for (let i = 0; i < 10; i++) assert.ok(store.slide('k', 30, 60, t0).allowed);
  for (let i = 0; i < 20; i++) assert.ok(store.slide('k', 30, 60, t0 + 30_000).allowed);
  assert.equal(store.slide('k', 30, 60, t0 + 59_000).allowed, false);
  // A fixed window starting at t0 would reset at t0+60s and allow 30 more; the rolling one frees only the 10 of t0.
  for (let i = 0; i < 10; i++) assert.ok(store.slide('k', 30, 60, t0 + 60_001).allowed);
  assert.equal(store.slide('k', 30, 60, t0 + 60_001).allowed, false);
  assert.ok(store.slide('k', 30, 60, t0 + 90_001).allowed);
});

test("the plan's daily request limit per account answers 429 until midnight UTC", async (t) => {
  const app = await build(t);
  const { a, keys } = await modulesCast(app);
  await sql(app, "update plans set daily_requests = 3 where id = 'starter'");
  const planned = app.domains.billing.plans.plan('starter');
  assert.equal(planned?.dailyRequests, 3, 'the plan cache sees the new limit');
  for (let i = 0; i < 3; i++) assert.equal((await call(app, keys.ownerA.key, 'GET', '/v1/usage')).statusCode, 200);
  const refused = await call(app, keys.ownerA.key, 'GET', '/v1/usage');
  assertCode(refused, 429, 'rate_limited');
  const untilMidnight = Math.ceil((Math.ceil(Date.now() / 86_400_000) * 86_400_000 - Date.now()) / 1000);
  assert.ok(Math.abs(Number(refused.headers['retry-after']) - untilMidnight) <= 2, `retry-after ${refused.headers['retry-after']}`);
  assert.match(String(refused.headers['ratelimit-policy']), /"daily";q=3;w=86400/);
  // The limit is the account's: a second key of the same user is refused too, another user is not.
  const second = await moduleKey(app, (await login(app, a.email)).access_token);
  assertCode(await call(app, second.key, 'GET', '/v1/usage'), 429, 'rate_limited');
  assert.equal((await call(app, keys.memberA.key, 'GET', '/v1/usage')).statusCode, 200);
});

test("a key's daily requests are counted over GraphQL too, a unit per root field as REST counts a request, and refused there once spent", async (t) => {
  const app = await build(t);
  const { keys } = await modulesCast(app);
  await sql(app, "update plans set daily_requests = 4 where id = 'starter'");
  assert.equal((await call(app, keys.ownerA.key, 'GET', '/v1/usage')).statusCode, 200);
  // Two aliased fields are two requests' worth: 3 of 4 spent.
  const twice = await gql(app, keys.ownerA.key, '{ a: moduleUsage { plan } b: moduleUsage { plan } }');
  assert.equal(twice.errors, undefined, JSON.stringify(twice));
  // Two more do not fit: all or none, nothing spent.
  const over = await gql(app, keys.ownerA.key, '{ a: moduleUsage { plan } b: moduleUsage { plan } }');
  assert.equal(over.errors?.[0]?.extensions?.code, 'rate_limited', JSON.stringify(over));
  assert.equal((await gql(app, keys.ownerA.key, '{ moduleUsage { plan } }')).errors, undefined);
  const spent = await gql(app, keys.ownerA.key, '{ apiKeyVerification { valid } }');
  assert.equal(spent.errors?.[0]?.extensions?.code, 'rate_limited', JSON.stringify(spent));
  assertCode(await call(app, keys.ownerA.key, 'GET', '/v1/usage'), 429, 'rate_limited');
  assert.equal((await gql(app, keys.memberA.key, '{ moduleUsage { plan } }')).errors, undefined, "another user's count is their own");
});

test("a user's AI-modules key is refused with mfa_enrollment_required while the user owes MFA enrolment, on REST and GraphQL, as the user is", async (t) => {
  const app = await build(t);
  const { tokens, keys } = await modulesCast(app);
  assert.equal((await call(app, keys.memberA.key, 'GET', '/v1/usage')).statusCode, 200);
  const policy = await call(app, tokens.ownerA, 'PATCH', '/v1/admin/security/policy', { mfa_required: true });
  assert.equal(policy.statusCode, 200, policy.body);
  assertCode(await call(app, keys.memberA.key, 'GET', '/v1/usage'), 403, 'mfa_enrollment_required');
  assertCode(await call(app, keys.memberA.key, 'GET', '/api/v1/apikeys/verify'), 403, 'mfa_enrollment_required');
  const viaGraphql = await gql(app, keys.memberA.key, '{ moduleUsage { plan } }');
  assert.equal(viaGraphql.errors?.[0]?.extensions?.code, 'mfa_enrollment_required', JSON.stringify(viaGraphql));
});

test("the plan's daily request count outlives a restart: the same data directory keeps the day's count", async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-daily-'));
  t.after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const open = () => buildApp({ env: { DATA_DIR: dataDir, SCRYPT_COST: '1024' }, logger: false });
  const first = await open();
  const { keys } = await modulesCast(first);
  await sql(first, "update plans set daily_requests = 3 where id = 'starter'");
  for (let i = 0; i < 2; i++) assert.equal((await call(first, keys.ownerA.key, 'GET', '/v1/usage')).statusCode, 200);
  // Stopped before the counts' next write: closing writes them.
  await first.close();
  const second = await open();
  t.after(() => second.close());
  assert.equal((await call(second, keys.ownerA.key, 'GET', '/v1/usage')).statusCode, 200);
  assertCode(await call(second, keys.ownerA.key, 'GET', '/v1/usage'), 429, 'rate_limited');
  assert.equal((await call(second, keys.memberA.key, 'GET', '/v1/usage')).statusCode, 200, "another user's count is their own");
});

test('a company admin lists and revokes its users\' AI-modules keys on the admin API keys page', async (t) => {
  const app = await build(t);
  const { tokens, keys, memberA } = await modulesCast(app);
  const list = await call(app, tokens.ownerA, 'GET', '/v1/admin/api-keys');
  assert.equal(list.statusCode, 200, list.body);
  const listed = (list.json().items as { id: string; scopes: string[] | null; owner: { email: string } | null }[]).find((k) => k.id === keys.memberA.id);
  assert.equal(listed?.owner?.email, memberA.email);
  assert.equal(listed?.scopes?.length, 6);
  assert.ok(!(list.json().items as { id: string }[]).some((k) => k.id === keys.ownerB.id), "another company's keys stay out");
  assert.equal((await call(app, tokens.ownerA, 'DELETE', `/v1/admin/api-keys/${keys.memberA.id}`)).statusCode, 204);
  assertCode(await call(app, keys.memberA.key, 'GET', '/v1/usage'), 401, 'token_invalid');
});

test('a suspended user\'s keys stop working', async (t) => {
  const app = await build(t);
  const { tokens, keys, memberA } = await modulesCast(app);
  const res = await call(app, tokens.ownerA, 'POST', `/v1/admin/users/${memberA.userId}/suspend`, { reason: 'test' });
  assert.equal(res.statusCode, 200, res.body);
  assertCode(await call(app, keys.memberA.key, 'GET', '/v1/usage'), 401, 'token_invalid');
});

test('key management works over GraphQL with the same rules', async (t) => {
  const app = await build(t);
  const { tokens } = await modulesCast(app);
  const made = await gql(app, tokens.memberA, 'mutation { createMyApiKey(input: { name: "gql", scopes: ["chat", "rag"] }) { key apiKey { id scopes } } }');
  const created = made.data!.createMyApiKey as { key: string; apiKey: { id: string; scopes: string[] } };
  assert.deepEqual(created.apiKey.scopes, ['chat', 'rag']);
  const mine = await gql(app, tokens.memberA, '{ myApiKeys { id prefix } }');
  assert.ok((mine.data!.myApiKeys as { id: string }[]).some((k) => k.id === created.apiKey.id));
  const usage = await gql(app, tokens.memberA, '{ moduleUsage { creditsRemaining creditsMonthly plan } }');
  assert.deepEqual(usage.data!.moduleUsage, { creditsRemaining: 2000, creditsMonthly: 2000, plan: 'starter' });
  const revoked = await gql(app, tokens.memberA, `mutation { revokeMyApiKey(id: "${created.apiKey.id}") }`);
  assert.equal(revoked.data!.revokeMyApiKey, true);
});

test('GET /usage counts the whole days left of a trial subscription', async (t) => {
  const app = await build(t);
  const { a, keys } = await modulesCast(app);
  const trialEnd = Date.now() + 4.5 * 86_400_000;
  await sql(
    app,
    "insert into subscriptions (company_id, customer_id, subscription_id, plan_id, status, seats, cancel_at_period_end, trial_end, updated_at) values (?, 'cus_1', 'sub_1', 'starter', 'trialing', 1, 0, ?, ?)",
    [a.companyId, trialEnd, Date.now()],
  );
  assert.equal((await call(app, keys.ownerA.key, 'GET', '/v1/usage')).json().trial_days_left, 5);
  await sql(app, "update subscriptions set status = 'active' where company_id = ?", [a.companyId]);
  assert.equal((await call(app, keys.ownerA.key, 'GET', '/v1/usage')).json().trial_days_left, null);
});
