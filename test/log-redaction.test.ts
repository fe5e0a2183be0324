import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app';
import { bearer, login, seedOwner, sql } from './helper';
import { sha256Hex } from '../src/auth/tokens';
import { stderrLogger } from '../src/kernel/logger';
import { loggableError } from '../src/kernel/log-redaction';
import { toGraphQLError } from '../subgraphs/errors';
import { GraphQLError } from 'graphql';
import { AppError } from '../src/errors/catalog';

/** An app logging JSON lines at `level` into an array (as test/logging.test.ts). */
async function appWithLog(t: { after: (fn: () => unknown) => void }, level = 'info') {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-redaction-'));
  const lines: string[] = [];
  const app = await buildApp({
    env: { DATA_DIR: dataDir, SCRYPT_COST: '1024' },
    logger: { level, stream: { write: (line: string) => void lines.push(line) } },
    config: { rateLimit: { windowSeconds: 60, authenticated: 10_000, moduleKey: 10_000, anonymous: 10_000, auth: 10_000, feedback: 10_000 } },
  });
  t.after(async () => {
    await app.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  return { app, lines };
}

/** Secret-shaped text: a scrypt hash, a SHA-256 hex digest (key and token hashes), an API key, a JWT. */
const SECRET_SHAPES = [/scrypt\$/, /\b[0-9a-f]{64}\b/, /svc_[A-Za-z0-9]/, /eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\./];

function assertNoSecrets(log: string, secrets: string[]) {
  for (const secret of secrets) assert.ok(!log.includes(secret), `the log holds ${secret}:\n${log}`);
  for (const shape of SECRET_SHAPES) assert.doesNotMatch(log, shape, `the log holds text shaped like a secret:\n${log}`);
}

async function invitationToken(app: FastifyInstance, token: string, email: string): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/v1/admin/invitations', headers: bearer(token), payload: { email, role: 'member' } });
  assert.equal(res.statusCode, 201, res.body);
  await app.kernel.worker.drain();
  const [mail] = await sql<{ text: string }>(app, "select text from mail_outbox where to_address = ? and template = 'invitation'", [email]);
  return /accept-invitation\?token=([A-Za-z0-9_-]+)/.exec(mail!.text)![1]!;
}

test('a failed user insert (unique constraint) logs its class, constraint and request id, and no password, hash or token', async (t) => {
  const { app, lines } = await appWithLog(t);
  const owner = await seedOwner(app);
  const { access_token: accessToken } = await login(app, owner.email);
  const invitation = await invitationToken(app, accessToken, 'joiner@example.com');
  // A constraint the service does not check first: the insert of the new user (with its password hash) fails.
  await sql(app, "update users set name = 'Taken' where id = ?", [owner.userId]);
  await sql(app, 'create unique index test_users_name on users (name)');
  const password = 'a-long-secret-password-1';
  lines.length = 0;

  const res = await app.inject({
    method: 'POST',
    url: '/v1/invitations/accept',
    headers: { 'x-request-id': 'redaction-test-1' },
    payload: { token: invitation, password, name: 'Taken' },
  });
  assert.equal(res.statusCode, 500, res.body);
  // Nothing was written: the invitation is still pending, no user was created.
  assert.deepEqual(await sql(app, "select status from invitations where email = 'joiner@example.com'"), [{ status: 'pending' }]);
  assert.equal((await sql(app, "select id from users where email = 'joiner@example.com'")).length, 0);

  const log = lines.join('');
  assertNoSecrets(log, [password, invitation, sha256Hex(invitation), accessToken]);
  const errorLine = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.level === 50 && l.err);
  assert.ok(errorLine, `no error line in:\n${log}`);
  assert.equal(errorLine.reqId, 'redaction-test-1');
  const err = errorLine.err as { type: string; message: string; stack: string; code: string };
  assert.equal(err.type, 'UniqueConstraintViolationException');
  assert.match(err.message, /UNIQUE constraint failed: users\.name/);
  assert.match(err.message, /insert into `users`/, 'the statement itself stays (without its values)');
  assert.match(err.stack, /UniqueConstraintViolationException/);
});

