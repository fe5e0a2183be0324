import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertCode, call } from './admin-helper';
import { buildWithAi, moduleKey, modulesCast } from './ai-helper';
import { fakeOpenAi, fakeSearch, type SeenRequest } from './fake-ai';
import { calculate, runCode } from '../src/domains/ai';
import { isAppError } from '../src/errors/catalog';
import { sql } from './helper';

/** A model that calls each tool of `plan` in turn, then answers with what the last tool said. */
function scripted(plan: { name: string; arguments: unknown }[]) {
  return (request: SeenRequest) => {
    const results = request.messages.filter((m) => m.role === 'tool');
    if (results.length < plan.length) return { toolCalls: [plan[results.length]!] };
    return { content: `Done: ${results.at(-1)?.content ?? 'no tools'}` };
  };
}

test('agent tool calls really run: the calculator and the sandbox answer, each a step, and the model reads the results', async (t) => {
  const fake = await fakeOpenAi(t, scripted([
    { name: 'calculator', arguments: { expression: '(17 + 25) * 2^3' } },
    { name: 'code_runner', arguments: { code: 'const xs = [3, 1, 2]; console.log(xs.sort().join(",")); xs.length * 7' } },
  ]));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  const res = await call(app, keys.ownerA.key, 'POST', '/v1/agent/run', { task: 'compute things', tools: ['calculator', 'code_runner'] });
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json();
  assert.deepEqual(body.steps, [
    { tool: 'calculator', input: '(17 + 25) * 2^3', output: '336' },
    { tool: 'code_runner', input: 'const xs = [3, 1, 2]; console.log(xs.sort().join(",")); xs.length * 7', output: '1,2,3\nresult: 21' },
  ]);
  assert.equal(body.output, 'Done: 1,2,3\nresult: 21');
  // Only the requested tools were offered, as OpenAI function definitions.
  assert.deepEqual(fake.seen[0]!.tools!.map((tool) => tool.function.name), ['calculator', 'code_runner']);
  assert.equal(fake.seen[1]!.messages.at(-1)!.role, 'tool');
  assert.equal(fake.seen[1]!.messages.at(-1)!.content, '336');
  assert.ok(body.credits_used >= 1);
});

test('the agent is offered no tool unless asked, and a tool it was not offered is refused as a step', async (t) => {
  const fake = await fakeOpenAi(t, scripted([{ name: 'code_runner', arguments: { code: '1' } }]));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const { keys } = await modulesCast(app);
  const res = await call(app, keys.ownerA.key, 'POST', '/v1/agent/run', { task: 'x', tools: ['calculator'] });
  assert.equal(res.json().steps[0].output, 'error: the tool code_runner is not available');
  assert.deepEqual(fake.seen[0]!.tools!.map((tool) => tool.function.name), ['calculator']);
  await call(app, keys.ownerA.key, 'POST', '/v1/agent/run', { task: 'x' });
  assert.equal(fake.seen.at(-1)!.tools, undefined);
  assert.equal((await call(app, keys.ownerA.key, 'POST', '/v1/agent/run', { task: 'x', tools: ['shell'] })).statusCode, 422);
});

test('the agent loop stops at the step limit and asks for an answer', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ toolCalls: [{ name: 'calculator', arguments: { expression: '1+1' } }] }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url, AGENT_MAX_STEPS: '3' });
  const { keys } = await modulesCast(app);
  const res = await call(app, keys.ownerA.key, 'POST', '/v1/agent/run', { task: 'loop forever', tools: ['calculator'] });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().steps.length, 3);
  assert.equal(fake.seen.length, 4);
  assert.equal(fake.seen[3]!.tools, undefined, 'the last call offers no tools');
});

test('an agent whose tools answer in a script the estimate would count low (CJK) is held high enough to be charged in full', async (t) => {
  // The provider counts about 1.2 tokens a CJK character, as English-trained tokenizers do; the tool results grow every later prompt.
  const counted = (request: SeenRequest) =>
    request.messages.reduce((sum, m) => sum + 4 + [...(m.content ?? '')].reduce((n, ch) => n + (ch.charCodeAt(0) < 0x80 ? 0.25 : 1.2), 0), 0);
  const plan = scripted(Array.from({ length: 3 }, () => ({ name: 'code_runner', arguments: { code: 'console.log("漢字の文章".repeat(800))' } })));
  let total = 0;
  const fake = await fakeOpenAi(t, (request) => {
    const usage = { prompt: Math.ceil(counted(request)), completion: 20 };
    total += usage.prompt + usage.completion;
    return { ...plan(request), usage };
  });
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url, AGENT_MAX_STEPS: '3' });
  const { keys } = await modulesCast(app);
  const res = await call(app, keys.ownerA.key, 'POST', '/v1/agent/run', { task: 'write', tools: ['code_runner'], model: 'gpt-4o-mini' });
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json() as { tokens: number; credits_used: number; steps: { output: string }[] };
  assert.equal(body.steps.length, 3);
  // A tool's result is cut to what its token allowance holds, not to a count of characters that means five times more tokens in CJK.
  for (const step of body.steps) assert.ok(step.output.length <= 1000 && step.output.length > 900, `output of ${step.output.length} characters`);
  const [{ credit_cost }] = await sql<{ credit_cost: number }>(app, "select credit_cost from models where id = 'gpt-4o-mini'");
  assert.equal(body.tokens, total);
  assert.equal(body.credits_used, Math.ceil((total * credit_cost!) / 1000), 'charged what the provider counted, not capped at a low hold');
});

