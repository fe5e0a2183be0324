import { test, type TestContext } from 'node:test';
import type { Config } from '../src/config';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { Page } from 'playwright-core';
import { bearer, login, PASSWORD, seedOwner, sql } from './helper';
import { browserMissing, collectPageErrors, launchBrowser, liveServer, screenshot } from './fixtures/browser';
import { googleClaims, ssoConfig, startMockProvider } from './oidc-mock';
import { awayFromStepBoundary, resetReplayGuard, totp, wrongCode } from './totp';
import { fakeOpenAi } from './fake-ai';
import { makeCsv, multipartForm } from './fixtures/document-files';
import { inContext } from '../src/boot';

/**
 * Atrium's pages in real Chromium (Debian's, driven by playwright-core),
 * against a real server on a loopback port: each flow as a user clicks it.
 */
const skip = browserMissing();
const NEW_PASSWORD = 'a-brand-new-password-1';

/** The newest link of `template` mailed to `to`, waiting for the mail job if need be. */
async function mailedLink(app: FastifyInstance, to: string, template: string, path: string): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const [mail] = await sql<{ text: string }>(app, 'select text from mail_outbox where to_address = ? and template = ? order by rowid desc limit 1', [to, template]);
    const link = mail && new RegExp(`https?://[^\\s/]+${path.replace(/[/?]/g, '\\$&')}(?:\\?[^\\s)]*)?`).exec(mail.text)?.[0];
    if (link) return link;
    if (Date.now() > deadline) throw new Error(`no ${template} mail to ${to}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Page errors and CSP violations fail a test; a refused request (the API's 4xx) is the page's business. */
function assertNoPageErrors(errors: string[]) {
  assert.deepEqual(
    errors.filter((e) => !/Failed to load resource: the server responded with a status of 4\d\d/.test(e)),
    [],
  );
}

async function waitForText(page: Page, selector: string, text: string, timeout = 10_000) {
  await page.locator(selector, { hasText: text }).first().waitFor({ timeout });
}

/** A live server and a browser page on it (in a context of its own); page errors are collected. */
async function openPage(t: TestContext, env: Record<string, string> = {}, config: Partial<Config> = {}) {
  const server = await liveServer(t, env, config);
  const browser = await launchBrowser(t);
  const context = await browser.newContext();
  const page = await context.newPage();
  return { ...server, context, page, errors: collectPageErrors(page) };
}

async function signInOnApp(page: Page, url: string, email: string, password = PASSWORD) {
  await page.goto(`${url}/app`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await waitForText(page, '[data-field="email"]', email);
}

test('browser: accept an invitation from the outbox link, see the API refuse a short password, and land signed in', { skip }, async (t) => {
  const { app, url, page, errors } = await openPage(t);
  const owner = await seedOwner(app);
  const { access_token } = await login(app, owner.email);
  const invited = await app.inject({
    method: 'POST',
    url: '/v1/admin/invitations',
    headers: bearer(access_token),
    payload: { email: 'nora@example.com', role: 'member' },
  });
  assert.equal(invited.statusCode, 201, invited.body);
  const link = await mailedLink(app, 'nora@example.com', 'invitation', '/app/accept-invitation');
  assert.ok(link.startsWith(`${url}/app/accept-invitation?token=`));

  await page.goto(link);
  await screenshot(page, 'accept-invitation');
  await page.getByLabel('Your name').fill('Nora New');
  // The page passes a too-short password to the API, which answers the problem the page shows.
  await page.getByLabel('New password').fill('short');
  await page.getByLabel('Repeat the password').fill('short');
  await page.getByRole('button', { name: 'Create my account' }).click();
  await page.locator('#problem:not([hidden])').waitFor();
  assert.match(await page.locator('#problem').innerText(), /12/);
  assert.equal(await sql(app, "select id from users where email = 'nora@example.com'").then((rows) => rows.length), 0);

  await page.getByLabel('New password').fill(NEW_PASSWORD);
  await page.getByLabel('Repeat the password').fill(NEW_PASSWORD);
  await page.getByRole('button', { name: 'Create my account' }).click();
  await page.waitForURL(/\/app\?welcome=1$/);
  await waitForText(page, '[data-field="email"]', 'nora@example.com');
  assert.equal(await page.locator('[data-field="name"]').innerText(), 'Nora New');
  assert.equal(await page.locator('[data-field="role"]').innerText(), 'member');
  await screenshot(page, 'app-signed-in');

  // The link works once: opened again, the page shows the API's invitation_invalid.
  await page.goto(link);
  await page.getByLabel('New password').fill(NEW_PASSWORD);
  await page.getByLabel('Repeat the password').fill(NEW_PASSWORD);
  await page.getByRole('button', { name: 'Create my account' }).click();
  await waitForText(page, '#problem', 'invitation_invalid');

  // Sign-out ends the session: the stored token no longer works.
  await page.goto(`${url}/app`);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await waitForText(page, '#done', 'You are signed out');
  assert.equal(await page.evaluate("sessionStorage.getItem('atrium.session')"), null);
  assertNoPageErrors(errors);
});

test('browser: reset a password from the outbox link, then sign in with it', { skip }, async (t) => {
  const { app, url, page, errors } = await openPage(t);
  const owner = await seedOwner(app);

  await page.goto(`${url}/app`);
  await page.getByRole('link', { name: 'Forgot your password?' }).click();
  await page.getByLabel('Email').fill(owner.email);
  await page.getByRole('button', { name: 'Mail me a link' }).click();
  await page.locator('#done:not([hidden])').waitFor();

  const link = await mailedLink(app, owner.email, 'password_reset', '/app/reset-password');
  await page.goto(link);
  // Two different passwords never reach the API.
  await page.getByLabel('New password').fill(NEW_PASSWORD);
  await page.getByLabel('Repeat the password').fill(`${NEW_PASSWORD}x`);
  await page.getByRole('button', { name: 'Set the new password' }).click();
  await waitForText(page, '#problem', 'The two passwords differ');
  await page.getByLabel('Repeat the password').fill(NEW_PASSWORD);
  await screenshot(page, 'reset-password');
  await page.getByRole('button', { name: 'Set the new password' }).click();
  await waitForText(page, '#done', 'Your password is changed');
  // The token leaves the address bar once used.
  assert.equal(new URL(page.url()).search, '');

  await page.getByRole('link', { name: 'Sign in with the new password' }).click();
  await page.getByLabel('Email').fill(owner.email);
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await waitForText(page, '#problem', 'invalid_credentials');
  await page.getByLabel('Password', { exact: true }).fill(NEW_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await waitForText(page, '[data-field="email"]', owner.email);
  assertNoPageErrors(errors);
});

test('browser: GraphiQL runs a subscription over graphql-ws and an audit event arrives', { skip }, async (t) => {
  const { app, url, page, errors } = await openPage(t);
  const owner = await seedOwner(app);
  // Signed in on /app, GraphiQL's header editor starts with that token.
  await signInOnApp(page, url, owner.email);
  await page.goto(`${url}/graphiql`);
  await page.locator('.graphiql-execute-button').waitFor();
  await waitForText(page, '.graphiql-query-editor', 'subscription AuditEvents');
  await page.locator('.graphiql-execute-button').click();
  // Several operations in the editor: GraphiQL asks which one to run.
  await page.getByRole('menuitem', { name: 'AuditEvents' }).click();
  // Give the socket a moment to subscribe, then cause an audited action.
  await page.waitForTimeout(500);
  await login(app, owner.email);
  await waitForText(page, '.graphiql-response', 'auth.login');
  await screenshot(page, 'graphiql');
  assertNoPageErrors(errors);
});

test('browser: the dashboard shows a new audit event, a credit grant and a bulk job live, and says when it reconnects', { skip }, async (t) => {
  // The model answers each row: a bulk job spends credits and shows progress.
  const fake = await fakeOpenAi(t, () => ({ content: 'ok', usage: { prompt: 10, completion: 5 } }));
  const { app, url, page, errors } = await openPage(t, { AI_BASE_URL: fake.url });
  const owner = await seedOwner(app);
  // Every upgraded socket, so the test can drop them as a network would.
  const sockets = new Set<{ destroy(): void }>();
  app.server.on('upgrade', (_request, socket) => sockets.add(socket));
  await signInOnApp(page, url, owner.email);
  await page.goto(`${url}/dashboard`);
  await page.locator('#panels:not([hidden])').waitFor();
  await page.locator('#connection[data-state="live"]').waitFor();
  await waitForText(page, '#company', 'Acme');
  await waitForText(page, '#sessions', owner.email);

  const { access_token } = await login(app, owner.email);
  const invited = await app.inject({ method: 'POST', url: '/v1/admin/invitations', headers: bearer(access_token), payload: { email: 'dash@example.com', role: 'member' } });
  assert.equal(invited.statusCode, 201);
  await waitForText(page, '#audit', 'invitation.created');

  // The balance as it changes: a platform operator grants 500 credits.
  await inContext(app.kernel.orm, () =>
    app.domains.identity.accounts.createCompanyWithOwner({ email: 'operator@example.com', password: PASSWORD, company: 'Platform', superadmin: true }),
  );
  const operator = bearer((await login(app, 'operator@example.com')).access_token);
  const grant = await app.inject({ method: 'POST', url: `/v1/admin/companies/${owner.companyId}/credits/grant`, headers: operator, payload: { credits: 500, reason: 'welcome' } });
  assert.equal(grant.statusCode, 200, grant.body);
  await waitForText(page, '#credits-available', '2,500');

  // A bulk job, its rows counted as they finish.
  const form = multipartForm({ input_column: 'q', prompt_template: 'Answer: {text}' }, { content: makeCsv([['q'], ['one'], ['two'], ['three']]), filename: 'questions.csv' });
  const submitted = await app.inject({ method: 'POST', url: '/v1/bulk/jobs', payload: form.payload, headers: { ...form.headers, authorization: `Bearer ${access_token}` } });
  assert.equal(submitted.statusCode, 202, submitted.body);
  await waitForText(page, '#jobs tr[data-status="completed"]', '3 of 3 rows');
  assert.match(await page.locator('#jobs tbody tr').first().innerText(), /questions\.csv/);
  await page.locator('#credits-available', { hasNotText: '2,500' }).waitFor();
  await screenshot(page, 'dashboard');

  // The server drops every socket: the page reconnects by itself and says so.
  for (const socket of sockets) socket.destroy();
  await waitForText(page, '#connection', 'Reconnected');
  const before = await page.locator('#audit li').count();
  await app.inject({ method: 'POST', url: '/v1/admin/invitations', headers: bearer(access_token), payload: { email: 'dash2@example.com', role: 'member' } });
  // The subscription came back with the socket: the next event arrives live too.
  await page.locator('#audit li').nth(before).waitFor({ timeout: 10_000 });
  assertNoPageErrors(errors);
});

test('browser: "Try it out" in /docs works when the page is opened as localhost', { skip }, async (t) => {
  const { port, page, errors } = await openPage(t);
  await page.goto(`http://localhost:${port}/docs`);
  const health = page.locator('.opblock-get', { has: page.locator('[data-path="/health"]') }).first();
  await health.waitFor();
  await screenshot(page, 'docs', false);
  await health.locator('.opblock-summary').click();
  await health.getByRole('button', { name: 'Try it out' }).click();
  await health.getByRole('button', { name: 'Execute' }).click();
  const status = health.locator('.live-responses-table tbody .response-col_status').first();
  await status.waitFor();
  assert.match(await status.innerText(), /200/);
  await screenshot(page, 'docs-try-it-out', false);
  assert.match(await health.locator('.live-responses-table').innerText(), /"status": "ok"/);
  // It called this host, not PUBLIC_URL's 127.0.0.1.
  assert.match(await health.locator('.request-url').innerText(), new RegExp(`http://localhost:${port}/v1/health`));
  assertNoPageErrors(errors);
});

