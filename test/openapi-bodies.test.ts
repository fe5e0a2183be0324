import { test } from 'node:test';
import assert from 'node:assert/strict';
import Stripe from 'stripe';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { bearer } from './helper';
import { cast, seedUser, sql } from './admin-helper';
import { buildWithAi } from './ai-helper';
import { fakeOpenAi, fakeSearch, type FakeReply, type SeenRequest } from './fake-ai';
import { startFakeStripe } from './fake-stripe';
import { makeCsv, makeDocx, multipartBody, multipartForm } from './fixtures/document-files';
import { bodyChecks, operations, type Doc } from './openapi-helper';
import { resetReplayGuard, totp } from './totp';
import { loadPaymentsConfig } from '../src/domains/payments';
import { calendarPeriod } from '../src/domains/billing';

/**
 * test/openapi-truth.test.ts holds every status and error body to the
 * document; this holds the success bodies to it, with real data: a client
 * generated from /openapi.json breaks on a null it was told cannot come, a
 * member it was told is there, a date that is not a date-time, a value no
 * enum lists. A workspace is seeded across the domains, every GET of the
 * document is called with ids of what was seeded, and the creating calls of
 * the seeding are held to it too.
 */

/** GET operations not checked here, and why: none of them answers JSON. */
const SKIPPED: Record<string, string> = {
  'GET /bulk/download/{job_id}': 'a CSV or xlsx file',
  'GET /bulk/jobs/{id}/download': 'a CSV or xlsx file',
  'GET /bulk/jobs/{id}/rows': 'an NDJSON stream, declared as a string',
  'GET /admin/usage/export': 'a CSV file',
  'GET /auth/{provider}/start': 'a redirect to the provider',
  'GET /auth/{provider}/callback': 'a redirect back, after the provider answered',
};

const WEBHOOK_SECRET = 'whsec_test_atrium';

/** The fake model's part: a research plan as JSON, page summaries, and otherwise a short answer. */
function model(request: SeenRequest): FakeReply {
  const system = request.messages[0]?.content ?? '';
  // What asks to fail fails at once (a 400 is not retried): a failed research job, a failed bulk row.
  if (request.messages.some((m) => m.content?.includes('please fail'))) return { status: 400 };
  if (system.startsWith('You plan web research')) {
    const n = Number(/exactly (\d+)/.exec(system)?.[1] ?? 3);
    return { content: JSON.stringify({ queries: Array.from({ length: n }, (_, i) => `question ${i + 1}`) }), usage: { prompt: 50, completion: 20 } };
  }
  if (system.startsWith('You summarise one web page')) return { content: 'Summary of the page.', usage: { prompt: 100, completion: 20 } };
  return { content: 'An answer [1].', usage: { prompt: 20, completion: 10 } };
}

