import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { bearer, build, createCompanyKey, login, PASSWORD, seedOwner } from './helper';
import { awayFromStepBoundary, codeAt, hotp, resetReplayGuard, sql, totp, wrongCode } from './totp';
import { SecretBox, SecretBoxError } from '../src/crypto/secret-box';
import { loadConfig } from '../src/config';

function assertCode(res: LightMyRequestResponse, status: number, code: string) {
  assert.equal(res.statusCode, status, res.body);
  assert.ok(String(res.json().type).endsWith(`/errors/${code}`), `expected ${code}, got ${res.body}`);
}

const post = (app: FastifyInstance, url: string, token?: string, payload?: object) =>
  app.inject({ method: 'POST', url, ...(token ? { headers: bearer(token) } : {}), ...(payload ? { payload } : {}) });

const loginWith = (app: FastifyInstance, email: string, totpCode?: string, password = PASSWORD) =>
  post(app, '/v1/auth/login', undefined, { email, password, ...(totpCode === undefined ? {} : { totp_code: totpCode }) });

const profile = (app: FastifyInstance, token: string) => app.inject({ url: '/v1/me/profile', headers: bearer(token) });

interface SetupBody {
  otpauth_uri: string;
  qr_code: string;
  secret: string;
  recovery_codes: string[];
}

/** Signs in, enrols and confirms MFA; the replay guard is reset so the current step can be used again. */
async function enrol(app: FastifyInstance, email: string, userId: string) {
  const { access_token: token } = await login(app, email);
  const setup = await post(app, '/v1/me/mfa/setup', token);
  assert.equal(setup.statusCode, 200, setup.body);
  const body = setup.json() as SetupBody;
  const verified = await post(app, '/v1/me/mfa/verify', token, { totp_code: totp(body.secret) });
  assert.equal(verified.statusCode, 200, verified.body);
  await resetReplayGuard(app, userId);
  return { token, secret: body.secret, recoveryCodes: body.recovery_codes };
}

test('the test TOTP generator reproduces the RFC 6238 SHA-1 vectors', () => {
  const key = Buffer.from('12345678901234567890');
  // RFC 6238 appendix B, 8 digits, T = 59, 1111111109, 2000000000.
  assert.equal(hotp(key, Math.floor(59 / 30), 8), '94287082');
  assert.equal(hotp(key, Math.floor(1111111109 / 30), 8), '07081804');
  assert.equal(hotp(key, Math.floor(2000000000 / 30), 8), '69279037');
  // RFC 4226 appendix D, 6 digits.
  assert.deepEqual([0, 1, 9].map((c) => hotp(key, c)), ['755224', '287082', '520489']);
});

