import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../src/errors/catalog';
import { calculate, MAX_EXPRESSION_CHARS } from '../src/domains/ai/tools/calculator';
import { DEFAULT_CODE_LIMITS, runCode, type CodeRunLimits } from '../src/domains/ai/tools/code-runner';

/** Asserts that `fn` throws an AppError validation_error (and nothing else). */
function assertValidationError(fn: () => unknown, label: string) {
  assert.throws(
    fn,
    (error: unknown) => {
      assert.ok(error instanceof AppError, `${label}: expected an AppError, got ${String(error)}`);
      assert.equal(error.code, 'validation_error', label);
      assert.equal(error.status, 422, label);
      return true;
    },
    label,
  );
}

/** Short limits for the hostile snippets, so the suite stays quick. */
const FAST: CodeRunLimits = { ...DEFAULT_CODE_LIMITS, timeoutMs: 500, memoryBytes: 8 * 1024 * 1024 };

/** A run must never disturb the host: same process, still able to run more code. */
async function assertHostAlive() {
  assert.equal(typeof process.pid, 'number');
  const after = await runCode('40 + 2', FAST);
  assert.equal(after.ok, true);
  assert.equal(after.result, '42');
}

// ---------------------------------------------------------------- calculator

test('calculator: precedence and associativity (2+3*4, 2^3^2 right-assoc, -2^2 = -(2^2))', () => {
  const cases: [string, number][] = [
    ['2+3*4', 14],
    ['(2+3)*4', 20],
    ['10-4-3', 3],
    ['100/10/5', 2],
    ['2^3^2', 512],
    ['2**3**2', 512],
    ['-2^2', -4],
    ['(-2)^2', 4],
    ['2^-1', 0.5],
    ['-3!', -6],
    ['2^3!', 64],
    ['10 % 4', 2],
    ['-7 % 3', -1],
    ['+5 - -5', 10],
    ['1.5e3 + .5', 1500.5],
    ['4!', 24],
    ['0!', 1],
    ['2 * -3', -6],
    ['-0 * 5', 0],
  ];
  for (const [expression, expected] of cases) {
    assert.deepEqual(calculate(expression), { expression, result: expected }, expression);
  }
});

test('calculator: functions and constants', () => {
  const close = (expression: string, expected: number) => {
    const { result } = calculate(expression);
    assert.ok(Math.abs(result - expected) < 1e-12, `${expression} = ${result}, expected ${expected}`);
  };
  close('sqrt(16)', 4);
  close('abs(-3.5)', 3.5);
  close('round(2.5) + round(-2.5)', 0);
  close('round(2.4)', 2);
  close('floor(-1.5)', -2);
  close('ceil(1.2)', 2);
  close('min(3, 1, 2)', 1);
  close('max(3, 1, 2, 10)', 10);
  close('max(7)', 7);
  close('log(e)', 1);
  close('ln(e^2)', 2);
  close('log10(1000)', 3);
  close('log2(8)', 3);
  close('exp(0)', 1);
  close('sin(pi/2)', 1);
  close('cos(0)', 1);
  close('tan(pi/4)', 1);
  close('2*PI', 2 * Math.PI);
  close('sqrt(max(9, 16)) * 2 + min(1, abs(-2))', 9);
});

test('calculator: bad input is a validation_error naming the problem, never another kind of throw', () => {
  const bad = [
    '1/0',
    '5 % 0',
    '10^400',
    '171!',
    '2.5!',
    '(-1)!',
    'sqrt(-1)',
    'log(0)',
    '1e400',
    '',
    '   ',
    'constructor',
    '__proto__',
    'toString',
    'valueOf()',
    'hasOwnProperty(1)',
    'constructor.constructor("return process")()',
    'process.exit()',
    'process',
    'x + 1',
    'foo(1)',
    'sqrt',
    'sqrt()',
    'sqrt(1, 2)',
    'max()',
    '(1+2',
    '1+2)',
    '((1)',
    '1 2',
    '1 +',
    '* 2',
    '2 ** ',
    '1,2',
    '3 & 4',
    '"1"',
    '1;2',
    '`1`',
    '[1]',
  ];
  for (const expression of bad) assertValidationError(() => calculate(expression), JSON.stringify(expression));
});

