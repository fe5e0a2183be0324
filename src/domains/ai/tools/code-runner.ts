import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { AppError } from '../../../errors/catalog';
import type { WorkerInput, WorkerMessage } from './code-runner.worker';

/**
 * The code-runner tool: runs an AI agent's JavaScript in QuickJS (compiled to
 * wasm) inside a worker thread started for that one run.
 *
 * Three fences, because each misses something:
 * - QuickJS's memory limit, stack limit and interrupt handler (the deadline)
 *   stop ordinary guest code with a clean error;
 * - the worker's V8 resourceLimits cap the host-side JS heap of the run;
 * - a timer in this thread terminates the worker after timeoutMs plus a
 *   grace period: the interrupt handler is only polled between bytecodes, so
 *   a long built-in ('x'.repeat, sort, a giant regex) can outlast it.
 *
 * Isolation comes before speed: a fresh worker and a fresh wasm instance per
 * run, so nothing a guest does survives it. The price, measured on a 2-vCPU
 * development container (Node 20): a trivial run takes 110-170 ms, median
 * ~135 ms: starting the worker ~35 ms, requiring quickjs-emscripten ~15 ms,
 * loading the wasm ~20 ms, runtime and context ~10 ms, the rest thread
 * scheduling (the test "per-run cost" prints it). Compiling the wasm once in
 * the host and passing the WebAssembly.Module to each worker saved only
 * ~8 ms of that, so each worker loads its own.
 */

export interface CodeRunLimits {
  /** Wall time for the guest's code, from the moment its runtime is ready. */
  timeoutMs: number;
  /** QuickJS heap limit for the guest. */
  memoryBytes: number;
  /** Console output kept (further output is dropped, the cut marked). Also caps the result's text. */
  maxOutputChars: number;
  /** Longer code is refused with validation_error before anything runs. */
  maxCodeChars: number;
}

export const DEFAULT_CODE_LIMITS: CodeRunLimits = {
  timeoutMs: 2000,
  memoryBytes: 32 * 1024 * 1024,
  maxOutputChars: 10_000,
  maxCodeChars: 20_000,
};

export interface CodeRunResult {
  ok: boolean;
  /** What the guest wrote with console.log/info/warn/error/debug, one line per call. */
  output: string;
  /** The value of the script's last expression: JSON where JSON can say it, else String(value). */
  result?: string;
  /** Why the run failed: the guest's uncaught error ("ReferenceError: ...") or a limit. */
  error?: string;
  /** The time limit ended the run (the guest's deadline or the host's timer). */
  timedOut?: boolean;
  /** A memory limit ended the run (the guest's QuickJS heap or the worker's V8 heap). */
  outOfMemory?: boolean;
  durationMs: number;
}

const WORKER_FILE = path.join(__dirname, 'code-runner.worker.js');

/** Time the host timer allows past timeoutMs: worker start-up, wasm load and the interrupt handler's own reply. */
const GRACE_MS = 500;

const MIB = 1024 * 1024;

/**
 * Runs `code` as a script and reports its output and final value. Resolves
 * for every sandbox outcome, failures included (ok: false with error, and
 * timedOut for the time limit); rejects only for bad arguments (AppError
 * validation_error), such as code longer than limits.maxCodeChars.
 * Aborting `signal` terminates the run.
 */
export async function runCode(
  code: string,
  limits: CodeRunLimits = DEFAULT_CODE_LIMITS,
  signal?: AbortSignal,
): Promise<CodeRunResult> {
  checkArguments(code, limits);
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  if (signal?.aborted) return { ok: false, output: '', error: 'aborted before it started', durationMs: 0 };

  const input: WorkerInput = {
    code,
    timeoutMs: limits.timeoutMs,
    memoryBytes: limits.memoryBytes,
    maxOutputChars: limits.maxOutputChars,
  };
  const memoryError = `memory limit exceeded (${Math.round((limits.memoryBytes / MIB) * 10) / 10} MiB)`;
  const timeError = `time limit of ${limits.timeoutMs} ms exceeded`;

  return new Promise<CodeRunResult>((resolve) => {
    let output = '';
    let settled = false;
    const worker = new Worker(WORKER_FILE, {
      workerData: input,
      // The guest can reach none of these, but the worker needs none of them either.
      env: {},
      argv: [],
      execArgv: [],
      stdout: true,
      stderr: true,
      resourceLimits: {
        // Host-side copies are bounded by maxOutputChars; the guest's heap lives in wasm memory, outside V8's.
        maxOldGenerationSizeMb: 48 + Math.ceil((limits.maxOutputChars * 8) / MIB),
        maxYoungGenerationSizeMb: 8,
        stackSizeMb: 4,
      },
    });
    // Emscripten may print on abort; nobody reads it, so let it drain.
    worker.stdout.resume();
    worker.stderr.resume();

    const finish = (outcome: Omit<CodeRunResult, 'output' | 'durationMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      void worker.terminate().catch(() => undefined);
      resolve({ ...outcome, output, durationMs: elapsed() });
    };

    const timer = setTimeout(() => finish({ ok: false, timedOut: true, error: timeError }), limits.timeoutMs + GRACE_MS);
    const onAbort = () => finish({ ok: false, error: 'aborted' });
    signal?.addEventListener('abort', onAbort, { once: true });

    worker.on('message', (message: WorkerMessage) => {
      if (message.type === 'output') {
        // The worker already caps its output; the host does not rely on it.
        if (output.length < limits.maxOutputChars + 100) output += message.text;
        return;
      }
      if (message.ok) return finish({ ok: true, result: message.result });
      if (message.timedOut) return finish({ ok: false, timedOut: true, error: timeError });
      if (message.outOfMemory) return finish({ ok: false, outOfMemory: true, error: `${memoryError}: ${message.error}` });
      finish({ ok: false, error: message.error });
    });
    worker.on('error', (error: Error & { code?: string }) => {
      if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') finish({ ok: false, outOfMemory: true, error: memoryError });
      else finish({ ok: false, error: `sandbox failure: ${error.message}` });
    });
    worker.on('exit', (exitCode) => finish({ ok: false, error: `sandbox exited unexpectedly (exit code ${exitCode})` }));
  });
}

function checkArguments(code: string, limits: CodeRunLimits): void {
  if (typeof code !== 'string') throw new AppError('validation_error', 'The code must be a string');
  for (const key of ['timeoutMs', 'memoryBytes', 'maxOutputChars', 'maxCodeChars'] as const) {
    const value = limits?.[key];
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new AppError('validation_error', `limits.${key} must be a positive integer`);
    }
  }
  // QuickJS needs a few hundred KiB for its own context before the guest allocates anything.
  if (limits.memoryBytes < MIB) throw new AppError('validation_error', 'limits.memoryBytes must be at least 1 MiB');
  if (code.length > limits.maxCodeChars) {
    throw new AppError(
      'validation_error',
      `The code is ${code.length} characters long; at most ${limits.maxCodeChars} are allowed`,
    );
  }
}
