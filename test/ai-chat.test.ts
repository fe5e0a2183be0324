import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { createClient } from 'graphql-ws';
import { assertCode, call, gql, sql } from './admin-helper';
import { build } from './helper';
import { buildWithAi, moduleKey, modulesCast } from './ai-helper';
import { echo, fakeOpenAi, fakeSearch } from './fake-ai';
import { assertLedgerAddsUp } from './ledger-helper';
import { inContext } from '../src/boot';
import { AppError } from '../src/errors/catalog';

const ask = (message: string, extra: Record<string, unknown> = {}) => ({ message, agent: 'general', session_id: 'conv-1', ...extra });

async function balance(app: Awaited<ReturnType<typeof build>>, companyId: string) {
  return app.domains.billing.ledger.balance(companyId);
}

async function heldHolds(app: Awaited<ReturnType<typeof build>>) {
  return (await sql<{ n: number }>(app, "select count(*) as n from credit_holds where status = 'held'"))[0]!.n;
}

test('a chat reply costs its tokens at the model\'s credit cost, rounded up, and the rest of the hold returns', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'Hello there', usage: { prompt: 700, completion: 301 } }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { a, keys } = await modulesCast(app);
  const res = await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('Hi', { model: 'gpt-4o' }));
  assert.equal(res.statusCode, 200, res.body);
  // 1,001 tokens at 5 credits per 1,000: 5.005, rounded up.
  assert.deepEqual(res.json(), { response: 'Hello there', tokens: 1001, session_id: 'conv-1', credits_used: 6, model: 'gpt-4o' });
  assert.equal((await balance(app, a.companyId)).available, 2000 - 6);
  assert.equal(await heldHolds(app), 0);
  const usage = await sql<{ feature: string; credits: number; tokens: number; api_key_id: string }>(app, 'select * from usage_records');
  assert.equal(usage.length, 1);
  assert.equal(usage[0]!.feature, 'chat');
  assert.equal(usage[0]!.tokens, 1001);
  assert.equal(usage[0]!.api_key_id, keys.ownerA.id);
  await assertLedgerAddsUp(app);
});

test('reusing a session_id brings its history to the model; another user with the same session_id starts afresh', async (t) => {
  const fake = await fakeOpenAi(t);
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  assert.equal((await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('My name is Ada'))).statusCode, 200);
  assert.equal((await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('What is my name?', { agent: 'legal' }))).statusCode, 200);
  const second = fake.seen[1]!.messages;
  assert.equal(second[0]!.role, 'system');
  assert.match(second[0]!.content!, /legal assistant/);
  assert.deepEqual(second.slice(1).map((m) => [m.role, m.content]), [
    ['user', 'My name is Ada'],
    ['assistant', 'You said: My name is Ada'],
    ['user', 'What is my name?'],
  ]);
  // The member of the same company, and a user of another company, with the same session id: no history.
  await call(app, keys.memberA.key, 'POST', '/v1/chat', ask('Who am I?'));
  await call(app, keys.ownerB.key, 'POST', '/v1/chat', ask('Who am I?'));
  assert.deepEqual(fake.seen[2]!.messages.map((m) => m.role), ['system', 'user']);
  assert.deepEqual(fake.seen[3]!.messages.map((m) => m.role), ['system', 'user']);
});

test('chat history written by another process reaches the next call (the cached history follows the session revision)', async (t) => {
  const fake = await fakeOpenAi(t);
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  assert.equal((await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('first'))).statusCode, 200);
  assert.equal((await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('second'))).statusCode, 200);
  // Another process adds an exchange to the session, as this one would: a message and the session's next revision.
  const other = new Database(app.config.databaseFile);
  t.after(() => other.close());
  const session = other.prepare("select id, revision from chat_sessions where key = 'conv-1'").get() as { id: string; revision: number };
  assert.equal(session.revision, 2);
  other.prepare("insert into chat_messages (id, session_id, role, content, tokens, created_at) values (?, ?, 'user', 'from elsewhere', 3, ?)").run(randomUUID(), session.id, Date.now() + 1000);
  other.prepare('update chat_sessions set revision = revision + 1 where id = ?').run(session.id);
  assert.equal((await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('third'))).statusCode, 200);
  assert.deepEqual(
    fake.seen.at(-1)!.messages.slice(1).map((m) => m.content),
    ['first', 'You said: first', 'second', 'You said: second', 'from elsewhere', 'third'],
  );
  // This process's own exchange extends the history it read, in order.
  assert.equal((await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('fourth'))).statusCode, 200);
  assert.deepEqual(fake.seen.at(-1)!.messages.slice(-3).map((m) => m.content), ['third', 'You said: third', 'fourth']);
});