test('calculator: unknown names such as constructor and __proto__ are never looked up on an object', () => {
  // A plain-object table would find Object.prototype members here and call or return them.
  for (const name of ['constructor', '__proto__', 'toString', 'valueOf', '__defineGetter__', 'hasOwnProperty', 'isPrototypeOf']) {
    assertValidationError(() => calculate(name), name);
    assertValidationError(() => calculate(`${name}(1)`), `${name}(1)`);
  }
});

test('calculator: error details give the 1-based position', () => {
  assert.throws(() => calculate('1 + foo'), (error: AppError) => /position 5/.test(error.message));
  assert.throws(() => calculate('2 * (3 + 4'), (error: AppError) => /position 5/.test(error.message));
  assert.throws(() => calculate('8 / (2 - 2)'), (error: AppError) => /division by zero/i.test(error.message));
});

test('calculator: input length and nesting are capped (600 chars, 1000 parentheses, 100 signs)', () => {
  const long = '1+'.repeat(300) + '1';
  assert.ok(long.length > MAX_EXPRESSION_CHARS);
  assertValidationError(() => calculate(long), '601-char input');
  assertValidationError(() => calculate('1'.padEnd(600, ' ')), '600-char input of mostly spaces');
  assertValidationError(() => calculate('('.repeat(1000) + '1' + ')'.repeat(1000)), '1000 parentheses');
  assertValidationError(() => calculate('('.repeat(100) + '1' + ')'.repeat(100)), '100 parentheses (within the length cap)');
  assertValidationError(() => calculate('-'.repeat(100) + '1'), '100 unary minus signs');
  assertValidationError(() => calculate('2^'.repeat(100) + '1'), '100 chained powers');
  // Moderate nesting is fine.
  assert.equal(calculate('('.repeat(50) + '1' + ')'.repeat(50)).result, 1);
  assert.equal(calculate('1+'.repeat(200) + '1').result, 201);
});

test('calculator: a non-string argument is a validation_error', () => {
  assertValidationError(() => calculate(42 as unknown as string), 'number');
  assertValidationError(() => calculate(undefined as unknown as string), 'undefined');
});

// ---------------------------------------------------------------- code runner

test('sandbox: the last expression is the result; console output is captured', async () => {
  const sum = await runCode('1 + 2');
  assert.equal(sum.ok, true);
  assert.equal(sum.result, '3');
  assert.equal(sum.output, '');
  assert.equal(typeof sum.durationMs, 'number');

  const logged = await runCode('console.log("hello", 42, { a: [1, 2] }); console.error("oops"); "done"');
  assert.equal(logged.ok, true);
  assert.equal(logged.output, 'hello 42 {"a":[1,2]}\noops\n');
  assert.equal(logged.result, '"done"');

  const json = await runCode('({ a: 1, b: [true, null] })');
  assert.deepEqual(JSON.parse(json.result ?? ''), { a: 1, b: [true, null] });

  const nothing = await runCode('let x = 1;');
  assert.equal(nothing.ok, true);
  assert.equal(nothing.result, 'undefined');
});

test('sandbox: promises settle before the result is read; a never-settling one fails', async () => {
  const resolved = await runCode('Promise.resolve(20).then((x) => x + 1)');
  assert.equal(resolved.result, '21');
  const awaited = await runCode('(async () => { console.log("in"); return 7; })()');
  assert.equal(awaited.ok, true);
  assert.equal(awaited.result, '7');
  assert.equal(awaited.output, 'in\n');
  const rejected = await runCode('Promise.reject(new TypeError("no"))');
  assert.equal(rejected.ok, false);
  assert.match(rejected.error ?? '', /TypeError/);
  const pending = await runCode('new Promise(() => {})');
  assert.equal(pending.ok, false);
  assert.equal(pending.timedOut, undefined);
});