test('browser: the landing page', { skip }, async (t) => {
  const { url, page, errors } = await openPage(t);
  await page.goto(`${url}/`);
  await waitForText(page, 'h2', 'First steps');
  await screenshot(page, 'landing');
  assertNoPageErrors(errors);
});

test('browser: a single sign-on with MFA on, started under /api/v1, is finished on /app/mfa', { skip }, async (t) => {
  const google = await startMockProvider('google');
  t.after(() => google.stop());
  const { app, url, page, errors } = await openPage(t, {}, { sso: ssoConfig(google, null) });
  const owner = await seedOwner(app);
  const headers = bearer((await login(app, owner.email)).access_token);
  const { secret } = (await app.inject({ method: 'POST', url: '/v1/me/mfa/setup', headers })).json() as { secret: string };
  assert.equal((await app.inject({ method: 'POST', url: '/v1/me/mfa/verify', headers, payload: { totp_code: totp(secret) } })).statusCode, 200);
  await resetReplayGuard(app, owner.userId);

  google.nextIdToken(googleClaims(`g-${owner.email}`, owner.email));
  await page.goto(`${url}/api/v1/auth/google/start`);
  await page.waitForURL(/\/app\/mfa\?challenge=.*api=%2Fapi%2Fv1/);
  await awayFromStepBoundary();
  await page.getByLabel('Code (or a recovery code)').fill(totp(secret));
  await page.getByRole('button', { name: 'Finish signing in' }).click();
  await page.waitForURL(`${url}/app`);
  await waitForText(page, '[data-field="email"]', owner.email);
  assertNoPageErrors(errors);
});

