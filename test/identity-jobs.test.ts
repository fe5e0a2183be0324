import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decodeJwt } from 'jose';
import { assertCode, bearer, build, login, seedOwner, seedUser, sql } from './helper';
import { boot } from '../src/boot';
import { loadConfig } from '../src/config';

const MINUTE = 60_000;

test('session idle expiry: the job ends the sessions idle past their company policy (with a minute of margin) and announces each', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const other = await seedOwner(app, undefined, 'Other Co');
  const member = await seedUser(app, owner.companyId);
  const ownerToken = (await login(app, owner.email)).access_token;
  const policy = await app.inject({ method: 'PUT', url: '/v1/admin/security/policy', headers: bearer(ownerToken), payload: { session_idle_timeout_minutes: 5 } });
  assert.equal(policy.statusCode, 200, policy.body);

  const idle = await login(app, member.email);
  const borderline = await login(app, member.email);
  const fresh = await login(app, member.email);
  const otherCompany = await login(app, other.email);
  const sid = (token: string) => decodeJwt(token).sid as string;
  const age = (token: string, ms: number) => sql(app, 'update sessions set last_seen_at = ? where id = ?', [Date.now() - ms, sid(token)]);
  await age(idle.access_token, 10 * MINUTE);
  // Idle to a request already, but within the minute `last_seen_at` may lag behind: the job leaves it.
  await age(borderline.access_token, 5.5 * MINUTE);
  // Another company has no idle rule: its sessions never end for idleness.
  await age(otherCompany.access_token, 600 * MINUTE);

  const announced: string[] = [];
  app.kernel.events.subscribe('session.revoked', ({ sessionId }) => announced.push(sessionId));
  const ended = await app.domains.identity.housekeeping.expireIdleSessions();
  assert.deepEqual(ended, [sid(idle.access_token)]);
  assert.deepEqual(announced, ended);
  const [row] = await sql<{ revoked_reason: string }>(app, 'select revoked_reason from sessions where id = ?', [sid(idle.access_token)]);
  assert.equal(row!.revoked_reason, 'idle_timeout');
  assertCode(await app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refresh_token: idle.refresh_token } }), 401, 'token_invalid');
  for (const alive of [fresh, otherCompany]) {
    assert.equal((await app.inject({ url: '/v1/me/profile', headers: bearer(alive.access_token) })).statusCode, 200);
  }
  assert.deepEqual(await app.domains.identity.housekeeping.expireIdleSessions(), [], 'a second run finds nothing');
});

test('expired-link cleanup: old one-time tokens, SSO states and MFA challenges go, lapsed invitations are marked expired, live ones stay', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  const now = Date.now();
  const day = 24 * 60 * MINUTE;
  const token = (id: string, expiresAt: number) =>
    sql(app, 'insert into one_time_tokens (id, user_id, purpose, token_hash, expires_at, created_at) values (?, ?, ?, ?, ?, ?)', [
      id, owner.userId, 'password_reset', `hash-${id}`, expiresAt, expiresAt - MINUTE,
    ]);
  await token('00000000-0000-4000-8000-000000000001', now - 8 * day);
  await token('00000000-0000-4000-8000-000000000002', now - day);
  await token('00000000-0000-4000-8000-000000000003', now + day);
  const state = (id: string, expiresAt: number) =>
    sql(app, "insert into sso_states (id, state_hash, provider, nonce, code_verifier, intent, created_at, expires_at) values (?, ?, 'google', 'n', 'v', 'login', ?, ?)", [
      id, `state-${id}`, expiresAt - 5 * MINUTE, expiresAt,
    ]);
  await state('00000000-0000-4000-8000-000000000011', now - 2 * 60 * MINUTE);
  await state('00000000-0000-4000-8000-000000000012', now - 10 * MINUTE);
  const invite = (id: string, email: string, expiresAt: number) =>
    sql(app, "insert into invitations (id, company_id, email, role, token_hash, status, expires_at, created_at) values (?, ?, ?, 'member', ?, 'pending', ?, ?)", [
      id, owner.companyId, email, `inv-${email}`, expiresAt, now - day,
    ]);
  await invite('00000000-0000-4000-8000-000000000021', 'gone@example.com', now - MINUTE);
  await invite('00000000-0000-4000-8000-000000000022', 'live@example.com', now + day);

  const run = await app.domains.identity.housekeeping.removeExpiredLinks();
  assert.deepEqual(run, { oneTimeTokens: 1, ssoStates: 1, ssoMfaChallenges: 0, invitationsExpired: 1 });
  assert.deepEqual((await sql<{ id: string }>(app, 'select id from one_time_tokens order by id')).map((r) => r.id.slice(-1)), ['2', '3']);
  assert.deepEqual((await sql<{ id: string }>(app, 'select id from sso_states')).map((r) => r.id.slice(-2)), ['12']);
  assert.deepEqual(
    await sql(app, 'select email, status from invitations order by email'),
    [
      { email: 'gone@example.com', status: 'expired' },
      { email: 'live@example.com', status: 'pending' },
    ],
  );
});

test('a serving boot schedules the mail, deletion, idle-session and cleanup sweeps; a CLI boot of every domain schedules and runs nothing', async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-sweeps-'));
  t.after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', SCRYPT_COST: '1024' });
  const pending = async (atrium: Awaited<ReturnType<typeof boot>>) =>
    (await atrium.kernel.jobs.list({ status: 'pending', limit: 50 })).map((job) => job.kind).sort();

  const cli = await boot(config);
  // A job left by a request (a password reset) waits for a server: the CLI process never runs it.
  await cli.domains.identity.passwordReset.request('nobody@example.com', { ip: '127.0.0.1', requestId: 'r1', userAgent: null });
  assert.deepEqual(await pending(cli), ['identity.password_reset_mail']);
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.deepEqual(await pending(cli), ['identity.password_reset_mail'], 'a CLI boot runs no job');
  await cli.close();

  const server = await boot(config, { background: true });
  t.after(() => server.close());
  await server.kernel.worker.drain();
  assert.deepEqual(await pending(server), [
    'billing.hold_expiry',
    'bulk.upload_sweep',
    'identity.account_deletion',
    'identity.expired_link_cleanup',
    'identity.session_idle_expiry',
    'jobs.prune',
    'mail.housekeeping',
    'payments.monthly_allocation',
    'research.expiry',
  ]);
});