test('sandbox: a guest exception is ok:false with its error, output so far kept', async () => {
  const thrown = await runCode('console.log("before"); null.x');
  assert.equal(thrown.ok, false);
  assert.match(thrown.error ?? '', /TypeError/);
  assert.equal(thrown.output, 'before\n');
  const primitive = await runCode('throw 42');
  assert.equal(primitive.ok, false);
  assert.match(primitive.error ?? '', /42/);
  const thrownNull = await runCode('throw null');
  assert.equal(thrownNull.ok, false);
  assert.match(thrownNull.error ?? '', /null/);
  const syntax = await runCode('let = ;');
  assert.equal(syntax.ok, false);
  assert.match(syntax.error ?? '', /SyntaxError/);
});

test('sandbox: process and require do not exist (ReferenceError), host untouched', async () => {
  const exit = await runCode('process.exit(1)');
  assert.equal(exit.ok, false);
  assert.match(exit.error ?? '', /ReferenceError/);
  const fs = await runCode("require('fs').readFileSync('/etc/passwd', 'utf8')");
  assert.equal(fs.ok, false);
  assert.match(fs.error ?? '', /ReferenceError/);
  for (const name of ['process', 'require', 'module', 'fetch', 'setTimeout', 'setInterval', 'queueMicrotask', 'WebAssembly', 'Buffer', 'global', 'import.meta']) {
    const probe = name === 'import.meta' ? 'typeof import.meta' : `typeof ${name}`;
    const result = await runCode(probe, FAST);
    if (result.ok) assert.equal(result.result, '"undefined"', name);
    else assert.match(result.error ?? '', /SyntaxError|ReferenceError/, name);
  }
  const imported = await runCode("import('fs')", FAST);
  assert.equal(imported.ok, false);
  assert.equal(process.exitCode, undefined);
  await assertHostAlive();
});

test('sandbox: the Function-constructor escape reaches only the sandbox global, never the host process', async () => {
  const hostPid = String(process.pid);
  const viaGlobal = await runCode("globalThis.constructor.constructor('return process')()");
  assert.equal(viaGlobal.ok, false);
  assert.match(viaGlobal.error ?? '', /ReferenceError/);

  const viaThis = await runCode(
    "const g = this.constructor.constructor('return this')(); g.escaped = true; Object.getOwnPropertyNames(g).filter((k) => !/^[A-Z]/.test(k))",
  );
  assert.equal(viaThis.ok, true);
  const names = JSON.parse(viaThis.result ?? '[]') as string[];
  for (const hostOnly of ['process', 'require', 'Buffer', 'setTimeout', 'fetch']) assert.ok(!names.includes(hostOnly), hostOnly);
  assert.ok(names.includes('console') && names.includes('escaped'));
  assert.equal((globalThis as Record<string, unknown>).escaped, undefined, 'the sandbox global is not the host global');

  // The host functions' own constructor chain leads back into the sandbox, not the host.
  const viaConsole = await runCode(
    "[console.log.constructor('return typeof process')(), console.log.constructor.constructor('return this')() === globalThis]",
  );
  assert.equal(viaConsole.result, '["undefined",true]');

  const probes = [
    "(function(){ return this })().constructor.constructor('return typeof process + typeof require')()",
    "Object.getPrototypeOf(async function(){}).constructor('return 1')().then(() => typeof process)",
    "Reflect.ownKeys(globalThis).map(String).join(',')",
    "(() => { try { null.f() } catch (e) { return e.constructor.constructor('return typeof process')() } })()",
  ];
  for (const probe of probes) {
    const result = await runCode(probe);
    const text = `${result.output}${result.result ?? ''}${result.error ?? ''}`;
    assert.ok(!text.includes(hostPid), probe);
    assert.ok(!/"(process|require|Buffer)"/.test(text), probe);
  }
  const typeofs = await runCode(probes[0]);
  assert.equal(typeofs.result, '"undefinedundefined"');
});

test('sandbox: while(true) is stopped by the time limit within timeoutMs + 1s', async () => {
  const started = Date.now();
  const result = await runCode('while (true) {}');
  const elapsed = Date.now() - started;
  assert.equal(result.ok, false);
  assert.equal(result.timedOut, true);
  assert.ok(elapsed >= DEFAULT_CODE_LIMITS.timeoutMs - 50, `stopped too early: ${elapsed} ms`);
  assert.ok(elapsed < DEFAULT_CODE_LIMITS.timeoutMs + 1000, `stopped too late: ${elapsed} ms`);
  await assertHostAlive();
});