test('exchanges committed in the same millisecond keep one order, cached or read back (chat history ties)', async (t) => {
  let target = 0;
  // Every reply of the burst is held until one moment, so their exchanges commit together.
  const fake = await fakeOpenAi(t, (request) => ({ ...echo(request), delayMs: Math.max(0, target - Date.now()) }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  const chat = (message: string) => call(app, keys.ownerA.key, 'POST', '/v1/chat', ask(message));
  assert.equal((await chat('first')).statusCode, 200);
  target = Date.now() + 300;
  const burst = await Promise.all(Array.from({ length: 10 }, (_, i) => chat(`burst ${i}`)));
  assert.ok(burst.every((r) => r.statusCode === 200));
  target = 0;
  assert.equal((await chat('cached')).statusCode, 200);
  const cached = fake.seen.at(-1)!.messages.slice(1, -1).map((m) => m.content);
  // Read back from the database: another process's write moves the revision.
  const other = new Database(app.config.databaseFile);
  t.after(() => other.close());
  other.prepare("update chat_sessions set revision = revision + 1 where key = 'conv-1'").run();
  assert.equal((await chat('read back')).statusCode, 200);
  const readBack = fake.seen.at(-1)!.messages.slice(1, -3).map((m) => m.content);
  assert.deepEqual(readBack, cached);
  for (let i = 0; i < cached.length; i += 2) assert.equal(cached[i + 1], `You said: ${cached[i]}`, 'each question is followed by its answer');
});

test('history is trimmed to what the model\'s context holds, newest turns kept', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'ok' }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url, AI_MAX_OUTPUT_TOKENS: '100' });
  const { keys } = await modulesCast(app);
  await sql(app, "update models set context_length = 760 where id = 'gpt-4o-mini'");
  for (let i = 0; i < 6; i++) assert.equal((await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask(`turn ${i} ${'x'.repeat(400)}`))).statusCode, 200);
  const last = fake.seen.at(-1)!.messages;
  const users = last.filter((m) => m.role === 'user').map((m) => m.content!.slice(0, 6));
  assert.ok(users.length < 6, `history was trimmed (${users.length} user turns)`);
  assert.equal(users.at(-1), 'turn 5');
  assert.deepEqual(users, users.slice().sort(), 'the kept turns are the newest, in order');
  // Trimmed by whole turns: after the system prompt come question, answer, question, answer, …, the new question.
  const roles = last.slice(1).map((m) => m.role);
  assert.deepEqual(roles, roles.map((_, i) => (i % 2 === 0 ? 'user' : 'assistant')), `no answer without its question: ${roles.join(' ')}`);
});

test('a model priced past what one ledger write may move answers 402 CREDIT_EXHAUSTED, not a validation error of a field the caller never sent', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'ok' }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  await sql(app, "update models set credit_cost = 2147483647 where id = 'gpt-4o-mini'");
  const res = await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi', { model: 'gpt-4o-mini' }));
  assertCode(res, 402, 'CREDIT_EXHAUSTED');
  assert.equal(res.json().balance, 2000);
  assert.equal(fake.seen.length, 0);
});

test("a message the model's context cannot hold is 422 and spends nothing; one that fits gets the reply room the context leaves", async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'ok', usage: { prompt: 10, completion: 1 } }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url, AI_MAX_OUTPUT_TOKENS: '1024' });
  const { a, keys } = await modulesCast(app);
  await sql(app, "update models set context_length = 1500 where id = 'gpt-4o-mini'");
  const before = (await balance(app, a.companyId)).available;
  const tooLong = await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('word '.repeat(1_600), { model: 'gpt-4o-mini' }));
  assertCode(tooLong, 422, 'validation_error');
  assert.match(tooLong.body, /gpt-4o-mini holds 1500/);
  assert.equal(fake.seen.length, 0);
  assert.equal((await balance(app, a.companyId)).available, before);
  // About 1,000 tokens of message: the reply may have what is left of 1,500, not 1,024.
  const fits = await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('word '.repeat(800), { model: 'gpt-4o-mini', session_id: 'fits' }));
  assert.equal(fits.statusCode, 200, fits.body);
  const asked = fake.seen.at(-1)!.max_tokens!;
  assert.ok(asked >= 64 && asked < 1500 - 1000, `max_tokens ${asked}`);
});