test('setup returns an otpauth URI, a PNG QR code and 8 distinct recovery codes; MFA is off until verify', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);

  const res = await post(app, '/v1/me/mfa/setup', token);
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json() as SetupBody;
  assert.deepEqual(Object.keys(body).sort(), ['otpauth_uri', 'qr_code', 'recovery_codes', 'secret']);

  const uri = new URL(body.otpauth_uri);
  assert.equal(uri.protocol, 'otpauth:');
  assert.equal(uri.host, 'totp');
  assert.equal(decodeURIComponent(uri.pathname), `/Atrium:${owner.email}`);
  assert.equal(uri.searchParams.get('issuer'), 'Atrium');
  const secret = uri.searchParams.get('secret')!;
  assert.match(secret, /^[A-Z2-7]{32,}$/, 'base32, at least 160 bits');
  assert.equal(body.secret, secret);
  for (const [name, value] of [['algorithm', 'SHA1'], ['digits', '6'], ['period', '30']]) {
    const given = uri.searchParams.get(name);
    assert.ok(given === null || given === value, `${name}=${given}`);
  }

  assert.ok(body.qr_code.startsWith('data:image/png;base64,'));
  const png = Buffer.from(body.qr_code.slice('data:image/png;base64,'.length), 'base64');
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

  assert.equal(body.recovery_codes.length, 8);
  assert.equal(new Set(body.recovery_codes).size, 8);
  for (const code of body.recovery_codes) {
    // 24 base32 characters: 120 random bits.
    assert.match(code, /^[A-Z2-7]{4}(-[A-Z2-7]{4}){5}$/);
  }

  // Not on yet: the profile says so and login needs no code.
  assert.equal((await profile(app, token)).json().mfa_enabled, false);
  assert.equal((await loginWith(app, owner.email)).statusCode, 200);

  // A wrong code does not turn it on.
  const wrong = await post(app, '/v1/me/mfa/verify', token, { totp_code: wrongCode(secret) });
  assert.equal(wrong.statusCode, 422, wrong.body);
  assertCode(await post(app, '/v1/me/mfa/verify', token, { totp_code: 'abcdef' }), 422, 'validation_error');
  assertCode(await post(app, '/v1/me/mfa/verify', token, {}), 422, 'validation_error');
  assert.equal((await profile(app, token)).json().mfa_enabled, false);
  assert.equal((await loginWith(app, owner.email)).statusCode, 200);

  const ok = await post(app, '/v1/me/mfa/verify', token, { totp_code: totp(secret) });
  assert.equal(ok.statusCode, 200, ok.body);
  assert.equal(ok.json().mfa_enabled, true);
  assert.ok(Math.abs(Date.parse(ok.json().enabled_at) - Date.now()) < 30_000);
  assert.equal((await profile(app, token)).json().mfa_enabled, true);
  assertCode(await loginWith(app, owner.email), 401, 'mfa_required');

  // Once on, neither setup nor verify can replace the factor without disabling it first.
  assertCode(await post(app, '/v1/me/mfa/setup', token), 409, 'conflict');
  assertCode(await post(app, '/v1/me/mfa/verify', token, { totp_code: totp(secret) }), 409, 'conflict');

  // Recovery codes are stored only as SHA-256 hashes; the codes themselves appear nowhere.
  const rows = await sql<{ code_hash: string; used_at: unknown }>(app, 'select * from mfa_recovery_codes where user_id = ?', [owner.userId]);
  assert.equal(rows.length, 8);
  assert.ok(rows.every((r) => /^[0-9a-f]{64}$/.test(r.code_hash) && r.used_at === null));
  const dump = JSON.stringify(await sql(app, 'select * from mfa_recovery_codes')) + JSON.stringify(await sql(app, 'select * from users'));
  for (const code of body.recovery_codes) {
    assert.ok(!dump.includes(code) && !dump.includes(code.replace(/-/g, '')));
    assert.ok(!rows.some((r) => r.code_hash === createHash('sha256').update(code).digest('hex')));
  }
  assert.ok(!dump.includes(secret));
  const audit = JSON.stringify(await sql(app, 'select * from audit_events'));
  assert.ok(!audit.includes(secret) && !body.recovery_codes.some((c) => audit.includes(c)));
  const enabled = await sql(app, "select actor_id, target_id from audit_events where action = 'mfa.enabled'");
  assert.deepEqual(enabled, [{ actor_id: owner.userId, target_id: owner.userId }]);
});

test('setup again before verify replaces the secret and the recovery codes', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  const first = (await post(app, '/v1/me/mfa/setup', token)).json() as SetupBody;
  const second = (await post(app, '/v1/me/mfa/setup', token)).json() as SetupBody;
  assert.notEqual(first.secret, second.secret);
  const [{ n }] = await sql<{ n: number }>(app, 'select count(*) as n from mfa_recovery_codes where user_id = ?', [owner.userId]);
  assert.equal(Number(n), 8);
  // Only the latest secret confirms.
  const stale = totp(first.secret);
  if (stale !== totp(second.secret)) assert.equal((await post(app, '/v1/me/mfa/verify', token, { totp_code: stale })).statusCode, 422);
  assert.equal((await post(app, '/v1/me/mfa/verify', token, { totp_code: totp(second.secret) })).statusCode, 200);
});

test('with MFA on: no code is 401 mfa_required, a wrong one 401, the right one 200, the same one again 401', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { secret } = await enrol(app, owner.email, owner.userId);

  const missing = await loginWith(app, owner.email);
  assertCode(missing, 401, 'mfa_required');
  assertCode(await loginWith(app, owner.email, ''), 401, 'mfa_required');

  // The password is judged first: a wrong one is invalid_credentials with or without a code,
  // exactly as for an unknown email, and does not spend the code.
  const code = totp(secret);
  const wrongPassword = await loginWith(app, owner.email, code, 'wrong-password-1');
  assertCode(wrongPassword, 401, 'invalid_credentials');
  assertCode(await loginWith(app, owner.email, undefined, 'wrong-password-1'), 401, 'invalid_credentials');
  const unknown = await loginWith(app, 'nobody@example.com', undefined, 'wrong-password-1');
  const strip = (res: LightMyRequestResponse) => {
    const { request_id: _ignored, ...rest } = res.json();
    return rest;
  };
  assert.deepEqual(strip(wrongPassword), strip(unknown));

  assertCode(await loginWith(app, owner.email, wrongCode(secret)), 401, 'mfa_invalid');
  assertCode(await loginWith(app, owner.email, 'not-a-code'), 401, 'mfa_invalid');

  const ok = await loginWith(app, owner.email, code);
  assert.equal(ok.statusCode, 200, ok.body);
  assert.equal(ok.json().user.id, owner.userId);
  assert.equal((await profile(app, ok.json().access_token)).statusCode, 200);

  // Replayed: the same code (same time step) is refused.
  assertCode(await loginWith(app, owner.email, code), 401, 'mfa_invalid');

  const failures = await sql<{ data: string }>(app, "select data from audit_events where action = 'auth.mfa_failed' order by created_at");
  assert.equal(failures.length, 3);
  assert.ok(failures.every((f) => JSON.parse(String(f.data)).context === 'login'));
});