test('sandbox: the time limit holds against catch, getters and toJSON in output', async () => {
  const caught = await runCode('for (;;) { try { while (true) {} } catch (e) {} }', FAST);
  assert.equal(caught.timedOut, true);
  const inLog = await runCode('console.log({ toJSON() { while (true) {} } })', FAST);
  assert.equal(inLog.timedOut, true);
  const inResult = await runCode('({ toJSON() { for (;;) {} } })', FAST);
  assert.equal(inResult.timedOut, true);
  const inErrorName = await runCode('throw { get name() { for (;;) {} }, message: "m" }', FAST);
  assert.equal(inErrorName.ok, false);
  assert.equal(inErrorName.timedOut, true);
  const inPromiseJobs = await runCode('(async () => { for (;;) { await null } })()', FAST);
  assert.equal(inPromiseJobs.timedOut, true);
});

test('sandbox: a long built-in the interrupt handler cannot reach is ended by the host timer', async () => {
  // QuickJS polls its interrupt handler between bytecodes, not inside JSON.stringify or join:
  // only the host's terminate() stops these, about timeoutMs + grace after the start.
  const limits: CodeRunLimits = { ...DEFAULT_CODE_LIMITS, timeoutMs: 200 };
  for (const code of ["JSON.stringify(new Array(4e6).fill('abcdefgh')).length", "'ab'.repeat(4e6).split('').reverse().join('').length"]) {
    const started = Date.now();
    const result = await runCode(code, limits);
    assert.equal(result.ok, false, code);
    assert.ok(result.timedOut === true || result.outOfMemory === true, code);
    assert.ok(Date.now() - started < limits.timeoutMs + 2000, `${code}: ${Date.now() - started} ms`);
  }
  await assertHostAlive();
});

test('sandbox: memory exhaustion is contained (repeat(1e9), doubling concat, an ever-growing array)', async () => {
  const snippets = [
    "'x'.repeat(1e9)",
    'let a = [1]; for (;;) { a = a.concat(a) }',
    'let a = []; for (;;) { a = [].concat(a, [a.length, a.length + 1]) }',
    'const a = []; let i = 0; for (;;) a.push(i++)',
    'const a = []; for (;;) a.push({ s: "abc" + a.length })',
    'let s = "ab"; const keep = []; for (;;) { s = s + s.length; keep.push(s) }',
    'new Array(1e8).fill(0)',
  ];
  // The first two must end by the memory limit: given time enough that a loaded machine (seven workers starting
  // at once) cannot end them by the clock first.
  const results = await Promise.all(snippets.map((code, i) => runCode(code, { ...FAST, timeoutMs: i < 2 ? 30_000 : 3000 })));
  results.forEach((result, i) => {
    assert.equal(result.ok, false, snippets[i]);
    // Whichever limit comes first, the run ends in a limit, not a crash.
    assert.ok(result.outOfMemory === true || result.timedOut === true || /RangeError|too long/.test(result.error ?? ''), `${snippets[i]}: ${result.error}`);
  });
  assert.equal(results[0].outOfMemory, true);
  assert.equal(results[1].outOfMemory, true);
  await assertHostAlive();
});

test('sandbox: deep recursion is a contained stack overflow', async () => {
  const result = await runCode('function f(n) { return f(n + 1) + 1 } f(0)', FAST);
  assert.equal(result.ok, false);
  assert.match(result.error ?? '', /stack|RangeError|InternalError/i);
  await assertHostAlive();
});