test('a prompt in a script the estimate would count low (CJK) is held high enough to be charged in full', async (t) => {
  // About 1.2 tokens a character, as English-trained tokenizers count Chinese; four characters a token would hold a fifth of it.
  const message = '漢字の文章'.repeat(400);
  const fake = await fakeOpenAi(t, () => ({ content: 'ok', usage: { prompt: 2_400, completion: 10 } }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  const res = await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask(message));
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json() as { tokens: number; credits_used: number; model: string };
  const [{ credit_cost }] = await sql<{ credit_cost: number }>(app, 'select credit_cost from models where id = ?', [body.model]);
  assert.equal(body.tokens, 2_410);
  assert.equal(body.credits_used, Math.ceil((2_410 * credit_cost!) / 1000), 'charged what the provider counted, not capped at a low hold');
});

test('model accepts a catalog id or a family; AI_MODEL_MAP names it for the provider; blocked is 422, unknown 404, nothing spent', async (t) => {
  const fake = await fakeOpenAi(t);
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url, AI_MODEL_MAP: 'llama-3-1-70b:llama3.1:70b', AI_API_KEY: 'sk-provider' });
  const { a, keys } = await modulesCast(app);
  let res = await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi', { model: 'claude' }));
  assert.equal(res.json().model, 'claude-sonnet-4');
  assert.equal(fake.seen[0]!.model, 'claude-sonnet-4');
  assert.equal(fake.seen[0]!.authorization, 'Bearer sk-provider');
  res = await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi', { model: 'llama' }));
  assert.equal(res.json().model, 'llama-3-1-70b');
  assert.equal(fake.seen[1]!.model, 'llama3.1:70b');
  const before = (await balance(app, a.companyId)).available;
  await sql(app, "update models set blocked = 1 where id = 'gpt-4o'");
  assertCode(await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi', { model: 'gpt-4o' })), 422, 'model_blocked');
  assertCode(await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi', { model: 'gpt-9' })), 404, 'model_not_found');
  // The family still works through its default.
  assert.equal((await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi', { model: 'gpt' }))).json().model, 'gpt-4o-mini');
  assert.equal(fake.seen.length, 3);
  assert.ok((await balance(app, a.companyId)).available < before);
});

test('without AI_BASE_URL chat and studio answer 503 ai_provider_not_configured, saying how, and spend nothing; detection still works', async (t) => {
  const app = await build(t);
  const { a, keys } = await modulesCast(app);
  const res = await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi'));
  assertCode(res, 503, 'ai_provider_not_configured');
  assert.match(res.json().detail, /AI_BASE_URL/);
  assertCode(await call(app, keys.ownerA.key, 'POST', '/v1/studio/process', { text: 'Hallo wereld' }), 503, 'ai_provider_not_configured');
  const detect = await call(app, keys.ownerA.key, 'POST', '/v1/studio/detect', { text: 'Dit is een Nederlandse zin over het weer van vandaag.' });
  assert.equal(detect.statusCode, 200, detect.body);
  assert.equal(detect.json().language, 'nl');
  assert.equal(detect.json().name, 'Dutch');
  assert.equal((await balance(app, a.companyId)).available, 2000);
  assert.equal((await sql(app, 'select * from credit_holds')).length, 0);
});

test('out of credits is 402 CREDIT_EXHAUSTED with the reason; a spent budget is 402 BUDGET_EXHAUSTED; neither calls the model or spends', async (t) => {
  const fake = await fakeOpenAi(t);
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { a, keys } = await modulesCast(app);
  await inContext(app.kernel.orm, () => app.domains.billing.ledger.reserve({ companyId: a.companyId, credits: 1999, key: 'block', feature: 'test' }));
  const res = await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi', { model: 'gpt-4o' }));
  assertCode(res, 402, 'CREDIT_EXHAUSTED');
  assert.match(res.json().detail, /^needs \d+ credits; balance 1$/);
  assert.equal(res.json().balance, 1);
  // A stream is refused the same way: its first byte waits for the hold.
  const streamed = await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi', { model: 'gpt-4o', stream: true }));
  assertCode(streamed, 402, 'CREDIT_EXHAUSTED');
  assert.equal(streamed.json().balance, 1);
  assert.equal(fake.seen.length, 0);

  const b = await modulesCast(app);
  await sql(app, 'update credit_accounts set budget_micros = 1000, spend_micros = 1000 where company_id = ?', [b.a.companyId]);
  const budget = await call(app, b.keys.ownerA.key, 'POST', '/v1/chat', ask('hi'));
  assertCode(budget, 402, 'BUDGET_EXHAUSTED');
  assert.match(budget.json().detail, /budget/);
  assert.equal(fake.seen.length, 0);
  assert.equal((await balance(app, b.a.companyId)).available, 2000);
});

test('provider failures: 429 and 5xx are retried with backoff, then 502 ai_provider_error; a slow provider is 504; nothing spent', async (t) => {
  let calls = 0;
  const fake = await fakeOpenAi(t, () => (++calls <= 2 ? { status: calls === 1 ? 429 : 503 } : { content: 'third time' }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url, AI_MAX_RETRIES: '2' });
  const { a, keys } = await modulesCast(app);
  const ok = await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi'));
  assert.equal(ok.statusCode, 200, ok.body);
  assert.equal(ok.json().response, 'third time');
  assert.equal(calls, 3);

  const spent = (await balance(app, a.companyId)).available;
  fake.respond(() => ({ status: 500 }));
  const failed = await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi'));
  assertCode(failed, 502, 'ai_provider_error');
  assert.equal((await balance(app, a.companyId)).available, spent);

  const slow = await buildWithAi(t, { AI_BASE_URL: fake.url, AI_TIMEOUT_SECONDS: '1' });
  const cast = await modulesCast(slow);
  fake.respond(() => ({ content: 'late', delayMs: 1500 }));
  assertCode(await call(slow, cast.keys.ownerA.key, 'POST', '/v1/chat', ask('hi')), 504, 'ai_provider_timeout');
  assert.equal((await balance(slow, cast.a.companyId)).available, 2000);
  assert.equal(await heldHolds(slow), 0);
  await assertLedgerAddsUp(app);
});

test('AI_TIMEOUT_SECONDS bounds a provider that stalls after its headers: 504 ai_provider_timeout (streamed: an error event), nothing spent, no turn stored; a long stream that keeps coming is not cut', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'a partial answer', stall: true }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url, AI_TIMEOUT_SECONDS: '1' });
  const { a, keys } = await modulesCast(app);
  const started = Date.now();
  assertCode(await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi')), 504, 'ai_provider_timeout');
  assert.ok(Date.now() - started < 3000, `answered after ${Date.now() - started} ms`);

  const streamed = Date.now();
  const res = await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi', { stream: true }));
  assert.ok(Date.now() - streamed < 3000, `answered after ${Date.now() - streamed} ms`);
  const events = sseEvents(res.body);
  assert.equal(events[0]!.event, 'delta', 'the part sent before the stall was streamed');
  const last = events.at(-1)!;
  assert.equal(last.event, 'error');
  assert.equal(last.data.code, 'ai_provider_timeout');
  assert.equal(last.data.status, 504);
  assert.equal((await balance(app, a.companyId)).available, 2000);
  assert.equal(await heldHolds(app), 0);
  assert.equal((await sql<{ n: number }>(app, 'select count(*) as n from chat_messages'))[0]!.n, 0);
  await assertLedgerAddsUp(app);

  // A stream is bounded by the provider's silence, not its length: a reply longer than the time-out streams to its end while its chunks keep coming.
  const words = Array.from({ length: 8 }, (_, i) => `w${i}`).join(' ');
  fake.respond(() => ({ content: words, chunkDelayMs: 300 }));
  const long = Date.now();
  const streamedLong = sseEvents((await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('talk', { stream: true }))).body);
  assert.ok(Date.now() - long > 2000, 'the whole reply took longer than the time-out');
  assert.equal(streamedLong.at(-1)!.event, 'done', JSON.stringify(streamedLong.at(-1)));
  assert.equal(streamedLong.filter((e) => e.event === 'delta').map((e) => e.data.text).join(''), words);
});

