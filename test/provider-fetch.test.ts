import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { execFile, execFileSync } from 'node:child_process';
import zlib from 'node:zlib';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { providerFetch } from '../src/domains/ai/provider-fetch';

/** The engine's fetch for the official SDK, against a loopback server that answers as a provider would. */

const completion = (content: string) => JSON.stringify({ id: 'c1', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }] });

async function server(t: TestContext, handle: http.RequestListener) {
  const connections = { count: 0 };
  const s = http.createServer(handle);
  s.on('connection', () => connections.count++);
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => (s.closeAllConnections(), s.close(resolve))));
  const base = `http://127.0.0.1:${(s.address() as AddressInfo).port}/v1`;
  const client = new OpenAI({ baseURL: base, apiKey: 'k', maxRetries: 0, timeout: 5_000, fetch: providerFetch });
  return { base, client, connections };
}

const ask = (client: OpenAI, signal?: AbortSignal) => client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }, { signal });

test('a completion arrives whole over one kept-alive connection, with the request as the SDK made it', async (t) => {
  const seen: { method?: string; url?: string; auth?: string; length?: string; body: string }[] = [];
  const { client, connections } = await server(t, (req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, auth: req.headers.authorization, length: req.headers['content-length'], body });
      res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'r1' }).end(completion('héllo'));
    });
  });
  const first = await ask(client).withResponse();
  assert.equal(first.data.choices[0]!.message.content, 'héllo');
  assert.equal(first.response.headers.get('x-request-id'), 'r1');
  await ask(client);
  assert.equal(connections.count, 1);
  assert.equal(seen[0]!.method, 'POST');
  assert.equal(seen[0]!.url, '/v1/chat/completions');
  assert.equal(seen[0]!.auth, 'Bearer k');
  assert.equal(Number(seen[0]!.length), Buffer.byteLength(seen[0]!.body));
  assert.deepEqual(JSON.parse(seen[0]!.body).messages, [{ role: 'user', content: 'hi' }]);
});

test('a gzip or br body is decoded, as fetch decodes it', async (t) => {
  const { client } = await server(t, (req, res) => {
    const coding = req.headers['x-test-coding'] === 'br' ? 'br' : 'gzip';
    const body = Buffer.from(completion(`coded ${coding}`));
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': coding }).end(coding === 'br' ? zlib.brotliCompressSync(body) : zlib.gzipSync(body));
  });
  assert.equal((await ask(client)).choices[0]!.message.content, 'coded gzip');
  const br = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }, { headers: { 'x-test-coding': 'br' } });
  assert.equal(br.choices[0]!.message.content, 'coded br');
});

test("a provider's error status reaches the SDK with its body and headers (a 429 is a RateLimitError with its retry-after)", async (t) => {
  const { client } = await server(t, (_req, res) => {
    res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' }).end(JSON.stringify({ error: { message: 'slow down', type: 'rate_limit' } }));
  });
  const error = await ask(client).catch((e: unknown) => e);
  assert.ok(error instanceof OpenAI.RateLimitError, String(error));
  assert.equal(error.status, 429);
  assert.equal(error.headers?.get('retry-after'), '7');
  assert.match(error.message, /slow down/);
});

test('a redirect is followed', async (t) => {
  const { client } = await server(t, (req, res) => {
    if (req.url === '/v1/chat/completions') return void res.writeHead(307, { location: '/v2/chat/completions' }).end();
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(completion(`at ${req.url}`)));
  });
  assert.equal((await ask(client)).choices[0]!.message.content, 'at /v2/chat/completions');
});

test('the signal aborts a call waiting for its answer, and one reading its body: the SDK reports the abort', async (t) => {
  const { client } = await server(t, (req, res) => {
    if (req.headers['x-test'] === 'partial') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"id":"c1","choices":[');
      return;
    }
    // Never answers.
  });
  const waiting = new AbortController();
  setTimeout(() => waiting.abort(), 50);
  assert.ok((await ask(client, waiting.signal).catch((e: unknown) => e)) instanceof OpenAI.APIUserAbortError);

  const reading = new AbortController();
  setTimeout(() => reading.abort(), 50);
  const error = await client.chat.completions
    .create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }, { signal: reading.signal, headers: { 'x-test': 'partial' } })
    .catch((e: unknown) => e);
  assert.ok(error instanceof Error && (error instanceof OpenAI.APIUserAbortError || error.name === 'AbortError'), String(error));
});

test('a provider that cannot be reached is a connection error', async () => {
  // A port nothing listens on: bound, then closed.
  const probe = http.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'k', maxRetries: 0, timeout: 5_000, fetch: providerFetch });
  const error = await ask(client).catch((e: unknown) => e);
  assert.ok(error instanceof OpenAI.APIConnectionError, String(error));
  assert.ok(!(error instanceof OpenAI.APIConnectionTimeoutError));
});

test('a provider over https (its certificate trusted through NODE_EXTRA_CA_CERTS, as an operator would) answers through the same fetch', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-provider-tls-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const [key, cert] = [path.join(dir, 'key.pem'), path.join(dir, 'cert.pem')];
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-days', '1', '-keyout', key, '-out', cert], { stdio: 'ignore' });
  const s = https.createServer({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) }, (req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(completion(`over ${req.socket.constructor.name}`)));
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => (s.closeAllConnections(), s.close(resolve))));
  const port = (s.address() as AddressInfo).port;
  // The certificate store is read when a process starts: the SDK runs in a child that trusts the test's certificate.
  const script = `
    const OpenAI = require('openai').default;
    const { providerFetch } = require(${JSON.stringify(path.join(__dirname, '../src/domains/ai/provider-fetch.js'))});
    new OpenAI({ baseURL: 'https://127.0.0.1:${port}/v1', apiKey: 'k', maxRetries: 0, fetch: providerFetch })
      .chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })
      .then((c) => process.stdout.write(c.choices[0].message.content), (e) => process.stdout.write('failed: ' + e.message));`;
  const run = (env: Record<string, string>) =>
    new Promise<string>((resolve, reject) => {
      execFile(process.execPath, ['-e', script], { env: { ...process.env, ...env }, cwd: path.join(__dirname, '..') }, (error, stdout) => (error ? reject(error) : resolve(stdout)));
    });
  assert.equal(await run({ NODE_EXTRA_CA_CERTS: cert }), 'over TLSSocket');
  // Not trusted: refused, not sent in the clear.
  assert.match(await run({ NODE_EXTRA_CA_CERTS: '' }), /^failed: Connection error/);
});