test('TOTP accepts one step of clock skew each way, not two, and each step works once', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { secret } = await enrol(app, owner.email, owner.userId);
  await awayFromStepBoundary();

  for (const steps of [-2, 2, -3]) {
    const code = codeAt(secret, steps);
    if ([-1, 0, 1].some((s) => codeAt(secret, s) === code)) continue;
    assertCode(await loginWith(app, owner.email, code), 401, 'mfa_invalid');
  }
  const previous = codeAt(secret, -1);
  const current = codeAt(secret, 0);
  const next = codeAt(secret, 1);
  assert.equal((await loginWith(app, owner.email, previous)).statusCode, 200, 'previous step');
  assert.equal((await loginWith(app, owner.email, current)).statusCode, 200, 'current step');
  assert.equal((await loginWith(app, owner.email, next)).statusCode, 200, 'next step');
  // Every step up to the newest accepted one is spent.
  for (const code of [previous, current, next]) assertCode(await loginWith(app, owner.email, code), 401, 'mfa_invalid');
  const [{ step }] = await sql<{ step: number }>(app, 'select mfa_last_step as step from users where id = ?', [owner.userId]);
  assert.equal(Number(step), Math.floor(Date.now() / 1000 / 30) + 1);
});

test('concurrent logins with one TOTP code: exactly one succeeds', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { secret } = await enrol(app, owner.email, owner.userId);
  await awayFromStepBoundary();
  const code = totp(secret);
  const results = await Promise.all(Array.from({ length: 6 }, () => loginWith(app, owner.email, code)));
  assert.equal(results.filter((r) => r.statusCode === 200).length, 1, results.map((r) => r.statusCode).join(','));
  for (const r of results.filter((r) => r.statusCode !== 200)) assertCode(r, 401, 'mfa_invalid');
});

test('a recovery code replaces a TOTP code once; using one is audited', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const other = await seedOwner(app);
  const { recoveryCodes } = await enrol(app, owner.email, owner.userId);
  const { recoveryCodes: otherCodes } = await enrol(app, other.email, other.userId);

  const first = await loginWith(app, owner.email, recoveryCodes[0]);
  assert.equal(first.statusCode, 200, first.body);
  assertCode(await loginWith(app, owner.email, recoveryCodes[0]), 401, 'mfa_invalid');
  // Case, spaces and dashes do not matter.
  const relaxed = recoveryCodes[1]!.toLowerCase().replace(/-/g, ' ');
  assert.equal((await loginWith(app, owner.email, relaxed)).statusCode, 200);
  assertCode(await loginWith(app, owner.email, recoveryCodes[1]), 401, 'mfa_invalid');
  // Another user's code is no good here.
  assertCode(await loginWith(app, owner.email, otherCodes[0]), 401, 'mfa_invalid');

  const used = await sql<{ actor_id: string; data: string; ip: string }>(
    app,
    "select actor_id, data, ip from audit_events where action = 'mfa.recovery_code_used' order by created_at",
  );
  assert.equal(used.length, 2);
  assert.ok(used.every((u) => u.actor_id === owner.userId && u.ip === '127.0.0.1'));
  assert.deepEqual(used.map((u) => JSON.parse(String(u.data)).remaining), [7, 6]);
  const [{ n }] = await sql<{ n: number }>(app, 'select count(*) as n from mfa_recovery_codes where user_id = ? and used_at is not null', [owner.userId]);
  assert.equal(Number(n), 2);
});