test('AI_TIMEOUT_SECONDS bounds the whole call, the SDK\'s retries and their backoff included', async (t) => {
  // Each attempt is answered at once; the SDK's wait before its retry (the Retry-After the provider asks for) would pass the time-out.
  const fake = await fakeOpenAi(t, () => ({ status: 429, headers: { 'retry-after': '30' } }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url, AI_TIMEOUT_SECONDS: '1', AI_MAX_RETRIES: '2' });
  const { a, keys } = await modulesCast(app);
  let started = Date.now();
  assertCode(await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi')), 504, 'ai_provider_timeout');
  assert.ok(Date.now() - started < 2500, `answered after ${Date.now() - started} ms`);
  assert.equal(fake.seen.length, 1, 'the retry waits for Retry-After, past the time-out');

  started = Date.now();
  const streamed = sseEvents((await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi', { stream: true }))).body).at(-1)!;
  assert.ok(Date.now() - started < 2500, `answered after ${Date.now() - started} ms`);
  assert.deepEqual([streamed.event, streamed.data.code], ['error', 'ai_provider_timeout']);

  // The SDK times out each attempt's wait for headers and retries it: three attempts, not one, would fit the old wait.
  fake.respond(() => ({ content: 'late', delayMs: 1500 }));
  started = Date.now();
  assertCode(await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi')), 504, 'ai_provider_timeout');
  assert.ok(Date.now() - started < 2500, `answered after ${Date.now() - started} ms`);
  assert.equal((await balance(app, a.companyId)).available, 2000);
  assert.equal(await heldHolds(app), 0);
});

test('a usage report that makes no sense (negative, fractional, past any context) is charged by the estimate: 200, the hold settled', async (t) => {
  let usage = { prompt: -100_000, completion: 5 };
  const fake = await fakeOpenAi(t, () => ({ content: 'fine', usage }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { a, keys } = await modulesCast(app);
  for (const report of [{ prompt: -100_000, completion: 5 }, { prompt: 1.5, completion: 5 }, { prompt: 5, completion: 1e15 }]) {
    usage = report;
    for (const [path, body] of [
      ['/v1/chat', ask('hi')],
      ['/v1/agent/run', { task: 'hi' }],
      ['/v1/studio/process', { text: 'hallo wereld' }],
    ] as const) {
      const res = await call(app, keys.ownerA.key, 'POST', path, body);
      assert.equal(res.statusCode, 200, `${path} ${JSON.stringify(report)}: ${res.body}`);
      assert.ok(res.json().tokens > 0 && res.json().tokens < 1000, `${path}: estimated ${res.json().tokens} tokens`);
      assert.equal(res.json().credits_used, 1);
    }
  }
  assert.equal(await heldHolds(app), 0);
  assert.equal((await balance(app, a.companyId)).available, 2000 - 9);
  const records = await sql<{ tokens: number }>(app, 'select tokens from usage_records');
  assert.ok(records.every((r) => r.tokens > 0 && r.tokens < 1000), JSON.stringify(records));
  await assertLedgerAddsUp(app);
});

test('a commit that fails after the call succeeded releases the hold and answers 500 internal_error, never a 422 of a field the caller did not send; no turn is stored', async (t) => {
  const fake = await fakeOpenAi(t);
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { a, keys } = await modulesCast(app);
  const ledger = app.domains.billing.ledger;
  const commit = ledger.commit.bind(ledger);
  // The ledger refusing the usage, then a database failure: either way the call's work is done and its settlement is not.
  const failures = [() => AppError.validation([{ loc: ['credits'], msg: 'must be an integer from 0 to 1000000000', type: 'range' }]), () => new Error('SQLITE_IOERR: disk I/O error')];
  let next: (() => Error) | undefined;
  ledger.commit = async (...args: Parameters<typeof ledger.commit>) => {
    const failure = next;
    next = undefined;
    if (failure) throw failure();
    return commit(...args);
  };
  for (const failure of failures) {
    next = failure;
    assertCode(await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi')), 500, 'internal_error');
    next = failure;
    assertCode(await call(app, keys.ownerA.key, 'POST', '/v1/agent/run', { task: 'hi' }), 500, 'internal_error');
    next = failure;
    const streamed = sseEvents((await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi', { stream: true }))).body).at(-1)!;
    assert.deepEqual([streamed.event, streamed.data.code, streamed.data.status], ['error', 'internal_error', 500]);
  }
  assert.equal(await heldHolds(app), 0);
  assert.equal((await balance(app, a.companyId)).available, 2000);
  assert.equal((await sql<{ n: number }>(app, 'select count(*) as n from chat_messages'))[0]!.n, 0);
  // The next call settles as ever.
  assert.equal((await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi'))).statusCode, 200);
  assert.equal((await sql<{ n: number }>(app, 'select count(*) as n from chat_messages'))[0]!.n, 2);
  await assertLedgerAddsUp(app);
});

test('tokens are estimated when the provider sends no usage', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'x'.repeat(4000), usage: false }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  const res = await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi'));
  assert.equal(res.statusCode, 200, res.body);
  assert.ok(res.json().tokens >= 1000 && res.json().tokens < 1100, `estimated ${res.json().tokens}`);
  assert.equal(res.json().credits_used, Math.ceil(res.json().tokens / 1000));
});

test('web_search puts the results into the context and answers them as sources; without WEB_SEARCH_URL it is 503', async (t) => {
  const fake = await fakeOpenAi(t);
  const search = await fakeSearch(t, (q) => [
    { url: 'https://example.org/a', title: 'Result A', content: `About ${q}` },
    { url: 'javascript:alert(1)', title: 'bad', content: 'dropped' },
    { url: 'https://example.org/b', title: 'Result B', content: 'More' },
  ]);
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url, WEB_SEARCH_URL: search.url });
  const { keys } = await modulesCast(app);
  const res = await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('tides in Zeeland', { web_search: true }));
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(search.queries, ['tides in Zeeland']);
  assert.deepEqual(res.json().sources.map((s: { url: string }) => s.url), ['https://example.org/a', 'https://example.org/b']);
  assert.match(fake.seen[0]!.messages[0]!.content!, /\[1\] Result A \(https:\/\/example.org\/a\)\nAbout tides in Zeeland/);

  const noSearch = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const cast = await modulesCast(noSearch);
  assertCode(await call(noSearch, cast.keys.ownerA.key, 'POST', '/v1/chat', ask('x', { web_search: true })), 503, 'web_search_not_configured');
  assert.equal((await balance(noSearch, cast.a.companyId)).available, 2000);
});

test('bad chat bodies are 422 at the field and spend nothing', async (t) => {
  const fake = await fakeOpenAi(t);
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  for (const [body, where] of [
    [{ agent: 'general', session_id: 's' }, 'body.message'],
    [ask('hi', { agent: 'pirate' }), 'body.agent'],
    [ask('hi', { session_id: '' }), 'body.session_id'],
    [ask('x'.repeat(32_001)), 'body.message'],
    [ask('hi', { web_search: 'yes' }), 'body.web_search'],
  ] as const) {
    const res = await call(app, keys.ownerA.key, 'POST', '/v1/chat', body);
    assert.equal(res.statusCode, 422, res.body);
    assert.ok(res.body.includes(where.split('.')[1]!), `${where}: ${res.body}`);
  }
  assert.equal(fake.seen.length, 0);
});

/** Reads an SSE response into its events. */
function sseEvents(text: string): { event: string; data: Record<string, unknown> }[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim())
    .map((block) => {
      const event = /^event: (.+)$/m.exec(block)?.[1] ?? 'message';
      const data = JSON.parse(/^data: (.+)$/m.exec(block)?.[1] ?? '{}') as Record<string, unknown>;
      return { event, data };
    });
}

test('"stream": true answers Server-Sent Events: deltas, then done with tokens, credits and the session; unbuffered', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'one two three four', usage: { prompt: 500, completion: 500 } }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { a, keys } = await modulesCast(app);
  const res = await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('count', { stream: true }));
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers['content-type']), /^text\/event-stream/);
  assert.equal(res.headers['x-accel-buffering'], 'no');
  assert.match(String(res.headers['cache-control']), /no-cache/);
  assert.ok(res.headers['x-request-id']);
  const events = sseEvents(res.body);
  assert.deepEqual(events.filter((e) => e.event === 'delta').map((e) => e.data.text).join(''), 'one two three four');
  const done = events.at(-1)!;
  assert.equal(done.event, 'done');
  assert.deepEqual(done.data, { tokens: 1000, session_id: 'conv-1', credits_used: 1, model: 'gpt-4o-mini' });
  assert.equal(fake.seen[0]!.stream, true);
  assert.equal((await balance(app, a.companyId)).available, 1999);
  // The streamed exchange is history too.
  await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('again'));
  assert.equal(fake.seen[1]!.messages[2]!.content, 'one two three four');
});

