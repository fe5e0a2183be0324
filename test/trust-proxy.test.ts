import { test } from 'node:test';
import assert from 'node:assert/strict';
import { trustProxySetting } from '../src/kernel/config';
import { clientAddress, proxyTrust } from '../src/kernel/trust-proxy';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildApp } from '../src/app';
import { assertCode, bearer, login, PASSWORD, seedOwner } from './helper';

test('TRUST_PROXY reads as none, a number of proxies (true is one) or their addresses; anything else stops the start', () => {
  for (const raw of [undefined, '', 'false', '0', ' FALSE ']) assert.equal(trustProxySetting(raw), false, String(raw));
  assert.equal(trustProxySetting('true'), 1);
  assert.equal(trustProxySetting('2'), 2);
  assert.deepEqual(trustProxySetting('10.0.0.1, 10.1.0.0/16,::1'), ['10.0.0.1', '10.1.0.0/16', '::1']);
  for (const raw of ['yes', '10.0.0.0/8/1', 'proxy.internal', '10.0.0.0/x', ',']) assert.throws(() => trustProxySetting(raw), /TRUST_PROXY/, raw);
});

test('the client address is the entry the trusted proxies appended, never a left-most entry the client wrote', () => {
  const forged = '10.9.9.9, 203.0.113.9';
  assert.equal(clientAddress('127.0.0.1', forged, false), '127.0.0.1');
  assert.equal(clientAddress('127.0.0.1', forged, proxyTrust(1)), '203.0.113.9');
  assert.equal(clientAddress('127.0.0.1', forged, proxyTrust(2)), '10.9.9.9');
  assert.equal(clientAddress('127.0.0.1', forged, proxyTrust(['127.0.0.1'])), '203.0.113.9');
  assert.equal(clientAddress('::ffff:127.0.0.1', forged, proxyTrust(['127.0.0.0/8'])), '203.0.113.9');
  assert.equal(clientAddress('127.0.0.1', forged, proxyTrust(['127.0.0.1', '203.0.113.0/24'])), '10.9.9.9');
  // A request that did not come through a listed proxy keeps its own address, whatever it claims.
  assert.equal(clientAddress('198.51.100.7', forged, proxyTrust(['127.0.0.1'])), '198.51.100.7');
  assert.equal(clientAddress('127.0.0.1', undefined, proxyTrust(1)), '127.0.0.1');
});

test('TRUST_PROXY=true (one proxy): a forged X-Forwarded-For entry does not get a sign-in past the IP allow-list', async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-proxy-'));
  const app = await buildApp({ env: { DATA_DIR: dataDir, SCRYPT_COST: '1024', TRUST_PROXY: 'true' }, logger: false });
  t.after(async () => {
    await app.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  const through = (forwarded: string) => ({ 'x-forwarded-for': forwarded });
  const set = await app.inject({ method: 'PATCH', url: '/v1/admin/security/policy', headers: { ...bearer(token), ...through('10.1.2.3') }, payload: { ip_allowlist: ['10.0.0.0/8'] } });
  assert.equal(set.statusCode, 200, set.body);
  const signIn = (forwarded: string) => app.inject({ method: 'POST', url: '/v1/auth/login', headers: through(forwarded), payload: { email: owner.email, password: PASSWORD } });
  // The proxy appended the real client (203.0.113.9) after what the client sent.
  assertCode(await signIn('10.9.9.9, 203.0.113.9'), 403, 'ip_not_allowed');
  assert.equal((await signIn('203.0.113.9, 10.1.2.3')).statusCode, 200);
  assertCode(await app.inject({ url: '/v1/me/profile', headers: { ...bearer(token), ...through('10.9.9.9, 203.0.113.9') } }), 403, 'ip_not_allowed');
});
