import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { build } from './helper';
import { smtpServer } from './smtp';
import { loadConfig } from '../src/config';
import { boot } from '../src/boot';
import type { Logger } from '../src/kernel/logger';
import { MailOutbox } from '../src/mail/outbox.entity';
import { endMailLinks, type SendOptions } from '../src/mail/mailer';
import {
  accountDeleted,
  accountDeletionCancelled,
  accountDeletionScheduled,
  emailVerification,
  passwordReset,
} from '../src/domains/identity/mail';

const LINK = 'https://atrium.example/reset?token=tok_secret123&x=1';


/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', () => resolve()));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

function decodeQuotedPrintable(body: string): string {
  return body.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/** Just enough MIME: the top headers and the decoded parts of a multipart message. */
function parseMessage(raw: string) {
  const [head = '', ...rest] = raw.split(/\r?\n\r?\n/);
  const headers = head.replace(/\r?\n[ \t]+/g, ' ');
  const header = (name: string) => new RegExp(`^${name}: (.*)$`, 'mi').exec(headers)?.[1]?.trim();
  const boundary = /boundary="?([^";\r\n]+)"?/i.exec(headers)?.[1];
  assert.ok(boundary, 'a multipart message');
  const body = rest.join('\r\n\r\n');
  const parts = body
    .split(`--${boundary}`)
    .slice(1)
    .filter((part) => !part.startsWith('--'))
    .map((part) => {
      const [partHead = '', ...partBody] = part.replace(/^\r?\n/, '').split(/\r?\n\r?\n/);
      const content = partBody.join('\r\n\r\n');
      const encoding = /content-transfer-encoding: *(\S+)/i.exec(partHead)?.[1]?.toLowerCase();
      const decoded =
        encoding === 'quoted-printable'
          ? decodeQuotedPrintable(content)
          : encoding === 'base64'
            ? Buffer.from(content, 'base64').toString('utf8')
            : content;
      return { type: /content-type: *([^;\r\n]+)/i.exec(partHead)?.[1]?.trim(), body: decoded };
    });
  return { header, contentType: header('Content-Type'), parts };
}