test('a sign-in refused as account_suspended spends nothing: no recovery code, no TOTP step, no mfa.recovery_code_used', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { secret, recoveryCodes } = await enrol(app, owner.email, owner.userId);
  await awayFromStepBoundary();
  await sql(app, "update users set status = 'suspended' where id = ?", [owner.userId]);
  const gql = (totpCode: string) =>
    app.inject({
      method: 'POST',
      url: '/graphql',
      payload: { query: 'mutation($i: LoginInput!) { login(input: $i) { accessToken } }', variables: { i: { email: owner.email, password: PASSWORD, totpCode } } },
    });

  // Still only after the right password: a wrong one says nothing of the account.
  assertCode(await loginWith(app, owner.email, recoveryCodes[0], 'wrong-password-1'), 401, 'invalid_credentials');
  assertCode(await loginWith(app, owner.email, recoveryCodes[0]), 403, 'account_suspended');
  assert.equal((await gql(recoveryCodes[1]!)).json().errors[0].extensions.code, 'account_suspended');
  const code = totp(secret);
  assertCode(await loginWith(app, owner.email, code), 403, 'account_suspended');

  const [{ unused }] = await sql<{ unused: number }>(app, 'select count(*) as unused from mfa_recovery_codes where user_id = ? and used_at is null', [owner.userId]);
  assert.equal(Number(unused), 8);
  assert.equal((await sql(app, "select id from audit_events where action = 'mfa.recovery_code_used'")).length, 0);
  const [{ step }] = await sql<{ step: number }>(app, 'select mfa_last_step as step from users where id = ?', [owner.userId]);
  assert.equal(Number(step), 0);

  // Once active again, the very same codes sign in.
  await sql(app, "update users set status = 'active' where id = ?", [owner.userId]);
  assert.equal((await loginWith(app, owner.email, recoveryCodes[0])).statusCode, 200);
  assert.equal((await gql(recoveryCodes[1]!)).json().errors, undefined);
  assert.equal((await loginWith(app, owner.email, code)).statusCode, 200);
});

test('concurrent logins with one recovery code: exactly one succeeds', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { recoveryCodes } = await enrol(app, owner.email, owner.userId);
  const results = await Promise.all(Array.from({ length: 8 }, () => loginWith(app, owner.email, recoveryCodes[3])));
  const winners = results.filter((r) => r.statusCode === 200);
  assert.equal(winners.length, 1, results.map((r) => r.statusCode).join(','));
  for (const r of results.filter((r) => r.statusCode !== 200)) assertCode(r, 401, 'mfa_invalid');
  const used = await sql(app, "select id from audit_events where action = 'mfa.recovery_code_used'");
  assert.equal(used.length, 1);
});

test('too many wrong codes for one account are refused for a while (429)', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { secret } = await enrol(app, owner.email, owner.userId);
  for (let i = 0; i < 10; i++) assertCode(await loginWith(app, owner.email, wrongCode(secret)), 401, 'mfa_invalid');
  const refused = await loginWith(app, owner.email, totp(secret));
  assertCode(refused, 429, 'rate_limited');
  assert.ok(refused.json().retry_after_seconds > 0);
  // The resolver's Retry-After survives the REST adapter (it travels in extensions.http.headers).
  assert.equal(refused.headers['retry-after'], String(refused.json().retry_after_seconds));
});