/** A Stripe event delivered to the webhook, signed. */
function deliver(app: FastifyInstance, type: string, object: Record<string, unknown>, created: number) {
  const payload = JSON.stringify({ id: `evt_${type}_${created}`, object: 'event', type, created, livemode: false, api_version: '2026-10-28.endive', data: { object } });
  return app.inject({
    method: 'POST',
    url: '/v1/billing/webhook',
    headers: { 'content-type': 'application/json', 'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }) },
    payload,
  });
}

/** The value at a JSON pointer of the body, shortened: what a mismatch shows. */
function snippet(body: unknown, pointer: string): string {
  let node = body;
  for (const part of pointer.split('/').slice(1)) node = (node as Record<string, unknown> | undefined)?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  return (JSON.stringify(node) ?? 'undefined').slice(0, 120);
}

test('every success body a seeded workspace answers is what /openapi.json declares for its operation, status and media type', async (t) => {
  const fake = await fakeOpenAi(t, model);
  // Results whose pages cannot be read: research falls back on the snippets.
  const search = await fakeSearch(t, (q) => [{ url: 'http://127.0.0.1:9/gone', title: 'Gone', content: `a snippet about ${q}` }]);
  const stripe = await startFakeStripe();
  t.after(() => stripe.close());
  const payments = loadPaymentsConfig({
    STRIPE_SECRET_KEY: 'sk_test_atrium',
    STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
    STRIPE_PRICES: 'starter:price_starter,professional:price_pro',
    STRIPE_API_URL: stripe.url,
  });
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url, WEB_SEARCH_URL: search.url }, { ssrfAllowLoopback: true, payments } as never);
  const doc = (await app.inject({ url: '/openapi.json' })).json() as Doc;
  const checkOf = bodyChecks(doc, { undeclared: true });

  const found: string[] = [];
  const checked = new Set<string>();
  /** Holds a 2xx JSON answer to the schema declared for it; anything else the seeding or a read answers is a finding too. */
  function hold(method: string, path: string, res: LightMyRequestResponse, how = '') {
    const op = `${method.toUpperCase()} ${path}${how ? ` (${how})` : ''}`;
    if (res.statusCode < 200 || res.statusCode >= 300) {
      found.push(`${op} answered ${res.statusCode}: ${res.body.slice(0, 200)}`);
      return res;
    }
    const type = String(res.headers['content-type'] ?? '').split(';')[0]!.trim();
    if (res.statusCode === 204 || type !== 'application/json') return res;
    checked.add(`${method.toUpperCase()} ${path}`);
    const schema = (doc.paths[path]?.[method]?.responses[String(res.statusCode)]?.content?.[type] as { schema?: unknown } | undefined)?.schema;
    if (!schema) {
      found.push(`${op} answered ${res.statusCode} ${type}, for which it declares no schema`);
      return res;
    }
    const body = res.json() as unknown;
    const check = checkOf(schema);
    if (!check(body)) {
      // One line per place and message: the same mismatch in each item of a list is one finding.
      const seen = new Set<string>();
      for (const e of check.errors ?? []) {
        const extra = e.keyword === 'additionalProperties' ? ` (${(e.params as { additionalProperty: string }).additionalProperty})` : '';
        const line = `${op}: ${e.instancePath.replace(/\/\d+(?=\/|$)/g, '/*') || '/'} ${e.message}${extra}`;
        if (!seen.has(line)) found.push(`${line}: ${snippet(body, e.instancePath)}`);
        seen.add(line);
      }
    }
    const items = Array.isArray(body) ? body : (body as { items?: unknown }).items;
    if (Array.isArray(items) && items.length === 0) found.push(`${op}: an empty list, which proves nothing about its items`);
    return res;
  }
  const call = (method: InjectOptions['method'], path: string, url: string, credential: string | null, payload?: unknown, how?: string) =>
    app
      .inject({ method, url: `/v1${url}`, headers: credential ? bearer(credential) : {}, ...(payload === undefined ? {} : { payload: payload as object }) })
      .then((res) => hold(String(method).toLowerCase(), path, res, how));

  // People, keys, invitations.
  const c = await cast(app);
  const { a, tokens } = c;
  const owner = tokens.ownerA;
  const login = (await call('POST', '/auth/login', '/auth/login', null, { email: a.email, password: 'correct-horse-battery-staple' })).json();
  await call('POST', '/auth/refresh', '/auth/refresh', null, { refresh_token: login.refresh_token });
  const key = (await call('POST', '/apikeys', '/apikeys', owner, { name: 'modules key' })).json().key as string;
  await call('POST', '/apikeys', '/apikeys', owner, { name: 'chat only', scopes: ['chat'] });
  await call('POST', '/admin/api-keys', '/admin/api-keys', owner, { name: 'integration' });
  await call('POST', '/admin/invitations', '/admin/invitations', owner, { email: 'invited@example.com', role: 'member' });
  await call('POST', '/admin/invitations/bulk', '/admin/invitations/bulk', owner, { invitations: [{ email: 'one@example.com', role: 'admin' }, { email: 'two@example.com', role: 'member' }] });
  await call('POST', '/admin/users/invite', '/admin/users/invite', owner, { email: 'legacy@example.com', role: 'member' });
  const [revoked] = await sql<{ id: string }>(app, "select id from invitations where email = 'two@example.com'");
  await call('POST', '/admin/invitations/{invitation_id}/revoke', `/admin/invitations/${revoked!.id}/revoke`, owner);
  await app.kernel.worker.drain();
  const [mail] = await sql<{ text: string }>(app, "select text from mail_outbox where to_address = 'invited@example.com' and template = 'invitation'");
  const invitation = /accept-invitation\?token=([A-Za-z0-9_-]+)/.exec(mail!.text)![1]!;
  await call('POST', '/invitations/accept', '/invitations/accept', null, { token: invitation, password: 'a-new-long-password', name: 'Invited' });

  // Administration: names, a suspension and its end, a policy, a connector, a budget, credits, a model.
  await call('PATCH', '/me/profile', '/me/profile', owner, { name: 'Owner A' });
  await call('PATCH', '/admin/users/{user_id}', `/admin/users/${c.memberA.userId}`, owner, { name: 'Member A' });
  await call('POST', '/admin/users/{user_id}/suspend', `/admin/users/${c.memberA.userId}/suspend`, owner, { reason: 'checking' });
  await call('POST', '/admin/users/{user_id}/unsuspend', `/admin/users/${c.memberA.userId}/unsuspend`, owner);
  await call('PATCH', '/admin/companies/{company_id}', `/admin/companies/${a.companyId}`, owner, { name: 'Company A Ltd' });
  await call('PUT', '/admin/security/policy', '/admin/security/policy', owner, { min_password_length: 14, session_idle_timeout_minutes: 600, ip_allowlist: ['127.0.0.1/32'] });
  await call('PATCH', '/admin/connectors/{name}', '/admin/connectors/google_drive', owner, { client_id: 'client-id', client_secret: 'client-secret' });
  await call('PUT', '/admin/companies/{company_id}/budget', `/admin/companies/${a.companyId}/budget`, tokens.superadmin, { budget: '250.00' });
  await call('POST', '/admin/companies/{company_id}/credits/grant', `/admin/companies/${a.companyId}/credits/grant`, tokens.superadmin, { credits: 5000, reason: 'Goodwill' });
  await call('POST', '/admin/companies/{company_id}/credits/revoke', `/admin/companies/${a.companyId}/credits/revoke`, tokens.superadmin, { credits: 10, reason: 'Correction' });
  await call('POST', '/admin/models', '/admin/models', tokens.superadmin, { id: 'house-model', display_name: 'House model', family: 'house', provider: 'openai', context_length: 8192, credit_cost: 2 });
  await call('PATCH', '/admin/models/{model_id}', '/admin/models/house-model', tokens.superadmin, { blocked: true });
  await call('POST', '/admin/connectors/{name}/test', '/admin/connectors/google_drive/test', owner);
  const [pending] = await sql<{ id: string }>(app, "select id from invitations where email = 'one@example.com'");
  await call('POST', '/admin/invitations/{invitation_id}/resend', `/admin/invitations/${pending!.id}/resend`, owner);
  // A user left suspended, one with MFA on, and the answers of the other user actions.
  const suspended = await seedUser(app, a.companyId, 'member');
  await call('POST', '/admin/users/{user_id}/suspend', `/admin/users/${suspended.userId}/suspend`, owner, { reason: 'left' });
  const secret = (await call('POST', '/me/mfa/setup', '/me/mfa/setup', tokens.adminA)).json().secret as string;
  await call('POST', '/me/mfa/verify', '/me/mfa/verify', tokens.adminA, { totp_code: totp(secret) });
  await resetReplayGuard(app, c.adminA.userId);
  await call('GET', '/me/profile', '/me/profile', tokens.adminA, undefined, 'an admin who enrolled in MFA');
  for (const action of ['reset-password', 'force-logout', 'unlock']) {
    await call('POST', `/admin/users/{user_id}/${action}`, `/admin/users/${c.memberA.userId}/${action}`, owner);
  }
  await call('POST', '/admin/users/{user_id}/disable-mfa', `/admin/users/${c.adminA.userId}/disable-mfa`, owner);
  await call('POST', '/me/mfa/setup', '/me/mfa/setup', tokens.ownerB);
  await call('POST', '/auth/step-up', '/auth/step-up', owner, { password: 'correct-horse-battery-staple' });

  // AI modules: a chat, the studio, an agent, a document and a question on it.
  await call('POST', '/chat', '/chat', key, { message: 'Hello there', agent: 'general', session_id: 'session-1' });
  await call('POST', '/studio/process', '/studio/process', key, { text: 'Hello there', mode: 'translate', target_lang: 'fr' });
  await call('POST', '/studio/detect', '/studio/detect', key, { text: 'Bonjour tout le monde' });
  await call('POST', '/agent/run', '/agent/run', key, { task: 'Say hello' });
  const upload = multipartBody(await makeDocx(['The boiler needs service every spring.', 'Invoices are paid within thirty days.']), 'house.docx');
  const document = await app.inject({ method: 'POST', url: '/v1/rag/upload', payload: upload.payload, headers: { ...upload.headers, ...bearer(key) } });
  hold('post', '/rag/upload', document);
  await call('POST', '/rag/query', '/rag/query', key, { query: 'When is the boiler serviced?' });

  // Jobs, each run to its end by the worker: research and bulk, over both APIs.
  const researchJob = (await call('POST', '/research/start', '/research/start', key, { query: 'How is solar power doing?' })).json().job_id as string;
  const research = (await call('POST', '/research', '/research', owner, { query: 'How is wind power doing?' })).json().id as string;
  // One fails, one is cancelled before it runs, on each API (a company runs three at a time).
  const failedResearch = (await call('POST', '/research/start', '/research/start', key, { query: 'Tides, please fail', depth: 'deep' })).json().job_id as string;
  await app.kernel.worker.drain();
  const failedResearchId = (await call('POST', '/research', '/research', owner, { query: 'Waves, please fail', language: 'nl' })).json().id as string;
  const cancelled = (await call('POST', '/research/start', '/research/start', key, { query: 'Never mind' })).json().job_id as string;
  await call('POST', '/research/cancel/{job_id}', `/research/cancel/${cancelled}`, key);
  const cancelledId = (await call('POST', '/research', '/research', owner, { query: 'Never mind either' })).json().id as string;
  await call('POST', '/research/{id}/cancel', `/research/${cancelledId}/cancel`, owner);
  const csv = makeCsv([['id', 'review'], [1, 'Great product'], [2, 'Terrible service'], [3, 'please fail this row']]);
  const bulk = async (url: string, credential: string) => {
    const form = multipartForm({ input_column: 'review', prompt_template: 'Classify: {text}' }, { content: csv, filename: 'reviews.csv' });
    const res = await app.inject({ method: 'POST', url: `/v1${url}`, payload: form.payload, headers: { ...form.headers, ...bearer(credential) } });
    // The AI-modules API names the job job_id, the platform API id.
    const accepted = hold('post', url, res).json() as { job_id?: string; id?: string };
    return (url === '/bulk/submit' ? accepted.job_id : accepted.id)!;
  };
  const bulkJob = await bulk('/bulk/submit', key);
  const bulkId = await bulk('/bulk/jobs', owner);
  await bulk('/bulk/jobs', tokens.keyA);
  await app.kernel.worker.drain();
  await call('POST', '/bulk/cancel/{job_id}', `/bulk/cancel/${await bulk('/bulk/submit', key)}`, key);
  await call('POST', '/bulk/jobs/{id}/cancel', `/bulk/jobs/${await bulk('/bulk/jobs', owner)}/cancel`, owner);
  await app.kernel.worker.drain();

  // Billing through the fake Stripe: a subscription, an invoice, cards, a top-up checkout.
  const start = Math.floor(+calendarPeriod(new Date()).periodStart / 1000) + 60;
  const checkout = { id: 'cs_1', object: 'checkout.session', mode: 'subscription', client_reference_id: a.companyId, customer: 'cus_1', subscription: 'sub_1', metadata: { company_id: a.companyId, plan_id: 'professional' }, payment_status: 'paid' };
  hold('post', '/billing/webhook', await deliver(app, 'checkout.session.completed', checkout, start));
  const invoice = {
    id: 'in_1', object: 'invoice', customer: 'cus_1', number: 'INV-1', status: 'paid', billing_reason: 'subscription_create', amount_due: 4900, amount_paid: 4900, currency: 'usd', created: start,
    hosted_invoice_url: 'https://invoice.stripe.test/in_1',
    parent: { type: 'subscription_details', subscription_details: { subscription: 'sub_1', metadata: {} } },
    lines: { object: 'list', data: [{ id: 'il_1', period: { start, end: start + 30 * 86400 }, pricing: { price_details: { price: 'price_pro' } } }] },
  };
  hold('post', '/billing/webhook', await deliver(app, 'invoice.payment_succeeded', invoice, start + 5));
  stripe.subscriptions.set('sub_1', { id: 'sub_1', itemId: 'si_1', price: 'price_pro', quantity: 1 });
  stripe.customers.set('cus_1', { defaultPaymentMethod: 'pm_1', cards: [{ id: 'pm_1', brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2030 }] });
  await call('POST', '/admin/billing/topup/checkout', '/admin/billing/topup/checkout', owner, { credits: 500 });
  await call('POST', '/billing/topup', '/billing/topup', owner, { credits: 500 });
  await call('POST', '/admin/billing/plan/change', '/admin/billing/plan/change', owner, { plan_id: 'starter' });

  // Every GET of the document, on what was seeded.
  const ids = (path: string): Record<string, string> => ({
    company_id: a.companyId,
    user_id: a.userId,
    job_id: path.startsWith('/bulk') ? bulkJob : researchJob,
    id: path.startsWith('/bulk') ? bulkId : research,
  });
  const queries: Record<string, string[]> = {
    '/docs-feedback': ['?page=%2Fdocs%2Fintro&helpful=true&comment=Clear'],
    '/admin/usage': ['model', 'user', 'feature', 'api_key', 'day'].map((g) => `?group_by=${g}`),
    '/admin/invitations': ['', '?status=accepted', '?status=revoked'],
  };
  const superadminOnly: string[] = [];
  let gets = 0;
  for (const { method, path, url, operation } of operations(doc)) {
    if (method !== 'get') continue;
    gets++;
    if (SKIPPED[`GET ${path}`]) continue;
    const modulesApi = operation.security?.some((s) => 'moduleKey' in s) ?? false;
    for (const query of queries[path] ?? ['']) {
      let credential = modulesApi ? key : owner;
      const target = url(false, ids(path)).slice(3) + query;
      // What only a platform superadmin reads, it reads.
      const probe = await app.inject({ url: `/v1${target}`, headers: bearer(credential) });
      if (probe.statusCode === 403 && !modulesApi) {
        credential = tokens.superadmin;
        superadminOnly.push(path);
      }
      await call('GET', path, target, credential, undefined, query || undefined);
    }
  }
  // The other credentials, where the answer's shape is theirs: a company key, a member.
  await call('GET', '/me/profile', '/me/profile', tokens.keyA, undefined, 'a company key');
  await call('GET', '/billing/credits', '/billing/credits', tokens.keyA, undefined, 'a company key');
  await call('GET', '/bulk/jobs', '/bulk/jobs', tokens.keyA, undefined, 'a company key');
  await call('GET', '/admin/users/{user_id}', `/admin/users/${c.memberA.userId}`, owner, undefined, 'a member');
  await call('GET', '/admin/users/{user_id}', `/admin/users/${suspended.userId}`, owner, undefined, 'a suspended member');
  const ended: string[] = [];
  for (const job of [failedResearch, cancelled]) ended.push((await call('GET', '/research/status/{job_id}', `/research/status/${job}`, key, undefined, 'failed, cancelled')).json().status);
  for (const job of [failedResearchId, cancelledId]) ended.push((await call('GET', '/research/{id}', `/research/${job}`, owner, undefined, 'failed, cancelled')).json().status);
  await call('POST', '/me/sessions/revoke-all', '/me/sessions/revoke-all', tokens.ownerB);

  assert.deepEqual(found, []);
  assert.deepEqual(ended, ['failed', 'cancelled', 'failed', 'cancelled'], 'the failed and cancelled jobs were held to the document');
  // Every GET is checked but the ones listed as skipped, and those are the document's.
  for (const skipped of Object.keys(SKIPPED)) assert.ok(doc.paths[skipped.slice(4)]?.get, `${skipped} is no longer in the document`);
  const unchecked = operations(doc)
    .filter((o) => o.method === 'get' && !SKIPPED[`GET ${o.path}`] && !checked.has(`GET ${o.path}`))
    .map((o) => o.path);
  assert.deepEqual(unchecked, []);
  assert.equal([...checked].filter((op) => op.startsWith('GET ')).length, gets - Object.keys(SKIPPED).length);
  assert.ok(superadminOnly.length < 10, `read as a superadmin: ${superadminOnly.join(', ')}`);
});