test('a stream that fails after it started ends with an error event and closes; nothing is spent', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ status: 500 }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { a, keys } = await modulesCast(app);
  const res = await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi', { stream: true }));
  assert.equal(res.statusCode, 200);
  const events = sseEvents(res.body);
  assert.equal(events.length, 1);
  assert.equal(events[0]!.event, 'error');
  assert.equal(events[0]!.data.code, 'ai_provider_error');
  assert.equal(events[0]!.data.status, 502);
  assert.equal((await balance(app, a.companyId)).available, 2000);
  // A refusal before the stream starts is a plain problem document.
  assertCode(await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi', { stream: true, model: 'nope' })), 404, 'model_not_found');
});

test('a streamed call answered without an event stream (an HTML page, a JSON completion) or without any choice ends in an error event 502: nothing spent, no turn stored', async (t) => {
  const fake = await fakeOpenAi(t);
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { a, keys } = await modulesCast(app);
  for (const reply of [
    { page: { contentType: 'text/html', body: '<html><body>502 Bad Gateway (proxy)</body></html>' } },
    { ignoreStream: true, content: 'A full answer the client would never see', usage: { prompt: 400, completion: 600 } },
    { noChoice: true, usage: { prompt: 400, completion: 600 } },
  ]) {
    fake.respond(() => reply);
    const res = await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hello', { stream: true }));
    const events = sseEvents(res.body);
    assert.equal(events.length, 1, `${JSON.stringify(reply)}: ${res.body}`);
    assert.deepEqual([events[0]!.event, events[0]!.data.code, events[0]!.data.status], ['error', 'ai_provider_error', 502]);
  }
  assert.equal((await balance(app, a.companyId)).available, 2000);
  assert.equal(await heldHolds(app), 0);
  assert.equal((await sql<{ n: number }>(app, 'select count(*) as n from chat_messages'))[0]!.n, 0);
});