test('web_search as an agent tool asks the search endpoint; without WEB_SEARCH_URL the run is 503 before anything is spent', async (t) => {
  const fake = await fakeOpenAi(t, scripted([{ name: 'web_search', arguments: { query: 'atrium' } }]));
  const search = await fakeSearch(t, () => [{ url: 'https://example.org/', title: 'Example', content: 'An example' }]);
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url, WEB_SEARCH_URL: search.url });
  const { keys } = await modulesCast(app);
  const res = await call(app, keys.ownerA.key, 'POST', '/v1/agent/run', { task: 'find', tools: ['web_search'] });
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(search.queries, ['atrium']);
  assert.match(res.json().steps[0].output, /"url":"https:\/\/example.org\/"/);
  const without = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const cast = await modulesCast(without);
  assertCode(await call(without, cast.keys.ownerA.key, 'POST', '/v1/agent/run', { task: 'find', tools: ['web_search'] }), 503, 'web_search_not_configured');
  const agentless = await moduleKey(without, cast.tokens.ownerA, ['chat']);
  assertCode(await call(without, agentless.key, 'POST', '/v1/agent/run', { task: 'x' }), 403, 'insufficient_scope');
});

const refused = (expression: string) => {
  try {
    calculate(expression);
  } catch (error) {
    return isAppError(error) && error.code === 'validation_error';
  }
  return false;
};

test('an agent run and a studio rewrite end at AI_TIMEOUT_SECONDS when the provider stalls after its headers: 504, the hold released', async (t) => {
  const fake = await fakeOpenAi(t, () => ({ content: 'half an answer', stall: true }));
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url, AI_TIMEOUT_SECONDS: '1' });
  const { a, keys } = await modulesCast(app);
  for (const [path, body] of [
    ['/v1/agent/run', { task: 'compute', tools: ['calculator'] }],
    ['/v1/studio/process', { text: 'Goedemorgen allemaal', target_lang: 'en' }],
  ] as const) {
    const started = Date.now();
    assertCode(await call(app, keys.ownerA.key, 'POST', path, body), 504, 'ai_provider_timeout');
    assert.ok(Date.now() - started < 3000, `${path} answered after ${Date.now() - started} ms`);
  }
  assert.equal(app.domains.billing.ledger.balance(a.companyId).available, 2000);
  assert.equal((await sql<{ n: number }>(app, "select count(*) as n from credit_holds where status = 'held'"))[0]!.n, 0);
});

test('the calculator parses arithmetic with precedence, associativity and functions, never evaluating code', () => {
  assert.equal(calculate('2+3*4').result, 14);
  assert.equal(calculate('2^3^2').result, 512);
  assert.equal(calculate('2**10').result, 1024);
  assert.equal(calculate('-2^2').result, -4);
  assert.equal(calculate('(1 + 2) * -3').result, -9);
  assert.equal(calculate('10 % 4 + 5!').result, 122);
  assert.equal(calculate('max(1, 7, 3) + min(4, 2)').result, 9);
  assert.equal(calculate('round(2 * pi * 10)').result, 63);
  assert.equal(calculate('sqrt(16) + log10(1000) + 1.5e2').result, 157);
  for (const bad of ['1/0', '5 % 0', 'constructor', '__proto__', 'process.exit()', 'this', '(1 + 2', '1 + 2)', '', '2 +', 'x'.repeat(600), `${'('.repeat(1000)}1${')'.repeat(1000)}`, 'sqrt(1, 2)', '1e400', "require('fs')", '1;2']) {
    assert.ok(refused(bad), `refused: ${bad.slice(0, 30)}`);
  }
});

test('sandbox escapes are contained: no process, no require, no host global, loops and memory blow-ups end, the host lives on', async () => {
  const escapes = await Promise.all([
    runCode('process.exit(1)'),
    runCode("require('fs').readFileSync('/etc/passwd', 'utf8')"),
    runCode("globalThis.constructor.constructor('return process')().exit(1)"),
    runCode("this.constructor.constructor('return typeof process + typeof require + typeof fetch + typeof setTimeout')()"),
    runCode("import('fs')"),
  ]);
  for (const i of [0, 1, 2, 4]) assert.equal(escapes[i]!.ok, false, JSON.stringify(escapes[i]));
  assert.equal(escapes[3]!.result, '"undefinedundefinedundefinedundefined"', 'a JSON string: nothing of the host');

  const loop = await runCode('while (true) {}', { timeoutMs: 500, memoryBytes: 16 * 1024 * 1024, maxOutputChars: 1000, maxCodeChars: 1000 });
  assert.equal(loop.ok, false);
  assert.equal(loop.timedOut, true);
  assert.ok(loop.durationMs < 2000);

  const memory = await runCode("const a = []; for (;;) a.push(new Array(100000).fill(1))");
  assert.equal(memory.ok, false);
  assert.match(memory.error!, /memory|time limit/);

  const huge = await runCode("'x'.repeat(1e9)");
  assert.equal(huge.ok, false);

  const flood = await runCode("for (;;) console.log('x'.repeat(1000))");
  assert.equal(flood.ok, false);
  assert.ok(flood.output.length <= 10_100, 'output stays capped');

  const abort = new AbortController();
  const pending = runCode('while (true) {}', undefined, abort.signal);
  abort.abort();
  assert.equal((await pending).error, 'aborted');

  // The host is untouched.
  assert.equal(typeof process.pid, 'number');
  assert.equal((await runCode('1 + 2')).result, '3');
});
