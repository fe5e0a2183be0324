/**
 * The code runner's worker_threads entry (see code-runner.ts). One worker
 * runs one snippet in a fresh QuickJS runtime and exits; the host's timer and
 * the worker's resourceLimits bound what the interpreter's own limits miss.
 *
 * The guest sees the QuickJS built-ins and `console` (log, info, warn,
 * error, debug) and nothing else: no require, process, fetch, timers or
 * filesystem. The console functions are the only host functions.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { getQuickJS, shouldInterruptAfterDeadline } from 'quickjs-emscripten';
import type { QuickJSContext, QuickJSHandle } from 'quickjs-emscripten';

/** What the host sends in workerData. */
export interface WorkerInput {
  code: string;
  timeoutMs: number;
  memoryBytes: number;
  maxOutputChars: number;
}

/** What the worker posts back: output as it is written, then one `done`. */
export type WorkerMessage =
  | { type: 'output'; text: string }
  | { type: 'done'; ok: boolean; result?: string; error?: string; timedOut?: boolean; outOfMemory?: boolean };

export const TRUNCATION_MARK = '…[output truncated]';

/**
 * The guest's C stack. QuickJS throws a catchable RangeError past it, well
 * before the wasm stack (5 MiB in this build) would overflow and abort.
 */
const GUEST_STACK_BYTES = 1024 * 1024;

const port = parentPort;
if (!port) throw new Error('code-runner.worker must run in a worker thread');

const post = (message: WorkerMessage) => port.postMessage(message);

void main(workerData as WorkerInput).catch((error: unknown) => {
  // The wasm module aborting (e.g. its own allocator failing) lands here.
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  post({ type: 'done', ok: false, error: `sandbox failure: ${message}`, outOfMemory: /out of memory|memory access/i.test(message) });
});

async function main(input: WorkerInput): Promise<void> {
  const QuickJS = await getQuickJS();
  const runtime = QuickJS.newRuntime();
  runtime.setMemoryLimit(input.memoryBytes);
  runtime.setMaxStackSize(GUEST_STACK_BYTES);
  const context = runtime.newContext();
  const handles: QuickJSHandle[] = [];
  // The deadline starts once the runtime is ready, so loading the wasm does not eat into the guest's time.
  const deadline = Date.now() + input.timeoutMs;
  // Guest code also runs while the worker formats values (getters, toJSON): past the deadline, whatever
  // came out of it is a time-out, not an answer.
  const done = (message: Omit<Extract<WorkerMessage, { type: 'done' }>, 'type'>) =>
    post(Date.now() >= deadline && !message.outOfMemory ? { type: 'done', ok: false, timedOut: true } : { type: 'done', ...message });
  try {
    const printer = new Printer(context, handles, input.maxOutputChars);
    installConsole(context, printer, handles);
    runtime.setInterruptHandler(shouldInterruptAfterDeadline(deadline));

    const evaluated = context.evalCode(input.code, 'sandbox.js', { type: 'global' });
    if (evaluated.error) {
      const failure = describeError(context, printer, evaluated.error);
      evaluated.error.dispose();
      return done({ ok: false, ...failure });
    }
    let value = evaluated.value;
    try {
      // Promise jobs (then-callbacks, async functions) run now, still under the deadline.
      const jobs = runtime.executePendingJobs(-1);
      if (jobs.error) {
        const failure = describeError(context, printer, jobs.error);
        jobs.error.dispose();
        return done({ ok: false, ...failure });
      }
      const state = context.getPromiseState(value);
      if (state.type === 'rejected') {
        const failure = describeError(context, printer, state.error);
        state.error.dispose();
        return done({ ok: false, ...failure });
      }
      if (state.type === 'pending') {
        return done({ ok: false, error: 'The result is a promise that never settles (there are no timers or I/O here)' });
      }
      if (!state.notAPromise) {
        value.dispose();
        value = state.value;
      }
      done({ ok: true, result: printer.format(value, true, input.maxOutputChars) });
    } finally {
      value.dispose();
    }
  } finally {
    for (const handle of handles) if (handle.alive) handle.dispose();
    context.dispose();
    runtime.dispose();
  }
}

/**
 * Turns guest values into text with the intrinsics captured before the guest
 * ran (so a guest that replaces JSON.stringify only fools itself), and cuts
 * long strings inside the guest so the host never copies more than it keeps.
 */
class Printer {
  private readonly stringify: QuickJSHandle;
  private readonly toText: QuickJSHandle;
  private readonly slice: QuickJSHandle;
  private written = 0;
  private truncated = false;