test('a completion without a choice (choices: []) is 502 ai_provider_error and spends nothing; a choice whose content is empty is still a reply', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ noChoice: true, usage: { prompt: 400, completion: 600 } }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { a, keys } = await modulesCast(app);
  assertCode(await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi')), 502, 'ai_provider_error');
  assertCode(await call(app, keys.ownerA.key, 'POST', '/v1/studio/process', { text: 'hallo wereld' }), 502, 'ai_provider_error');
  assert.equal((await balance(app, a.companyId)).available, 2000);
  assert.equal(await heldHolds(app), 0);

  fake.respond(() => ({ content: '' }));
  const empty = await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('say nothing'));
  assert.equal(empty.statusCode, 200, empty.body);
  assert.equal(empty.json().response, '');
  const streamed = sseEvents((await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('say nothing', { stream: true }))).body);
  assert.equal(streamed.at(-1)!.event, 'done');
});

async function listening(t: TestContext, env: Record<string, string>) {
  const app = await buildWithAi(t, env);
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, port: (app.server.address() as AddressInfo).port };
}

test('a client that goes away mid-stream aborts the provider call; the tokens used are spent and the rest of the hold returns', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: Array.from({ length: 200 }, (_, i) => `word${i}`).join(' '), usage: false, chunkDelayMs: 20 }));
  const { app, port } = await listening(t, { AI_BASE_URL: fake.url, AI_MAX_OUTPUT_TOKENS: '4000' });
  const { a, keys } = await modulesCast(app);
  await new Promise<void>((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: '/v1/chat', method: 'POST', headers: { authorization: `Bearer ${keys.ownerA.key}`, 'content-type': 'application/json' } },
      (res) => {
        let seen = 0;
        res.on('data', (chunk: Buffer) => {
          seen += (chunk.toString().match(/event: delta/g) ?? []).length;
          if (seen >= 3) {
            req.destroy();
            resolve();
          }
        });
        res.on('error', () => undefined);
      },
    );
    req.on('error', () => undefined);
    req.on('close', () => resolve());
    req.end(JSON.stringify(ask('talk', { stream: true, model: 'gpt-4o' })));
    setTimeout(() => reject(new Error('no deltas')), 5000);
  });
  // The server notices, aborts the provider call and settles the hold.
  const deadline = Date.now() + 5000;
  while ((fake.closed.length === 0 || (await heldHolds(app)) > 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  assert.equal(fake.closed.length, 1, 'the provider stream was closed before its end');
  assert.equal(await heldHolds(app), 0);
  const [record] = await sql<{ credits: number; tokens: number }>(app, 'select credits, tokens from usage_records');
  assert.ok(record && record.tokens > 0 && record.credits >= 1, 'the used tokens are spent');
  const hold = (await sql<{ credits: number; committed_credits: number }>(app, "select credits, committed_credits from credit_holds where feature = 'chat'"))[0]!;
  assert.ok(hold.committed_credits < hold.credits, `spent ${hold.committed_credits} of the ${hold.credits} held`);
  assert.equal((await balance(app, a.companyId)).available, 2000 - hold.committed_credits);
  await assertLedgerAddsUp(app);
});