test('the TOTP secret is stored sealed (AES-256-GCM, key id, bound to its user), under a key generated into DATA_DIR', async (t) => {
  const app = await build(t);
  const a = await seedOwner(app);
  const b = await seedOwner(app);
  const { secret } = await enrol(app, a.email, a.userId);
  await enrol(app, b.email, b.userId);

  const [row] = await sql<{ mfa_secret: string; mfa_pending_secret: string | null }>(
    app,
    'select mfa_secret, mfa_pending_secret from users where id = ?',
    [a.userId],
  );
  const sealed = row!.mfa_secret;
  assert.equal(row!.mfa_pending_secret, null);
  assert.ok(!sealed.includes(secret));
  const match = /^v1:([A-Za-z0-9_-]+):([A-Za-z0-9_-]{16}):([A-Za-z0-9_-]+)$/.exec(sealed);
  assert.ok(match, sealed);
  const box = app.kernel.secretBox;
  assert.equal(match[1], box.currentKeyId);
  assert.equal(box.openString(sealed, `mfa:${a.userId}`), secret);

  // Bound to its owner: another user's context, a flipped byte or a relabelled key id fail.
  assert.throws(() => box.open(sealed, `mfa:${b.userId}`), SecretBoxError);
  const data = Buffer.from(match[3]!, 'base64url');
  data[0] = data[0]! ^ 1;
  assert.throws(() => box.open(`v1:${match[1]}:${match[2]}:${data.toString('base64url')}`, `mfa:${a.userId}`), SecretBoxError);
  assert.throws(() => box.open(sealed.replace(/^v1:[^:]+:/, 'v1:other:'), `mfa:${a.userId}`), SecretBoxError);
  assert.throws(() => box.open('not sealed', `mfa:${a.userId}`), SecretBoxError);

  // Copied onto another user's row, the secret does not open: that user cannot sign in with it.
  await sql(app, 'update users set mfa_secret = ? where id = ?', [sealed, b.userId]);
  const copied = await loginWith(app, b.email, totp(secret));
  assert.notEqual(copied.statusCode, 200);
  assert.equal(copied.statusCode, 500);

  // The key was generated into DATA_DIR/secrets.json (mode 0600).
  const file = path.join(app.config.dataDir, 'secrets.json');
  const stored = JSON.parse(fs.readFileSync(file, 'utf8')) as { encryptionKeys: string };
  assert.ok(stored.encryptionKeys.startsWith(`${box.currentKeyId}:`));
  assert.equal(Buffer.from(stored.encryptionKeys.split(':')[1]!, 'base64').length, 32);
  if (process.platform !== 'win32') assert.equal(fs.statSync(file).mode & 0o777, 0o600);
});

test('key rotation: a secret sealed under an older key still works after a new current key, and is sealed again under it', async (t) => {
  const k1 = randomBytes(32).toString('base64');
  const k2 = randomBytes(32).toString('base64');
  const app = await build(t, { encryptionKeys: `k2:${k2},k1:${k1}` });
  const owner = await seedOwner(app);
  const { secret } = await enrol(app, owner.email, owner.userId);
  const [{ mfa_secret: current }] = await sql<{ mfa_secret: string }>(app, 'select mfa_secret from users where id = ?', [owner.userId]);
  assert.ok(current.startsWith('v1:k2:'), current);

  // As if sealed before k2 was configured.
  const oldBox = new SecretBox([{ id: 'k1', key: Buffer.from(k1, 'base64') }]);
  const old = oldBox.seal(secret, `mfa:${owner.userId}`);
  assert.throws(() => oldBox.open(current, `mfa:${owner.userId}`), SecretBoxError);
  await sql(app, 'update users set mfa_secret = ? where id = ?', [old, owner.userId]);

  await awayFromStepBoundary();
  const res = await loginWith(app, owner.email, totp(secret));
  assert.equal(res.statusCode, 200, res.body);
  const [{ mfa_secret: resealed }] = await sql<{ mfa_secret: string }>(app, 'select mfa_secret from users where id = ?', [owner.userId]);
  assert.ok(resealed.startsWith('v1:k2:'), resealed);
  assert.equal(app.kernel.secretBox.openString(resealed, `mfa:${owner.userId}`), secret);

  // Configured keys are never written to DATA_DIR.
  const stored = JSON.parse(fs.readFileSync(path.join(app.config.dataDir, 'secrets.json'), 'utf8'));
  assert.equal(stored.encryptionKeys, undefined);
  assert.ok(!JSON.stringify(stored).includes(k1) && !JSON.stringify(stored).includes(k2));
});

test('ENCRYPTION_KEYS is validated at start', () => {
  const key = randomBytes(32).toString('base64');
  assert.equal(loadConfig({ ENCRYPTION_KEYS: `k2:${key}, k1:${key}` }).encryptionKeys, `k2:${key}, k1:${key}`);
  for (const bad of ['nokey', `k1:${randomBytes(16).toString('base64')}`, `bad id:${key}`, ':abc']) {
    assert.throws(() => loadConfig({ ENCRYPTION_KEYS: bad }), /ENCRYPTION_KEYS/, bad);
  }
});

test('MFA needs a signed-in user: an API key gets 403, no credential 401', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { key } = await createCompanyKey(app, owner.companyId);
  assertCode(await post(app, '/v1/me/mfa/setup', key), 403, 'forbidden');
  assertCode(await post(app, '/v1/me/mfa/verify', key, { totp_code: '123456' }), 403, 'forbidden');
  assertCode(await post(app, '/v1/me/mfa/setup'), 401, 'unauthenticated');
  const res = await profile(app, key);
  assert.equal(res.json().mfa_enabled, null);
});