test('browser: a single sign-on with MFA on stops at /app/mfa, shows a wrong code refused, and lands on /app signed in by cookie', { skip }, async (t) => {
  const google = await startMockProvider('google');
  t.after(() => google.stop());
  const { app, url, context, page, errors } = await openPage(t, {}, { sso: ssoConfig(google, null) });
  const owner = await seedOwner(app);
  const headers = bearer((await login(app, owner.email)).access_token);
  const setup = await app.inject({ method: 'POST', url: '/v1/me/mfa/setup', headers });
  const { secret } = setup.json() as { secret: string };
  assert.equal((await app.inject({ method: 'POST', url: '/v1/me/mfa/verify', headers, payload: { totp_code: totp(secret) } })).statusCode, 200);
  await resetReplayGuard(app, owner.userId);

  google.nextIdToken(googleClaims(`g-${owner.email}`, owner.email));
  // The provider's consent is automatic at the mock: start, consent, callback, then the MFA page.
  await page.goto(`${url}/v1/auth/google/start`);
  await page.waitForURL(/\/app\/mfa\?challenge=/);
  await screenshot(page, 'mfa');
  await page.getByLabel('Code (or a recovery code)').fill(wrongCode(secret));
  await page.getByRole('button', { name: 'Finish signing in' }).click();
  await waitForText(page, '#problem', 'mfa_invalid');

  await awayFromStepBoundary();
  await page.getByLabel('Code (or a recovery code)').fill(totp(secret));
  await page.getByRole('button', { name: 'Finish signing in' }).click();
  await page.waitForURL(`${url}/app`);
  await waitForText(page, '[data-field="email"]', owner.email);
  // Signed in by the httpOnly cookie alone: no token in the page's storage.
  assert.equal(await page.evaluate("sessionStorage.getItem('atrium.session')"), null);
  assert.ok((await context.cookies()).some((c) => c.name === 'service_token' && c.httpOnly));

  // Sign-out with the cookie passes the Origin check and clears it.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await waitForText(page, '#done', 'You are signed out');
  assert.ok(!(await context.cookies()).some((c) => c.name === 'service_token'));
  assertNoPageErrors(errors);
});