test('a failed API key insert logs no key, key hash or token', async (t) => {
  const { app, lines } = await appWithLog(t);
  const owner = await seedOwner(app);
  const { access_token: accessToken } = await login(app, owner.email);
  await sql(app, 'create unique index test_api_key_names on api_keys (name)');
  const create = () => app.inject({ method: 'POST', url: '/v1/admin/api-keys', headers: bearer(accessToken), payload: { name: 'ci' } });
  const first = await create();
  assert.equal(first.statusCode, 201, first.body);
  lines.length = 0;

  const second = await create();
  assert.equal(second.statusCode, 500, second.body);
  const log = lines.join('');
  assertNoSecrets(log, [first.json().key, sha256Hex(first.json().key), accessToken]);
  assert.match(log, /UNIQUE constraint failed: api_keys\.name/);
  assert.equal((await sql(app, 'select id from api_keys')).length, 1, 'no partial write');
});

test('the app logger scrubs SQL literals, URL credentials and tokens from error text, and secret-named keys at any depth', async (t) => {
  const { app, lines } = await appWithLog(t);
  const hash = 'scrypt$1024$8$1$c2FsdA$a2V5';
  // An error as knex words it when it inlines the values (its default), or as an ORM raw fragment leaves it.
  const failed = new Error(
    "insert into `users` (`email`, `password_hash`, `photo`) values ('it''s@example.com', '" + hash + "', X'00ff') - SQLITE_CONSTRAINT_UNIQUE: UNIQUE constraint failed: users.email",
  );
  Object.assign(failed, { code: 'SQLITE_CONSTRAINT_UNIQUE', sqlMessage: `values ('${hash}')` });
  const cut = new Error("select * from `users` where `email` = 'a\u0000b@example.com' limit 1 - unrecognized token: \"'a\"");
  app.log.error({ err: failed }, 'insert failed');
  app.log.error({ err: cut }, 'select failed');
  app.log.error(new Error('connect to smtp://mailer:hunter2@smtp.example.com:587 refused'));
  app.log.warn(
    { job: { payload: { user: { passwordHash: hash, totpSecret: 'JBSWY3DPEHPK3PXP' } }, err: 'Bearer abc.def.ghi failed' } },
    'job failed with svc_0123456789abcdef',
  );
  app.log.info({ password: 'plain-password', smtp_url: 'smtp://u:p@h', headers: { authorization: 'Bearer x' } }, 'at info too');

  const log = lines.join('');
  assertNoSecrets(log, [hash, "it''s@example.com", 'a\u0000b', '00ff', 'hunter2', 'JBSWY3DPEHPK3PXP', 'abc.def.ghi', 'plain-password', 'u:p@h']);
  const [insert, select, smtp, warn, info] = lines.map((l) => JSON.parse(l) as Record<string, Record<string, string>>);
  assert.equal(
    insert!.err!.message,
    "insert into `users` (`email`, `password_hash`, `photo`) values ('?', '?', X'?') - SQLITE_CONSTRAINT_UNIQUE: UNIQUE constraint failed: users.email",
  );
  assert.equal(insert!.err!.code, 'SQLITE_CONSTRAINT_UNIQUE');
  assert.match(select!.err!.message, /^select \* from `users` where `email` = '\?' limit 1 - unrecognized token: "'\?/);
  assert.match(smtp!.err!.message, /smtp:\/\/\*\*\*@smtp\.example\.com:587/);
  assert.equal(warn!.msg, 'job failed with svc_***');
  assert.equal((warn!.job as unknown as { err: string }).err, 'Bearer *** failed');
  assert.equal(info!.password, '[Redacted]');
  assert.equal(info!.smtp_url, '[Redacted]');
  assert.equal((info!.headers as unknown as { authorization: string }).authorization, '[Redacted]');
});

test('the access log keeps the path and blanks secret query parameters', async (t) => {
  const { app, lines } = await appWithLog(t);
  await app.inject({ url: '/v1/auth/google/callback?code=the-code&state=the-state&scope=openid' });
  const line = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'request completed');
  assert.equal(line?.url, '/v1/auth/google/callback?code=***&state=***&scope=openid');
});