function capture(): Logger & { lines: { level: string; obj: Record<string, unknown>; msg: string }[] } {
  const lines: { level: string; obj: Record<string, unknown>; msg: string }[] = [];
  const at = (level: string) => (obj: Record<string, unknown>, msg: string) => lines.push({ level, obj, msg });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

async function row(app: Awaited<ReturnType<typeof build>>, id: string): Promise<MailOutbox> {
  const found = await app.kernel.orm.em.fork().findOne(MailOutbox, { id });
  assert.ok(found, `outbox row ${id}`);
  return found;
}

test('templates escape every value in HTML and keep it in text', () => {
  const name = '<script>alert("x")</script> & co';
  const mail = emailVerification({ name, link: LINK, expiresInMinutes: 60 });
  assert.equal(mail.template, 'email_verification');
  assert.ok(mail.subject.length > 0);
  assert.ok(!mail.html.includes('<script>'), 'no raw script tag in the HTML');
  assert.ok(mail.html.includes('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co'));
  assert.ok(mail.text.includes(name), 'the text part keeps the name verbatim');
  assert.ok(mail.text.includes(LINK));
  assert.ok(mail.html.includes('href="https://atrium.example/reset?token=tok_secret123&amp;x=1"'));
  assert.match(mail.text, /expires in 1 hour/);
  assert.ok(!/(src|href)="(?!https:\/\/atrium\.example)/.test(mail.html), 'no external assets');

  assert.match(passwordReset({ link: LINK, expiresInMinutes: 30 }).text, /30 minutes/);
  const scheduled = accountDeletionScheduled({ scheduledFor: new Date('2026-12-24T10:00:00Z'), cancelLink: LINK });
  assert.match(scheduled.text, /2026-12-24 10:00 UTC/);
  assert.ok(scheduled.html.includes('2026-12-24 10:00 UTC'));
  for (const m of [accountDeletionCancelled(), accountDeleted({ name: 'Ada' })]) {
    assert.ok(m.subject && m.text && m.html.startsWith('<!DOCTYPE html>'), m.template);
  }
  assert.match(accountDeleted({ name: 'Ada\r\nBcc: x@y.test' }).text, /^Hello Ada Bcc: x@y\.test,/);
  assert.throws(() => passwordReset({ link: 'javascript:alert(1)', expiresInMinutes: 30 }), TypeError);
  assert.throws(() => passwordReset({ link: LINK, expiresInMinutes: 0 }), TypeError);
});

test('without SMTP_URL the mail is stored as logged and the log names it without its link', async (t) => {
  const app = await build(t);
  const log = capture();
  app.kernel.log.use(log);
  assert.equal(app.kernel.mailer.smtpConfigured, false);

  const receipt = await app.kernel.mailer.send('User@Example.com', passwordReset({ link: LINK, expiresInMinutes: 60 }), {
    meta: { userId: 'u1' },
  });
  assert.equal(receipt.status, 'logged');
  const stored = await row(app, receipt.id);
  assert.equal(stored.status, 'logged');
  assert.equal(stored.toAddress, 'User@Example.com');
  assert.equal(stored.template, 'password_reset');
  assert.equal(stored.subject, 'Reset your Atrium password');
  assert.ok(stored.text.includes(LINK));
  assert.ok(stored.html.includes('tok_secret123'));
  assert.equal(stored.attempts, 0);
  assert.deepEqual(stored.meta, { userId: 'u1' });

  const info = log.lines.filter((l) => l.level === 'info');
  assert.equal(info.length, 1);
  assert.equal(info[0]!.obj.mailId, receipt.id);
  assert.equal(info[0]!.obj.to, 'User@Example.com');
  assert.ok(!JSON.stringify(info).includes('tok_secret123'), 'no token at info level');

  const queued = await app.kernel.mailer.enqueue('b@example.com', accountDeleted());
  assert.equal(queued.status, 'logged');
  assert.equal((await app.kernel.mailer.retryFailed()).attempted, 0);
  const listed = await app.kernel.mailer.list({ status: 'logged' });
  assert.deepEqual(new Set(listed.map((m) => m.id)), new Set([receipt.id, queued.id]));
});

test('addresses are checked: one plain address, no header injection', async (t) => {
  const app = await build(t);
  const mail = accountDeleted();
  for (const bad of ['', 'nobody', 'a@b', 'a@b.test\r\nBcc: c@d.test', 'a@b.test, c@d.test', 'Ada <a@b.test>']) {
    await assert.rejects(app.kernel.mailer.send(bad, mail), (error: { code?: string }) => error.code === 'validation_error', bad);
  }
  const count = await app.kernel.orm.em.fork().count(MailOutbox, {});
  assert.equal(count, 0);
});

test('with a real SMTP server the mail is delivered as text and HTML and marked sent', async (t) => {
  const smtp = await smtpServer(t);
  const app = await build(t, { smtpUrl: smtp.url, mailFrom: 'Atrium <no-reply@atrium.example>' });
  assert.equal(app.kernel.mailer.smtpConfigured, true);

  const name = '<script>x</script>';
  const receipt = await app.kernel.mailer.send('user@example.com', emailVerification({ name, link: LINK, expiresInMinutes: 30 }));
  assert.equal(receipt.status, 'sent');
  assert.equal(receipt.attempts, 1);
  assert.equal(smtp.received.length, 1);
  const [message] = smtp.received;
  assert.deepEqual(message!.to, ['user@example.com']);
  assert.equal(message!.from, 'no-reply@atrium.example');

  const parsed = parseMessage(message!.raw);
  assert.equal(parsed.header('To'), 'user@example.com');
  assert.equal(parsed.header('Subject'), 'Confirm your email address for Atrium');
  assert.match(parsed.header('From') ?? '', /no-reply@atrium\.example/);
  assert.equal(parsed.header('Message-ID'), `<${receipt.id}@atrium.example>`);
  assert.equal(parsed.header('Auto-Submitted'), 'auto-generated');
  assert.match(parsed.contentType ?? '', /^multipart\/alternative/);
  const text = parsed.parts.find((p) => p.type === 'text/plain');
  const html = parsed.parts.find((p) => p.type === 'text/html');
  assert.ok(text && html, 'both a text and an HTML part');
  assert.ok(text.body.includes(LINK) && text.body.includes(name));
  assert.ok(html.body.includes('&lt;script&gt;x&lt;/script&gt;') && !html.body.includes('<script>'));

  const stored = await row(app, receipt.id);
  assert.equal(stored.status, 'sent');
  assert.equal(stored.attempts, 1);
  assert.ok(stored.sentAt instanceof Date);
  assert.equal(stored.messageId, `<${receipt.id}@atrium.example>`);
  assert.equal(stored.lastError, null);

  // enqueue returns once stored; the delivery finishes in the background.
  const queued = await app.kernel.mailer.enqueue('other@example.com', accountDeletionCancelled());
  assert.equal(queued.status, 'pending');
  await app.kernel.worker.drain();
  assert.equal((await row(app, queued.id)).status, 'sent');
  assert.equal(smtp.received.length, 2);
});

test('a rejected delivery does not throw, stays failed, and retryFailed delivers it once', async (t) => {
  const smtp = await smtpServer(t);
  const app = await build(t, { smtpUrl: smtp.url });
  const log = capture();
  app.kernel.log.use(log);
  smtp.state.reject = true;

  const receipt = await app.kernel.mailer.send('user@example.com', passwordReset({ link: LINK, expiresInMinutes: 60 }));
  assert.equal(receipt.status, 'failed');
  assert.equal(receipt.attempts, 1);
  assert.match(receipt.error ?? '', /Mailbox unavailable|550/);
  let stored = await row(app, receipt.id);
  assert.equal(stored.status, 'failed');
  assert.equal(stored.attempts, 1);
  assert.match(stored.lastError ?? '', /Mailbox unavailable|550/);
  assert.ok(log.lines.some((l) => l.level === 'warn' && l.obj.mailId === receipt.id));
  assert.ok(!JSON.stringify(log.lines).includes('tok_secret123'));

  smtp.state.reject = false;
  // Two concurrent retries: the attempt is claimed once, the mail goes out once.
  const [first, second] = await Promise.all([app.kernel.mailer.retryFailed(), app.kernel.mailer.retryFailed()]);
  assert.equal(first.attempted + second.attempted, 1);
  assert.equal(first.sent + second.sent, 1);
  assert.equal(smtp.received.length, 1);
  stored = await row(app, receipt.id);
  assert.equal(stored.status, 'sent');
  assert.equal(stored.attempts, 2);
  assert.equal(stored.lastError, null);
  assert.equal(parseMessage(smtp.received[0]!.raw).header('Message-ID'), stored.messageId);

  assert.deepEqual(await app.kernel.mailer.retryFailed(), { attempted: 0, sent: 0, failed: 0 });
});

test('a failed delivery is retried by its job every MAIL_RETRY_SECONDS until it goes out, once', async (t) => {
  const smtp = await smtpServer(t);
  const app = await build(t, { smtpUrl: smtp.url, mailRetrySeconds: 1 });
  app.kernel.log.use(capture());
  smtp.state.reject = true;
  const receipt = await app.kernel.mailer.enqueue('user@example.com', accountDeleted());
  await app.kernel.worker.drain();
  const failed = await row(app, receipt.id);
  assert.equal(failed.status, 'failed');
  assert.equal(failed.attempts, 1);
  const [job] = await app.kernel.jobs.list({ kind: 'mail.deliver', limit: 1 });
  const wait = job!.runAt.getTime() - Date.now();
  assert.ok(wait > 0 && wait <= 1000, `the retry is due within MAIL_RETRY_SECONDS, not ${wait} ms`);

  smtp.state.reject = false;
  const deadline = Date.now() + 5000;
  while ((await row(app, receipt.id)).status !== 'sent') {
    assert.ok(Date.now() < deadline, 'the job did not retry the mail');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await app.kernel.worker.drain();
  assert.equal((await row(app, receipt.id)).attempts, 2);
  assert.equal(smtp.received.length, 1);
  const [done] = await app.kernel.jobs.list({ kind: 'mail.deliver', limit: 1 });
  assert.ok(done!.completedAt, 'the delivery job is done');
});

test('retries stop after five attempts', async (t) => {
  const smtp = await smtpServer(t);
  const app = await build(t, { smtpUrl: smtp.url });
  app.kernel.log.use(capture());
  smtp.state.reject = true;
  const receipt = await app.kernel.mailer.send('user@example.com', accountDeleted());
  for (let i = 0; i < 4; i++) assert.equal((await app.kernel.mailer.retryFailed()).failed, 1);
  assert.equal((await row(app, receipt.id)).attempts, 5);
  smtp.state.reject = false;
  assert.equal((await app.kernel.mailer.retryFailed()).attempted, 0);
  assert.equal((await row(app, receipt.id)).status, 'failed');
  assert.equal(smtp.received.length, 0);
});

test('an unreachable SMTP server leaves the mail failed without failing the caller', async (t) => {
  const port = await closedPort();
  const app = await build(t, { smtpUrl: `smtp://127.0.0.1:${port}` });
  app.kernel.log.use(capture());
  const receipt = await app.kernel.mailer.send('user@example.com', accountDeleted());
  assert.equal(receipt.status, 'failed');
  const stored = await row(app, receipt.id);
  assert.equal(stored.status, 'failed');
  assert.equal(stored.attempts, 1);
  assert.match(stored.lastError ?? '', /ECONNREFUSED|connect/i);
});

test('config: SMTP_URL and MAIL_FROM are checked, and SMTP_URL never echoed', () => {
  const base = { DATA_DIR: os.tmpdir() };
  const defaults = loadConfig(base);
  assert.equal(defaults.smtpUrl, undefined);
  assert.equal(defaults.mailFrom, 'Atrium <no-reply@localhost>');
  assert.equal(defaults.mailRetrySeconds, 300);
  assert.equal(loadConfig({ ...base, SMTP_URL: 'smtps://u:p@mail.example:465' }).smtpUrl, 'smtps://u:p@mail.example:465');
  assert.throws(
    () => loadConfig({ ...base, SMTP_URL: 'http://u:hunter2@mail.example' }),
    (error: Error) => /SMTP_URL/.test(error.message) && !error.message.includes('hunter2'),
  );
  assert.throws(() => loadConfig({ ...base, MAIL_FROM: 'not an address' }), /MAIL_FROM/);
  assert.equal(loadConfig({ ...base, MAIL_FROM: 'ops@example.com' }).mailFrom, 'ops@example.com');
});

const CLI = path.resolve(__dirname, '../src/cli.js');

function atrium(dataDir: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { ...process.env, DATA_DIR: dataDir, SMTP_URL: '', LOG_LEVEL: 'silent' }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

test('atrium mail-outbox lists and shows stored mail', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-mail-cli-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const booted = await boot(loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent' }));
  const first = await booted.kernel.mailer.send('a@example.com', passwordReset({ link: LINK, expiresInMinutes: 60 }));
  const second = await booted.kernel.mailer.send('b@example.com', accountDeleted({ name: 'Bea' }));
  await booted.close();

  const listed = await atrium(dir, 'mail-outbox');
  assert.equal(listed.code, 0, listed.stderr);
  const rows = listed.stdout.trim().split('\n').map((line) => JSON.parse(line));
  assert.equal(rows.length, 2);
  const byId = new Map(rows.map((r) => [r.id, r]));
  assert.deepEqual(
    { ...byId.get(first.id), created_at: undefined },
    { id: first.id, to: 'a@example.com', subject: 'Reset your Atrium password', template: 'password_reset', status: 'logged', attempts: 0, created_at: undefined },
  );
  assert.match(byId.get(second.id).created_at, /^\d{4}-\d\d-\d\dT/);
  assert.ok(!listed.stdout.includes('tok_secret123'), 'the list shows no bodies');

  const limited = await atrium(dir, 'mail-outbox', '--limit', '1', '--status', 'logged');
  assert.equal(limited.code, 0, limited.stderr);
  assert.equal(limited.stdout.trim().split('\n').length, 1);
  const none = await atrium(dir, 'mail-outbox', '--status', 'sent');
  assert.equal(none.code, 0, none.stderr);
  assert.equal(none.stdout.trim(), '');

  const shown = await atrium(dir, 'mail-outbox', '--show', first.id);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /^To: a@example\.com$/m);
  assert.match(shown.stdout, /^Subject: Reset your Atrium password$/m);
  assert.ok(shown.stdout.includes(LINK), 'the operator can follow the link');
  const html = await atrium(dir, 'mail-outbox', '--show', second.id, '--html');
  assert.equal(html.code, 0, html.stderr);
  assert.match(html.stdout, /^<!DOCTYPE html>/);

  const missing = await atrium(dir, 'mail-outbox', '--show', '00000000-0000-4000-8000-000000000000');
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /No mail/);
  const badStatus = await atrium(dir, 'mail-outbox', '--status', 'bogus');
  assert.equal(badStatus.code, 2);
  assert.match(badStatus.stderr, /--status/);
  const noSmtp = await atrium(dir, 'mail-outbox', '--retry');
  assert.equal(noSmtp.code, 1);
  assert.match(noSmtp.stderr, /SMTP_URL/);
});

test('a one-time link leaves the outbox when it expires; mail without a link keeps its body', async (t) => {
  const app = await build(t);
  const mailer = app.kernel.mailer;
  app.kernel.log.use(capture());
  const before = Date.now();
  const reset = await mailer.send('user@example.com', passwordReset({ link: LINK, expiresInMinutes: 60 }));
  const plain = await mailer.send('user@example.com', accountDeleted());
  const stored = await row(app, reset.id);
  assert.ok(stored.text.includes('tok_secret123'));
  const until = stored.secretUntil!.getTime();
  assert.ok(until >= before + 60 * 60_000 && until <= Date.now() + 60 * 60_000, `secret_until ${stored.secretUntil?.toISOString()}`);
  assert.equal((await row(app, plain.id)).secretUntil, null);

  // Still valid: nothing is forgotten, and the operator can read the link.
  assert.equal(await mailer.forgetExpiredSecrets(new Date(until - 1000)), 0);
  assert.ok((await mailer.get(reset.id))!.text.includes('tok_secret123'));

  assert.equal(await mailer.forgetExpiredSecrets(new Date(until + 1000)), 1);
  const forgotten = await row(app, reset.id);
  assert.ok(!forgotten.text.includes('tok_secret123') && !forgotten.html.includes('tok_secret123'));
  assert.match(forgotten.text, /expired/);
  assert.equal(forgotten.secretUntil, null);
  assert.equal(forgotten.status, 'logged');
  assert.match((await row(app, plain.id)).text, /deleted/);
});

/** A reset mail whose first delivery the SMTP server refused (it accepts again afterwards). */
async function undeliveredReset(t: TestContext, expiresInMinutes: number, options: SendOptions = {}) {
  const smtp = await smtpServer(t);
  const app = await build(t, { smtpUrl: smtp.url });
  const mailer = app.kernel.mailer;
  app.kernel.log.use(capture());
  smtp.state.reject = true;
  const receipt = await mailer.send('user@example.com', passwordReset({ link: LINK, expiresInMinutes }), options);
  assert.equal(receipt.status, 'failed');
  smtp.state.reject = false;
  return { smtp, app, mailer, receipt };
}

test('mail not delivered before its link expired is given up, not retried', async (t) => {
  const { smtp, app, mailer, receipt } = await undeliveredReset(t, 5);
  await mailer.forgetExpiredSecrets(new Date(Date.now() + 6 * 60_000));
  const stored = await row(app, receipt.id);
  assert.equal(stored.status, 'failed');
  assert.match(stored.lastError ?? '', /expired/);
  assert.deepEqual(await mailer.retryFailed(), { attempted: 0, sent: 0, failed: 0 });
  assert.equal(smtp.received.length, 0);
});

test('a mail whose link was spent or replaced before delivery is never delivered: given up, its text gone', async (t) => {
  const { smtp, app, mailer, receipt } = await undeliveredReset(t, 30, { secretRef: 'password_reset:u1' });
  await app.kernel.orm.em.fork().transactional((em) => endMailLinks(em, 'password_reset:u1'));
  await mailer.deliver(receipt.id);
  assert.deepEqual(await mailer.retryFailed(), { attempted: 0, sent: 0, failed: 0 });
  assert.equal(smtp.received.length, 0);
  const stored = await row(app, receipt.id);
  assert.equal(stored.status, 'failed');
  assert.ok(!stored.text.includes('tok_secret123') && !stored.html.includes('tok_secret123'));
});