test('/me/mfa/verify spends the auth rate-limit budget', async (t) => {
  const app = await build(t, { rateLimit: { windowSeconds: 60, authenticated: 10_000, moduleKey: 10_000, anonymous: 10_000, auth: 2, feedback: 10_000 } });
  const owner = await seedOwner(app);
  // login spends one of the two.
  const { access_token: token } = await login(app, owner.email);
  const res = await post(app, '/v1/me/mfa/verify', token, { totp_code: '123456' });
  assert.match(String(res.headers['ratelimit-policy']), /^"auth";q=2;/);
  assertCode(await post(app, '/v1/me/mfa/verify', token, { totp_code: '123456' }), 429, 'rate_limited');
});

test("a refused enrolment code is located at the caller's own name for it: GraphQL verifyMfa's argument [\"code\"], REST [\"body\", \"totp_code\"]", async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  const setup = await post(app, '/v1/me/mfa/setup', token);
  const { secret } = setup.json() as SetupBody;
  for (const code of [wrongCode(secret), 'not-a-code']) {
    const gql = await app.inject({
      method: 'POST',
      url: '/graphql',
      headers: bearer(token),
      payload: { query: 'mutation($c: String!) { verifyMfa(code: $c) { enabled } }', variables: { c: code } },
    });
    const error = gql.json().errors[0];
    assert.equal(error.extensions.code, 'validation_error', gql.body);
    assert.deepEqual(error.extensions.errors.map((e: { loc: unknown }) => e.loc), [['code']]);
    const rest = await post(app, '/v1/me/mfa/verify', token, { totp_code: code });
    assertCode(rest, 422, 'validation_error');
    assert.deepEqual(rest.json().errors.map((e: { loc: unknown }) => e.loc), [['body', 'totp_code']]);
  }
});

test('GraphQL: setupMfa, verifyMfa, login with totpCode and User.mfaEnabled', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  const gql = (query: string, variables: object = {}, auth?: string) =>
    app.inject({ method: 'POST', url: '/graphql', headers: auth ? bearer(auth) : {}, payload: { query, variables } });

  const setup = (await gql('mutation { setupMfa { otpauthUri qrCode secret recoveryCodes } }', {}, token)).json();
  assert.equal(setup.errors, undefined, JSON.stringify(setup.errors));
  const { secret, recoveryCodes, otpauthUri, qrCode } = setup.data.setupMfa;
  assert.ok(otpauthUri.startsWith('otpauth://totp/Atrium:'));
  assert.ok(qrCode.startsWith('data:image/png;base64,'));
  assert.equal(recoveryCodes.length, 8);

  const me = '{ me { user { id mfaEnabled } } }';
  assert.equal((await gql(me, {}, token)).json().data.me.user.mfaEnabled, false);
  const bad = (await gql('mutation($c: String!) { verifyMfa(code: $c) { enabled } }', { c: wrongCode(secret) }, token)).json();
  assert.equal(bad.errors[0].extensions.code, 'validation_error');
  const good = (await gql('mutation($c: String!) { verifyMfa(code: $c) { enabled enabledAt } }', { c: totp(secret) }, token)).json();
  assert.equal(good.errors, undefined, JSON.stringify(good.errors));
  assert.equal(good.data.verifyMfa.enabled, true);
  assert.equal((await gql(me, {}, token)).json().data.me.user.mfaEnabled, true);
  await resetReplayGuard(app, owner.userId);

  const loginDoc = 'mutation($i: LoginInput!) { login(input: $i) { accessToken user { id mfaEnabled } } }';
  const required = (await gql(loginDoc, { i: { email: owner.email, password: PASSWORD } })).json();
  assert.equal(required.errors[0].extensions.code, 'mfa_required');
  assert.equal(required.errors[0].extensions.http.status, 401);
  const invalid = (await gql(loginDoc, { i: { email: owner.email, password: PASSWORD, totpCode: wrongCode(secret) } })).json();
  assert.equal(invalid.errors[0].extensions.code, 'mfa_invalid');
  const ok = (await gql(loginDoc, { i: { email: owner.email, password: PASSWORD, totpCode: totp(secret) } })).json();
  assert.equal(ok.errors, undefined, JSON.stringify(ok.errors));
  assert.deepEqual(ok.data.login.user, { id: owner.userId, mfaEnabled: true });
  const recovery = (await gql(loginDoc, { i: { email: owner.email, password: PASSWORD, totpCode: recoveryCodes[0] } })).json();
  assert.equal(recovery.errors, undefined, JSON.stringify(recovery.errors));
});