test('the kernel logger of the CLI and atrium subgraph redacts the same way', async () => {
  const written: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string) => written.push(String(chunk)) > 0) as typeof process.stderr.write;
  try {
    const log = stderrLogger('info');
    log.error(
      { err: new Error("update `api_keys` set `key_hash` = 'deadbeef' where `id` = 'k1'"), client_secret: 's3cr3t', nested: { a: { b: { token: 't0k' } } } },
      'failed',
    );
  } finally {
    process.stderr.write = write;
  }
  const line = JSON.parse(written.join('')) as { err: { message: string; type: string }; client_secret: string; nested: { a: { b: { token: string } } } };
  assert.equal(line.err.type, 'Error');
  assert.equal(line.err.message, "update `api_keys` set `key_hash` = '?' where `id` = '?'");
  assert.equal(line.client_secret, '[Redacted]');
  assert.equal(line.nested.a.b.token, '[Redacted]');
  // A command's last words (an unexpected error) are scrubbed too.
  const text = loggableError(new Error("insert into `users` (`password_hash`) values ('scrypt$1$2$3$salt$key')"));
  assert.match(text, /values \('\?'\)/);
  assert.doesNotMatch(text, /scrypt\$/);
});

test('a refusal a library logs at error level (mercurius: a refused subscription) is one info line without a stack; a real error stays an error', async (t) => {
  const { app, lines } = await appWithLog(t);
  const refused = new GraphQLError('No bulk job of yours with this id', { originalError: new AppError('not_found', 'No bulk job of yours with this id') });
  lines.length = 0;
  app.log.error([refused]);
  // As the subscription wrapper hands it to mercurius: the catalog code and status in extensions, no originalError.
  app.log.error([toGraphQLError(new GraphQLError('Admin role required', { originalError: new AppError('forbidden', 'Admin role required') }), app.log)]);
  app.log.error(new Error('the disk is full'));
  app.log.error([refused, new GraphQLError('boom', { originalError: new Error('boom') })]);
  const records = lines.map((line) => JSON.parse(line) as { level: number; msg: string; refused?: unknown; stack?: string });
  assert.deepEqual(records[0], { ...records[0], level: 30, msg: 'operation refused', refused: [{ code: 'not_found', status: 404 }] });
  assert.equal(JSON.stringify(records[0]).includes('at '), false, 'no stack');
  assert.deepEqual(records[1], { ...records[1], level: 30, msg: 'operation refused', refused: [{ code: 'forbidden', status: 403 }] });
  assert.deepEqual(records.slice(2).map((r) => r.level), [50, 50], 'anything else is logged as it was');
});

test('a 5xx the server names (503 payment_processor_not_configured) is one warning without a stack; only an unexpected failure is an error', async (t) => {
  const { app, lines } = await appWithLog(t);
  const owner = await seedOwner(app);
  const { access_token: token } = await login(app, owner.email);
  lines.length = 0;
  const res = await app.inject({ method: 'POST', url: '/v1/billing/topup', headers: bearer(token), payload: { credits: 500 } });
  assert.equal(res.statusCode, 503, res.body);
  const records = lines.map((line) => JSON.parse(line) as { level: number; msg: string; code?: string; stack?: unknown; err?: unknown });
  assert.deepEqual(records.filter((r) => r.level >= 50), [], 'no error line');
  const warning = records.find((r) => r.level === 40);
  assert.deepEqual([warning?.msg, warning?.code, warning?.err], ['answered with a server-side problem', 'payment_processor_not_configured', undefined]);
});
