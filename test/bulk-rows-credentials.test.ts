import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { call, cast } from './admin-helper';
import { buildWithAi } from './ai-helper';
import { fakeOpenAi } from './fake-ai';
import { makeCsv, multipartForm } from './fixtures/document-files';
import Database from 'better-sqlite3';
import { SOCKET_RECHECK_MS } from '../src/host/live-credentials';
import { EXTERNAL_WRITES_SEEN_MS } from '../src/db/change-signal';
import { PROBLEM_DETAILS_SINCE, SUPPORTED_API_VERSIONS } from '../src/version';

/**
 * A live NDJSON rows stream (GET /v1/bulk/jobs/{id}/rows) is a live
 * credential as a graphql-ws socket is: it ends once its credential would
 * be refused or its caller may no longer read the job, with a last
 * {error} line, and sends no row after that.
 */

const ROWS = 40;

interface RowsStream {
  lines: Record<string, unknown>[];
  ended: Promise<number>;
}

/** Follows the rows over a real connection, as a dashboard does; `ended` resolves with the time the response ended. */
function follow(port: number, id: string, token: string, headers: Record<string, string> = {}): RowsStream {
  const lines: Record<string, unknown>[] = [];
  let buffer = '';
  const ended = new Promise<number>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: `/v1/bulk/jobs/${id}/rows`, headers: { ...headers, authorization: `Bearer ${token}` } }, (res) => {
        assert.equal(res.statusCode, 200);
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffer += chunk;
          let newline: number;
          while ((newline = buffer.indexOf('\n')) >= 0) {
            lines.push(JSON.parse(buffer.slice(0, newline)) as Record<string, unknown>);
            buffer = buffer.slice(newline + 1);
          }
        });
        res.on('end', () => resolve(Date.now()));
        res.on('error', reject);
      })
      .on('error', reject);
  });
  return { lines, ended };
}

async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A listening app whose model answers each row after 100 ms, one row at a time: a 40-row job runs about 4 s. */
async function slowJobServer(t: TestContext, config: Parameters<typeof buildWithAi>[2] = {}) {
  const fake = await fakeOpenAi(t, (request) => ({ content: `out:${request.messages.at(-1)!.content}`, delayMs: 100, usage: { prompt: 5, completion: 5 } }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url }, { ...config, bulk: { concurrency: 1, rowAttempts: 1, maxRows: 1000, maxConcurrent: 3 } } as never);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as AddressInfo).port;
  const people = await cast(app);
  return { app, port, ...people };
}

async function submitJob(app: FastifyInstance, token: string): Promise<string> {
  const form = multipartForm({ input_column: 'q', prompt_template: '{text}' }, { content: makeCsv([['q'], ...Array.from({ length: ROWS }, (_, i) => [`q${i + 1}`])]), filename: 'q.csv' });
  const created = await app.inject({ method: 'POST', url: '/v1/bulk/jobs', payload: form.payload, headers: { ...form.headers, authorization: `Bearer ${token}` } });
  assert.equal(created.statusCode, 202, created.body);
  return created.json().id as string;
}

/** The stream ended soon after `since`, before the job did, its last line the problem `code`, and no row after it. */
async function assertEndedWith(app: FastifyInstance, stream: RowsStream, since: number, code: string, status: number, id: string, slack = 0) {
  const endedAt = await stream.ended;
  assert.ok(endedAt - since < 2000 + slack, `the stream ended ${endedAt - since} ms after the change`);
  const last = stream.lines.at(-1)!;
  assert.equal((last.error as { code: string }).code, code, JSON.stringify(last));
  assert.equal((last.error as { status: number }).status, status);
  const rows = stream.lines.slice(0, -1);
  assert.ok(rows.every((line) => typeof line.row === 'number'));
  assert.ok(rows.length < ROWS, `${rows.length} rows were sent`);
  const [job] = app.kernel.reads.all<{ status: string }>('select status from bulk_jobs where id = ?', id);
  assert.equal(job!.status, 'running', 'the stream ended before the job did');
}

test('a live rows stream ends (last line 401 token_invalid) the moment its company key is revoked', async (t) => {
  const { app, port, tokens, keyA } = await slowJobServer(t);
  const id = await submitJob(app, tokens.keyA);
  const stream = follow(port, id, tokens.keyA);
  await until(() => stream.lines.length >= 2, 'two rows');
  const revokedAt = Date.now();
  const revoked = await call(app, tokens.ownerA, 'DELETE', `/v1/admin/api-keys/${keyA.id}`);
  assert.equal(revoked.statusCode, 204, revoked.body);
  await assertEndedWith(app, stream, revokedAt, 'token_invalid', 401, id);
});