test('sandbox: an output flood is truncated and the run stays bounded', async () => {
  const limits: CodeRunLimits = { ...FAST, maxOutputChars: 5_000 };
  const result = await runCode("for (;;) console.log('x'.repeat(1000))", limits);
  assert.equal(result.ok, false);
  assert.equal(result.timedOut, true);
  assert.ok(result.output.length <= limits.maxOutputChars + 30, `output of ${result.output.length} chars`);
  assert.ok(result.output.endsWith('[output truncated]'));

  const oneHugeLine = await runCode("console.log('y'.repeat(2_000_000)); 1", limits);
  assert.equal(oneHugeLine.ok, true);
  assert.ok(oneHugeLine.output.length <= limits.maxOutputChars + 30);
  assert.ok(oneHugeLine.output.endsWith('[output truncated]'));

  const hugeResult = await runCode("'z'.repeat(1_000_000)", limits);
  assert.equal(hugeResult.ok, true);
  assert.ok((hugeResult.result ?? '').length <= limits.maxOutputChars + 30);
});

test('sandbox: SharedArrayBuffer and Atomics.wait are contained', async () => {
  for (const code of [
    'new SharedArrayBuffer(16)',
    'Atomics.wait(new Int32Array(new SharedArrayBuffer(16)), 0, 0)',
    'Atomics.wait(new Int32Array(16), 0, 0)',
  ]) {
    const started = Date.now();
    const result = await runCode(code, FAST);
    assert.ok(Date.now() - started < FAST.timeoutMs + 2000, code);
    assert.equal(typeof result.ok, 'boolean', code);
  }
  await assertHostAlive();
});

test('sandbox: an AbortSignal ends the run', async () => {
  const controller = new AbortController();
  const started = Date.now();
  const running = runCode('while (true) {}', { ...DEFAULT_CODE_LIMITS, timeoutMs: 30_000 }, controller.signal);
  setTimeout(() => controller.abort(), 300);
  const result = await running;
  assert.equal(result.ok, false);
  assert.notEqual(result.timedOut, true);
  assert.ok(Date.now() - started < 3000, 'aborted promptly');

  const already = await runCode('1', DEFAULT_CODE_LIMITS, AbortSignal.abort());
  assert.equal(already.ok, false);
  await assertHostAlive();
});

test('sandbox: concurrent runs are isolated from one another', async () => {
  // Isolation is what is tested, not speed: a loaded CI machine must not time these out (the hog keeps FAST).
  const roomy = { ...FAST, timeoutMs: 10_000 };
  const runs = Array.from({ length: 6 }, (_, i) =>
    runCode(`var before = typeof globalThis.mark; globalThis.mark = ${i}; Object.prototype.polluted = ${i}; [before, mark, ({}).polluted]`, roomy),
  );
  // A hostile neighbour running at the same time does not disturb them.
  const hog = runCode('while (true) {}', FAST);
  const results = await Promise.all(runs);
  results.forEach((result, i) => {
    assert.equal(result.ok, true, result.error);
    assert.deepEqual(JSON.parse(result.result ?? ''), ['undefined', i, i]);
  });
  assert.equal((await hog).timedOut, true);
  assert.equal(({} as Record<string, unknown>).polluted, undefined, 'host prototypes untouched');
});

test('sandbox: bad arguments reject with validation_error; sandbox failures never reject', async () => {
  const tooLong = 'x'.repeat(DEFAULT_CODE_LIMITS.maxCodeChars + 1);
  await assert.rejects(runCode(tooLong), (error: unknown) => error instanceof AppError && error.code === 'validation_error');
  await assert.rejects(
    runCode('1', { ...DEFAULT_CODE_LIMITS, timeoutMs: 0 }),
    (error: unknown) => error instanceof AppError && error.code === 'validation_error',
  );
  await assert.rejects(
    runCode('1', { ...DEFAULT_CODE_LIMITS, memoryBytes: 1024 }),
    (error: unknown) => error instanceof AppError && error.code === 'validation_error',
  );
  await assert.rejects(runCode(42 as unknown as string), (error: unknown) => error instanceof AppError && error.code === 'validation_error');
});

test('sandbox: per-run cost (fresh worker and wasm per run) is reported', async (t) => {
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    const result = await runCode('1');
    assert.equal(result.ok, true);
    times.push(Math.round(performance.now() - started));
  }
  times.sort((a, b) => a - b);
  t.diagnostic(`per-run cost: median ${times[2]} ms (min ${times[0]}, max ${times[4]})`);
  // Generous: this guards against a regression to seconds, not a benchmark.
  assert.ok(times[2] < 2000);
});