test('GraphQL: a signed-in user chats with the same service, and chatStream streams the deltas over graphql-ws', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'alpha beta gamma' }));
  const { app, port } = await listening(t, { AI_BASE_URL: fake.url });
  const { tokens } = await modulesCast(app);
  const res = await gql(app, tokens.ownerA, 'mutation($i: ChatInput!) { chat(input: $i) { response sessionId creditsUsed } }', {
    i: { message: 'hi', agent: 'general', sessionId: 'g1' },
  });
  assert.deepEqual(res.data?.chat, { response: 'alpha beta gamma', sessionId: 'g1', creditsUsed: 1 });

  const client = createClient({ url: `ws://127.0.0.1:${port}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${tokens.ownerA}` }, retryAttempts: 0, lazy: true });
  t.after(() => client.dispose());
  const events: Record<string, unknown>[] = [];
  await new Promise<void>((resolve, reject) => {
    client.subscribe(
      { query: 'subscription { chatStream(input: { message: "more", agent: "general", sessionId: "g1" }) { type text tokens creditsUsed } }' },
      { next: (v) => events.push((v.data as { chatStream: Record<string, unknown> }).chatStream), error: reject, complete: resolve },
    );
  });
  assert.equal(events.filter((e) => e.type === 'delta').map((e) => e.text).join(''), 'alpha beta gamma');
  assert.equal(events.at(-1)!.type, 'done');
  // The socket chat continued the same session.
  assert.equal(fake.seen[1]!.messages.filter((m) => m.role === 'user').length, 2);
});

test('GraphQL chatStream refuses what REST refuses before its stream as a GraphQL error with the same code, and its done event names the model', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'alpha beta' }));
  const { app, port } = await listening(t, { AI_BASE_URL: fake.url });
  const { a, tokens, keys } = await modulesCast(app);
  await sql(app, "update models set blocked = 1 where id = 'gpt-4o'");
  const client = createClient({ url: `ws://127.0.0.1:${port}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${tokens.ownerA}` }, retryAttempts: 0, lazy: true });
  t.after(() => client.dispose());
  const stream = (input: string) => {
    const events: Record<string, unknown>[] = [];
    return new Promise<{ events: Record<string, unknown>[]; errors?: { extensions?: { code?: string } }[] }>((resolve) => {
      client.subscribe(
        { query: `subscription { chatStream(input: { agent: "general", sessionId: "gs", ${input} }) { type text tokens creditsUsed sessionId model code } }` },
        {
          next: (v) => events.push((v.data as { chatStream: Record<string, unknown> }).chatStream),
          error: (errors) => resolve({ events, errors: errors as { extensions?: { code?: string } }[] }),
          complete: () => resolve({ events }),
        },
      );
    });
  };
  for (const [input, status, code] of [
    ['message: "hi", model: "nope"', 404, 'model_not_found'],
    ['message: "hi", model: "gpt-4o"', 422, 'model_blocked'],
    ['message: "hi", webSearch: true', 503, 'web_search_not_configured'],
  ] as const) {
    const { events, errors } = await stream(input);
    assert.deepEqual(events, [], input);
    assert.equal(errors?.[0]?.extensions?.code, code, `${input}: ${JSON.stringify(errors)}`);
    // REST refuses the same before its stream starts.
    const rest = { message: 'hi', agent: 'general', session_id: 'gs', stream: true, ...(input.includes('model') ? { model: input.includes('nope') ? 'nope' : 'gpt-4o' } : { web_search: true }) };
    assertCode(await call(app, keys.ownerA.key, 'POST', '/v1/chat', rest), status, code);
  }
  assert.equal(fake.seen.length, 0);
  assert.equal((await balance(app, a.companyId)).available, 2000);

  const { events, errors } = await stream('message: "hi", model: "claude"');
  assert.equal(errors, undefined);
  const done = events.at(-1)!;
  assert.equal(done.type, 'done');
  assert.equal(done.model, 'claude-sonnet-4');
  const rest = sseEvents((await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('hi', { stream: true, model: 'claude' }))).body).at(-1)!;
  assert.equal(rest.event, 'done');
  assert.equal(rest.data.model, done.model);
});