test('a rows stream pinned before problem details ends with a LegacyError line {detail, code}, as its error answers are', async (t) => {
  const { app, port, tokens, keyA } = await slowJobServer(t);
  const legacy = SUPPORTED_API_VERSIONS.find((version) => version < PROBLEM_DETAILS_SINCE)!;
  const id = await submitJob(app, tokens.keyA);
  const stream = follow(port, id, tokens.keyA, { 'x-service-api-version': legacy });
  await until(() => stream.lines.length >= 2, 'two rows');
  assert.equal((await call(app, tokens.ownerA, 'DELETE', `/v1/admin/api-keys/${keyA.id}`)).statusCode, 204);
  await stream.ended;
  assert.deepEqual(Object.keys(stream.lines.at(-1)!.error as object).sort(), ['code', 'detail']);
  assert.equal((stream.lines.at(-1)!.error as { code: string }).code, 'token_invalid');
});

test('a live rows stream ends (last line 401 token_invalid) the moment its session is logged out', async (t) => {
  const { app, port, tokens } = await slowJobServer(t);
  const id = await submitJob(app, tokens.memberA);
  const stream = follow(port, id, tokens.memberA);
  await until(() => stream.lines.length >= 2, 'two rows');
  const loggedOutAt = Date.now();
  assert.equal((await call(app, tokens.memberA, 'POST', '/v1/auth/logout')).statusCode, 204);
  await assertEndedWith(app, stream, loggedOutAt, 'token_invalid', 401, id);
});

test("an admin demoted to member stops receiving another member's job rows at once (last line 404 not_found); the member's own stream goes on", async (t) => {
  const { app, port, tokens, adminA } = await slowJobServer(t);
  const id = await submitJob(app, tokens.memberA);
  const admins = follow(port, id, tokens.adminA);
  const owners = follow(port, id, tokens.memberA);
  await until(() => admins.lines.length >= 2, 'two rows');
  const demotedAt = Date.now();
  const demoted = await call(app, tokens.ownerA, 'PATCH', `/v1/admin/users/${adminA.userId}`, { role: 'member' });
  assert.equal(demoted.statusCode, 200, demoted.body);
  await assertEndedWith(app, admins, demotedAt, 'not_found', 404, id);
  // Another user's change leaves the job's own member alone: every row, to the end.
  await owners.ended;
  assert.deepEqual(
    owners.lines.map((line) => line.row),
    Array.from({ length: ROWS }, (_, i) => i + 1),
  );
});

test('a live rows stream does not outlive its access token: it ends at expiry with a last line 401 token_expired', async (t) => {
  const { app, port, tokens } = await slowJobServer(t, { accessTokenTtlSeconds: 3 });
  const id = await submitJob(app, tokens.memberA);
  const stream = follow(port, id, tokens.memberA);
  await until(() => stream.lines.length >= 2, 'two rows');
  const { exp } = JSON.parse(Buffer.from(tokens.memberA.split('.')[1]!, 'base64url').toString()) as { exp: number };
  assert.ok(exp * 1000 > Date.now(), 'the token expires while the stream runs');
  await assertEndedWith(app, stream, exp * 1000, 'token_expired', 401, id, SOCKET_RECHECK_MS);
});

test("a live rows stream ends (last line 403 ip_not_allowed) once the company's allow-list leaves its address out, whichever process wrote it", async (t) => {
  const { app, port, tokens, a } = await slowJobServer(t);
  // The company's own policy (a row of its own; without one the defaults apply).
  assert.equal((await call(app, tokens.ownerA, 'PATCH', '/v1/admin/security/policy', { session_idle_timeout_minutes: 60 })).statusCode, 200);
  const id = await submitJob(app, tokens.keyA);
  const stream = follow(port, id, tokens.keyA);
  await until(() => stream.lines.length >= 2, 'two rows');
  // Written by another process (a standalone admin subgraph, the CLI): seen through the database, not an event.
  const other = new Database(app.config.databaseFile);
  t.after(() => other.close());
  other.pragma('busy_timeout = 5000');
  const changedAt = Date.now();
  const changed = other.prepare('update security_policies set ip_allowlist = ?, version = version + 1 where company_id = ?').run(JSON.stringify(['10.0.0.0/8']), a.companyId);
  assert.equal(changed.changes, 1);
  await assertEndedWith(app, stream, changedAt, 'ip_not_allowed', 403, id, EXTERNAL_WRITES_SEEN_MS + SOCKET_RECHECK_MS);
});
