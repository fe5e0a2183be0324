import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  addressCategory,
  checkUrl,
  guardedRequest,
  isForbiddenAddress,
  resolveGuarded,
  SsrfBlockedError,
  type Resolver,
} from '../src/net/ssrf-guard';

// Only loopback traffic in this file: "refused" cases assert the guard's decision,
// DNS answers come from injected resolvers.

test('isForbiddenAddress: every refused IPv4 range, at its edges', () => {
  const refused: [string, string][] = [
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.0.1', 'private'],
    ['192.168.255.255', 'private'],
    ['169.254.169.254', 'link_local'],
    ['169.254.0.1', 'link_local'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
  ];
  for (const [ip, category] of refused) {
    assert.equal(addressCategory(ip), category, ip);
    assert.equal(isForbiddenAddress(ip), true, ip);
  }
  for (const ip of ['8.8.8.8', '1.1.1.1', '172.15.255.255', '172.32.0.1', '100.63.255.255', '100.128.0.1', '169.253.255.255', '192.169.0.1', '11.0.0.1', '223.255.255.255', '142.250.74.106']) {
    assert.equal(addressCategory(ip), null, ip);
    assert.equal(isForbiddenAddress(ip), false, ip);
  }
});

test('isForbiddenAddress: IPv6 ranges and the forms that embed IPv4', () => {
  const refused: [string, string][] = [
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['::', 'unspecified'],
    ['fc00::1', 'private'],
    ['fd12:3456:789a::1', 'private'],
    ['fe80::1', 'link_local'],
    ['febf::1', 'link_local'],
    ['fe80::1%eth0', 'link_local'],
    ['fec0::1', 'private'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    // IPv4-mapped, in both spellings, judged as the IPv4 address.
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::FFFF:169.254.169.254', 'link_local'],
    ['::ffff:10.0.0.1', 'private'],
    ['0:0:0:0:0:ffff:c0a8:0101', 'private'],
    ['::ffff:0.0.0.0', 'unspecified'],
    ['::ffff:100.64.0.1', 'cgnat'],
    // IPv4-translated, IPv4-compatible, NAT64 and 6to4.
    ['::ffff:0:10.0.0.1', 'private'],
    ['::127.0.0.1', 'loopback'],
    ['64:ff9b::169.254.169.254', 'link_local'],
    ['64:ff9b::a00:1', 'private'],
    ['2002:7f00:1::1', 'loopback'],
    ['2002:c0a8:101::1', 'private'],
    ['[::1]', 'loopback'],
  ];
  for (const [ip, category] of refused) {
    assert.equal(addressCategory(ip), category, ip);
    assert.equal(isForbiddenAddress(ip), true, ip);
  }
  for (const ip of ['2606:4700:4700::1111', '2a00:1450:4001:80b::200a', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1']) {
    assert.equal(addressCategory(ip), null, ip);
    assert.equal(isForbiddenAddress(ip), false, ip);
  }
});

test('isForbiddenAddress: anything that is not an address is refused; allowLoopback lets loopback (only) through', () => {
  for (const bad of ['', 'localhost', '1.2.3', '256.1.1.1', '::gg', 'example.com', '1.2.3.4.5']) {
    assert.equal(addressCategory(bad), 'invalid', bad);
    assert.equal(isForbiddenAddress(bad, { allowLoopback: true }), true, bad);
  }
  for (const ip of ['127.0.0.1', '::1', '::ffff:127.0.0.1']) assert.equal(isForbiddenAddress(ip, { allowLoopback: true }), false, ip);
  for (const ip of ['10.0.0.1', '169.254.169.254', '0.0.0.0', '::', 'fe80::1', '192.168.1.1']) {
    assert.equal(isForbiddenAddress(ip, { allowLoopback: true }), true, ip);
  }
});

test('checkUrl: https only; http and loopback only with allowLoopback; IP literals in every spelling the URL parser accepts', () => {
  const ok = checkUrl('https://oauth2.googleapis.com/token');
  assert.ok(ok.ok);
  assert.equal(ok.ok && ok.hostname, 'oauth2.googleapis.com');
  assert.equal(ok.ok && ok.ipLiteral, false);

  const refused = (url: string, allowLoopback = false) => {
    const result = checkUrl(url, { allowLoopback });
    assert.equal(result.ok, false, url);
  };
  refused('http://oauth2.googleapis.com/token');
  refused('ftp://example.com/');
  refused('file:///etc/passwd');
  refused('gopher://example.com/');
  refused('not a url');
  refused('https://user:pass@example.com/');
  // The WHATWG parser normalizes decimal, hex, octal and short IPv4 forms to dotted quads.
  assert.equal(new URL('http://2130706433/').hostname, '127.0.0.1');
  assert.equal(new URL('http://0x7f.1/').hostname, '127.0.0.1');
  assert.equal(new URL('http://0177.0.0.1/').hostname, '127.0.0.1');
  assert.equal(new URL('https://0/').hostname, '0.0.0.0');
  for (const url of [
    'https://127.0.0.1/',
    'https://2130706433/',
    'https://0x7f000001/',
    'https://0177.0.0.1/',
    'https://127.1/',
    'https://0/',
    'https://0.0.0.0/',
    'https://169.254.169.254/latest/meta-data/',
    'https://0xa9fea9fe/',
    'https://10.1.2.3/',
    'https://[::1]/',
    'https://[::ffff:127.0.0.1]/',
    'https://[::ffff:a9fe:a9fe]/',
    'https://[fe80::1]/',
    'https://[fd00::1]/',
    'https://[::]/',
  ]) {
    refused(url);
  }
  // With the test-only switch: http and loopback pass, other internal addresses still do not.
  assert.ok(checkUrl('http://127.0.0.1:8080/token', { allowLoopback: true }).ok);
  assert.ok(checkUrl('http://[::1]:8080/token', { allowLoopback: true }).ok);
  refused('http://169.254.169.254/', true);
  refused('http://10.0.0.1/', true);
  refused('http://0.0.0.0/', true);
  const public4 = checkUrl('https://8.8.8.8/');
  assert.ok(public4.ok && public4.ipLiteral);
});

test('checkUrl: allowHttp accepts http for web pages and changes nothing else', () => {
  const web = checkUrl('http://example.com/article', { allowHttp: true });
  assert.ok(web.ok && web.hostname === 'example.com');
  assert.ok(checkUrl('https://example.com/article', { allowHttp: true }).ok);
  for (const url of [
    'http://127.0.0.1/',
    'http://[::1]/',
    'http://2130706433/',
    'http://169.254.169.254/latest/meta-data/',
    'http://10.0.0.1/',
    'http://[fd00::1]/',
    'http://100.64.0.1/',
    'http://user:pass@example.com/',
    'ftp://example.com/',
    'file:///etc/passwd',
  ]) {
    assert.equal(checkUrl(url, { allowHttp: true }).ok, false, url);
  }
});

test('resolveGuarded: every resolved address is checked; IP literals skip the resolver', async () => {
  const calls: string[] = [];
  const dnsAnswers: Record<string, string[]> = {
    'internal.example.com': ['10.0.0.5'],
    'mixed.example.com': ['93.184.216.34', '192.168.1.10'],
    'metadata.example.com': ['169.254.169.254'],
    'mapped.example.com': ['::ffff:127.0.0.1'],
    'public.example.com': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
    'loopback.example.com': ['127.0.0.1'],
  };
  const resolve: Resolver = async (hostname) => {
    calls.push(hostname);
    const answer = dnsAnswers[hostname];
    if (!answer) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  for (const host of ['internal', 'mixed', 'metadata', 'mapped', 'loopback']) {
    await assert.rejects(resolveGuarded(`https://${host}.example.com/token`, { resolve }), SsrfBlockedError, host);
  }
  await assert.rejects(resolveGuarded('https://nowhere.example.com/', { resolve }), SsrfBlockedError);
  await assert.rejects(resolveGuarded('https://empty.example.com/', { resolve: async () => [] }), SsrfBlockedError);
  const decided = await resolveGuarded('https://public.example.com/token', { resolve });
  assert.deepEqual(decided.address, { address: '93.184.216.34', family: 4 });
  const loopback = await resolveGuarded('http://loopback.example.com/token', { resolve, allowLoopback: true });
  assert.equal(loopback.address.address, '127.0.0.1');

  calls.length = 0;
  await assert.rejects(resolveGuarded('https://2130706433/', { resolve }), SsrfBlockedError);
  const literal = await resolveGuarded('https://8.8.8.8/', { resolve });
  assert.equal(literal.address.address, '8.8.8.8');
  assert.deepEqual(calls, [], 'IP-literal hosts are judged without DNS');
});

// ---- the request path, against loopback only ----------------------------------------

const seen: { method: string; url: string; host: string | undefined; body: string }[] = [];
let server: http.Server;
let port: number;
let hang = false;

before(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, host: req.headers.host, body });
      if (hang) return; // never answers
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end('{"error":"unsupported_grant_type"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

test('guardedRequest reaches a loopback server only with allowLoopback', async () => {
  seen.length = 0;
  const response = await guardedRequest(`http://127.0.0.1:${port}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=',
    allowLoopback: true,
  });
  assert.equal(response.status, 400);
  assert.equal(response.address, '127.0.0.1');
  assert.match(response.body, /unsupported_grant_type/);
  assert.deepEqual(seen, [{ method: 'POST', url: '/token', host: `127.0.0.1:${port}`, body: 'grant_type=' }]);
});

test('without allowLoopback the guard refuses loopback before any connection', async () => {
  seen.length = 0;
  for (const url of [`http://127.0.0.1:${port}/token`, `https://127.0.0.1:${port}/token`, `https://[::ffff:127.0.0.1]:${port}/`, `https://2130706433:${port}/`]) {
    await assert.rejects(guardedRequest(url, { method: 'POST', body: 'x' }), SsrfBlockedError, url);
  }
  // A name whose DNS answer is loopback is refused too.
  const resolve: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];
  await assert.rejects(guardedRequest(`https://token.example.com:${port}/token`, { resolve }), SsrfBlockedError);
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.deepEqual(seen, [], 'the server saw no request');
});

test('the connection goes to the checked address: the host name is resolved once, never again', async () => {
  seen.length = 0;
  let lookups = 0;
  const resolve: Resolver = async () => {
    lookups += 1;
    // A rebinding DNS server would answer differently the second time.
    return lookups === 1 ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '169.254.169.254', family: 4 }];
  };
  const response = await guardedRequest(`http://token.example.com:${port}/token`, { resolve, allowLoopback: true });
  assert.equal(response.status, 400);
  assert.equal(response.address, '127.0.0.1');
  assert.equal(lookups, 1);
  assert.equal(seen.length, 1);
  assert.equal(seen[0]!.host, `token.example.com:${port}`, 'the Host header keeps the name');
});

test('a server that does not answer fails the request within the time limit', async () => {
  hang = true;
  try {
    const started = Date.now();
    await assert.rejects(guardedRequest(`http://127.0.0.1:${port}/slow`, { allowLoopback: true, timeoutMs: 200 }), (error: Error) => {
      assert.ok(!(error instanceof SsrfBlockedError));
      assert.match(error.message, /no answer within 200 ms/);
      return true;
    });
    assert.ok(Date.now() - started < 3000);
  } finally {
    hang = false;
  }
});