  constructor(
    private readonly context: QuickJSContext,
    handles: QuickJSHandle[],
    private readonly maxOutputChars: number,
  ) {
    const json = context.getProp(context.global, 'JSON');
    this.stringify = context.getProp(json, 'stringify');
    json.dispose();
    this.toText = context.getProp(context.global, 'String');
    const stringProto = context.getProp(this.toText, 'prototype');
    this.slice = context.getProp(stringProto, 'slice');
    stringProto.dispose();
    handles.push(this.stringify, this.toText, this.slice);
  }

  /** Appends one console line and sends it to the host; past maxOutputChars, marks the cut once and drops the rest. */
  write(args: QuickJSHandle[]): void {
    if (this.truncated) return;
    const budget = this.maxOutputChars - this.written;
    const parts: string[] = [];
    let used = 0;
    for (const arg of args) {
      if (used > budget) break;
      parts.push(this.format(arg, false, budget - used + 1));
      used += parts[parts.length - 1].length + 1;
    }
    let line = `${parts.join(' ')}\n`;
    if (line.length > budget) {
      line = line.slice(0, Math.max(0, budget)) + TRUNCATION_MARK;
      this.truncated = true;
    }
    this.written += line.length;
    post({ type: 'output', text: line });
  }

  /**
   * A guest value as text: strings as they are (or JSON-quoted for a result),
   * other values as JSON where JSON can say them, else String(value).
   */
  format(value: QuickJSHandle, quoteStrings: boolean, maxChars: number): string {
    const { context } = this;
    const kind = context.typeof(value);
    if (kind === 'undefined') return 'undefined';
    let text: QuickJSHandle | undefined;
    if (kind === 'string' && !quoteStrings) {
      text = value.dup();
    } else if (kind !== 'function' && kind !== 'symbol' && kind !== 'bigint') {
      const json = context.callFunction(this.stringify, context.undefined, value);
      if (json.error) json.error.dispose();
      else if (context.typeof(json.value) === 'string') text = json.value;
      else json.value.dispose();
    }
    if (!text) {
      const plain = context.callFunction(this.toText, context.undefined, value);
      if (plain.error) {
        plain.error.dispose();
        return '[unprintable value]';
      }
      text = plain.value;
    }
    return this.take(text, maxChars);
  }

  /** Copies at most maxChars of a guest string to the host (then disposes it). */
  private take(text: QuickJSHandle, maxChars: number): string {
    const { context } = this;
    try {
      const lengthHandle = context.getProp(text, 'length');
      const length = context.getNumber(lengthHandle);
      lengthHandle.dispose();
      if (length <= maxChars) return context.getString(text);
      const start = context.newNumber(0);
      const end = context.newNumber(maxChars);
      const cut = context.callFunction(this.slice, text, start, end);
      start.dispose();
      end.dispose();
      if (cut.error) {
        cut.error.dispose();
        return '';
      }
      const head = context.getString(cut.value);
      cut.value.dispose();
      return `${head}${TRUNCATION_MARK}`;
    } finally {
      text.dispose();
    }
  }
}

function installConsole(context: QuickJSContext, printer: Printer, handles: QuickJSHandle[]): void {
  const consoleObject = context.newObject();
  handles.push(consoleObject);
  for (const name of ['log', 'info', 'warn', 'error', 'debug']) {
    const fn = context.newFunction(name, (...args) => {
      printer.write(args);
    });
    context.setProp(consoleObject, name, fn);
    fn.dispose();
  }
  context.setProp(context.global, 'console', consoleObject);
}

/** The guest's thrown value as "Name: message", with the two limits QuickJS reports recognised. */
function describeError(
  context: QuickJSContext,
  printer: Printer,
  error: QuickJSHandle,
): { error: string; timedOut?: boolean; outOfMemory?: boolean } {
  let text: string;
  // typeof null is 'object' too; a thrown null has no name to read.
  if (context.typeof(error) === 'object' && !context.sameValue(error, context.null)) {
    const name = context.getProp(error, 'name');
    const message = context.getProp(error, 'message');
    const nameText = context.typeof(name) === 'string' ? context.getString(name) : 'Error';
    const messageText = context.typeof(message) === 'string' ? context.getString(message) : '';
    name.dispose();
    message.dispose();
    text = messageText ? `${nameText}: ${messageText}` : nameText;
    if (text.length > 2000) text = `${text.slice(0, 2000)}…`;
  } else {
    text = `Uncaught ${printer.format(error, true, 2000)}`;
  }
  if (text === 'InternalError: interrupted') return { error: text, timedOut: true };
  if (text === 'InternalError: out of memory' || text === 'RangeError: out of memory') {
    return { error: text, outOfMemory: true };
  }
  return { error: text };
}