test('a streamed error event honours the legacy version pin: {detail, code}, as the answer without "stream" is', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ status: 500 }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url, AI_MAX_RETRIES: '0' });
  const { keys } = await modulesCast(app);
  const pinned = (payload: Record<string, unknown>, version = '2026.04.21') =>
    app.inject({ method: 'POST', url: '/v1/chat', payload, headers: { authorization: `Bearer ${keys.ownerA.key}`, 'x-service-api-version': version } });
  const whole = await pinned(ask('hi'));
  assert.equal(whole.statusCode, 502);
  assert.deepEqual(Object.keys(whole.json()).sort(), ['code', 'detail']);
  const streamed = await pinned(ask('hi', { stream: true }));
  assert.equal(streamed.statusCode, 200);
  const events = sseEvents(streamed.body);
  assert.equal(events.length, 1);
  assert.equal(events[0]!.event, 'error');
  assert.deepEqual(events[0]!.data, whole.json());
  // The current version keeps the problem document.
  const current = sseEvents((await pinned(ask('hi', { stream: true }), '2026.05.04')).body);
  assert.equal(current[0]!.data.type, `${app.config.docsUrl}/errors/ai_provider_error`);
  assert.equal(current[0]!.data.status, 502);
});

test('studio translates with the detected source language and refuses unknown codes and modes (422)', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: ' Hello world ' }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  const res = await call(app, keys.ownerA.key, 'POST', '/v1/studio/process', { text: 'Dit is een Nederlandse zin over het weer van vandaag.' });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().result, 'Hello world');
  assert.equal(res.json().source_lang, 'nl');
  assert.equal(res.json().mode, 'translate');
  assert.match(fake.seen[0]!.messages[0]!.content!, /from Dutch into English/);
  const grammar = await call(app, keys.ownerA.key, 'POST', '/v1/studio/process', { text: 'I has a apple', source_lang: 'en', mode: 'grammar' });
  assert.equal(grammar.json().target_lang, 'en');
  assert.match(fake.seen[1]!.messages[0]!.content!, /grammar/);
  assert.equal((await call(app, keys.ownerA.key, 'POST', '/v1/studio/process', { text: 'x', target_lang: 'zz' })).statusCode, 422);
  assert.equal((await call(app, keys.ownerA.key, 'POST', '/v1/studio/process', { text: 'x', mode: 'pirate' })).statusCode, 422);
  assert.equal((await call(app, keys.ownerA.key, 'POST', '/v1/studio/process', { text: 'x', source_lang: 'english' })).statusCode, 422);
  assert.equal(fake.seen.length, 2);
});

test('another user\'s chat session never leaks through GraphQL or REST: a key\'s user is the session owner', async (t) => {
  const fake = await fakeOpenAi(t);
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { tokens, keys } = await modulesCast(app);
  await call(app, keys.ownerA.key, 'POST', '/v1/chat', ask('secret plan'));
  // The same user signed in continues the key's conversation; another user does not.
  await gql(app, tokens.ownerA, 'mutation { chat(input: { message: "and?", agent: "general", sessionId: "conv-1" }) { response } }');
  await gql(app, tokens.memberA, 'mutation { chat(input: { message: "and?", agent: "general", sessionId: "conv-1" }) { response } }');
  assert.ok(fake.seen[1]!.messages.some((m) => m.content === 'secret plan'));
  assert.ok(!fake.seen[2]!.messages.some((m) => m.content === 'secret plan'));
  const company = await modulesCast(app);
  const companyKey = await moduleKey(app, company.tokens.ownerA, ['chat']);
  await call(app, companyKey.key, 'POST', '/v1/chat', ask('and?'));
  assert.ok(!fake.seen[3]!.messages.some((m) => m.content === 'secret plan'));
});

test('two chats sent under one X-Request-Id are two calls, each held and charged (a reused id never makes a call free)', async (t) => {
  const fake = await fakeOpenAi(t);
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { a, keys } = await modulesCast(app);
  const send = (message: string) =>
    app.inject({ method: 'POST', url: '/v1/chat', headers: { authorization: `Bearer ${keys.ownerA.key}`, 'x-request-id': 'same-id-1' }, payload: ask(message) });
  const first = await send('first question');
  const second = await send('second question');
  assert.equal(first.statusCode, 200, first.body);
  assert.equal(second.statusCode, 200, second.body);
  assert.equal(fake.seen.length, 2);
  const charged = first.json().credits_used + second.json().credits_used;
  assert.ok(second.json().credits_used > 0);
  assert.equal((await balance(app, a.companyId)).available, 2000 - charged);
  const [{ n }] = await sql<{ n: number }>(app, 'select count(*) as n from usage_records where company_id = ?', [a.companyId]);
  assert.equal(n, 2);
  const history = await sql<{ content: string }>(app, "select content from chat_messages where role = 'user' order by created_at");
  assert.deepEqual(history.map((m) => m.content), ['first question', 'second question']);
});
