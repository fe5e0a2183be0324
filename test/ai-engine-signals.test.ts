import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { Session } from 'node:inspector/promises';
import { AiEngine } from '../src/domains/ai/engine';
import { loadAiConfig } from '../src/domains/ai/config';
import type { ModelView } from '../src/domains/catalog';
import { fakeOpenAi } from './fake-ai';

/**
 * The AbortSignals alive in this process, counted by V8 after a full
 * collection (the inspector's queryObjects): what a finished call leaves
 * behind is garbage by then, or it is a leak.
 */
async function liveAbortSignals(): Promise<number> {
  const session = new Session();
  session.connect();
  try {
    const proto = await session.post('Runtime.evaluate', { expression: 'AbortSignal.prototype' });
    const { objects } = await session.post('Runtime.queryObjects', { prototypeObjectId: proto.result.objectId! });
    const count = await session.post('Runtime.callFunctionOn', {
      objectId: objects.objectId!,
      functionDeclaration: 'function () { return this.length; }',
      returnByValue: true,
    });
    return count.result.value as number;
  } finally {
    session.disconnect();
  }
}

const model = { id: 'gpt-4o-mini' } as ModelView;
const messages = [{ role: 'user' as const, content: 'Sentiment of: quick and friendly' }];

test('engine calls given a long-lived signal leave no signal or listener behind (the bulk job memory leak)', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'positive', usage: { prompt: 12, completion: 1 } }));
  const engine = new AiEngine(loadAiConfig({ AI_BASE_URL: fake.url, AI_MAX_RETRIES: '0' }).ai);
  // A bulk job's signal: one for the whole run, handed to every row's call.
  const job = new AbortController();
  const call = () => engine.complete({ model, messages, maxTokens: 16, signal: job.signal });
  const stream = () => engine.stream({ model, messages, maxTokens: 16, signal: job.signal }, () => undefined);
  const calls = async (n: number) => {
    for (let i = 0; i < n; i++) await (i % 4 === 0 ? stream() : call());
  };
  // The first calls fill what the HTTP client keeps (its connection pool): a bounded number, then a plateau.
  await calls(200);
  const before = await liveAbortSignals();
  await calls(200);
  const after = await liveAbortSignals();
  // Each call used to keep its combined signal and the SDK's alive for as long as the job's signal lived: 400 more here.
  assert.ok(after - before < 20, `${after - before} more AbortSignals alive after 200 finished calls`);
  assert.equal(getEventListeners(job.signal, 'abort').length, 0, 'no call left a listener on the caller’s signal');
});

test('a caller that aborts still ends the call at once, and an aborted caller never reaches the provider', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'late', delayMs: 30_000 }));
  const engine = new AiEngine(loadAiConfig({ AI_BASE_URL: fake.url, AI_MAX_RETRIES: '0' }).ai);
  const caller = new AbortController();
  const started = Date.now();
  const pending = engine.complete({ model, messages, maxTokens: 16, signal: caller.signal });
  setTimeout(() => caller.abort(), 100);
  await assert.rejects(pending);
  assert.ok(Date.now() - started < 5_000, 'the abort ended the wait for the provider');
  const seenBefore = fake.seen.length;
  await assert.rejects(engine.complete({ model, messages, maxTokens: 16, signal: AbortSignal.abort() }));
  assert.equal(fake.seen.length, seenBefore, 'a call whose caller had gone already was not sent');
});