test('browser: confirm an email change and cancel a scheduled deletion from their mailed links', { skip }, async (t) => {
  const { app, url, page, errors } = await openPage(t);
  const owner = await seedOwner(app);
  await signInOnApp(page, url, owner.email);
  const headers = bearer((await login(app, owner.email)).access_token);

  const change = await app.inject({ method: 'POST', url: '/v1/me/email', headers, payload: { new_email: 'renamed@example.com' } });
  assert.equal(change.statusCode, 202, change.body);
  await page.goto(await mailedLink(app, 'renamed@example.com', 'email_verification', '/app/confirm-email'));
  await page.getByRole('button', { name: 'Confirm the new address' }).click();
  await waitForText(page, '#done', 'the address this link was sent to');

  const renamed = bearer((await login(app, 'renamed@example.com')).access_token);
  const scheduled = await app.inject({ method: 'POST', url: '/v1/me/deletion', headers: renamed });
  assert.equal(scheduled.statusCode, 202, scheduled.body);
  await page.goto(await mailedLink(app, 'renamed@example.com', 'account_deletion_scheduled', '/app/cancel-deletion'));
  await waitForText(page, '#deletion-when', 'scheduled for deletion');
  await screenshot(page, 'cancel-deletion');
  await page.getByRole('button', { name: 'Cancel the deletion and keep my account' }).click();
  await waitForText(page, '#done', 'The deletion is cancelled');
  const profile = await app.inject({ url: '/v1/me/profile', headers: renamed });
  assert.equal(profile.json().deletion_scheduled_for, null);

  // Where a paid checkout returns: what happened, and the balance.
  await page.goto(`${url}/app/billing?topup=success&session_id=cs_test_1`);
  await waitForText(page, '#done', 'the top-up is paid');
  await waitForText(page, '[data-field="available"]', '2,000');
  await screenshot(page, 'billing');
  assertNoPageErrors(errors);
});
