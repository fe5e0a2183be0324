import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { AppError } from '../../../errors/catalog';

export interface CodeRunLimits {
  timeoutMs: number;
  memoryBytes: number;
  maxOutputChars: number;
  maxCodeChars: number;
}

export const DEFAULT_CODE_LIMITS: CodeRunLimits = { timeoutMs: 2000, memoryBytes: 32 * 1024 * 1024, maxOutputChars: 10_000, maxCodeChars: 20_000 };

export interface CodeRun {
  ok: boolean;
  /** What the script printed with console.*, capped. */
  output: string;
  /** The value of its last expression, as JSON where it can be. */
  result?: string;
  error?: string;
  timedOut?: boolean;
  durationMs: number;
}

/** Time the host grants past the script's own deadline before it terminates the worker. */
const GRACE_MS = 500;

/**
 * Runs untrusted JavaScript for the agent's code_runner tool: QuickJS (WASM)
 * in a fresh worker thread per run (code-runner.worker.ts), with V8 heap
 * limits on the worker, QuickJS's memory limit and deadline inside it, and a
 * host timer that terminates the worker when a long built-in ignores the
 * deadline. A failure of the sandbox is a result (ok: false), never a throw.
 */
export function runCode(code: string, limits: CodeRunLimits = DEFAULT_CODE_LIMITS, signal?: AbortSignal): Promise<CodeRun> {
  if (typeof code !== 'string' || !code.trim()) throw AppError.validation([{ loc: ['code'], msg: 'must not be empty', type: 'string_too_short' }]);
  if (code.length > limits.maxCodeChars) throw AppError.validation([{ loc: ['code'], msg: `at most ${limits.maxCodeChars} characters`, type: 'string_too_long' }]);
  const started = Date.now();
  return new Promise<CodeRun>((resolve) => {
    const worker = new Worker(path.join(__dirname, 'code-runner.worker.js'), {
      workerData: { code, timeoutMs: limits.timeoutMs, memoryBytes: limits.memoryBytes, maxOutputChars: limits.maxOutputChars },
      // The worker's own heap: QuickJS's WASM memory plus room for the module.
      resourceLimits: { maxOldGenerationSizeMb: 64 + Math.ceil(limits.memoryBytes / 1024 / 1024), maxYoungGenerationSizeMb: 16, stackSizeMb: 4 },
      stdout: true,
      stderr: true,
    });
    let settled = false;
    const finish = (run: Omit<CodeRun, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      void worker.terminate();
      resolve({ ...run, durationMs: Date.now() - started });
    };
    const timer = setTimeout(() => finish({ ok: false, output: '', error: `time limit of ${limits.timeoutMs} ms exceeded`, timedOut: true }), limits.timeoutMs + GRACE_MS);
    const onAbort = () => finish({ ok: false, output: '', error: 'aborted' });
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) return onAbort();
    worker.on('message', (reply: Omit<CodeRun, 'durationMs'>) => finish({ ...reply, ...(/time limit/.test(reply.error ?? '') ? { timedOut: true } : {}) }));
    worker.on('error', (error: Error & { code?: string }) =>
      finish({ ok: false, output: '', error: error.code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'memory limit exceeded' : `the sandbox failed: ${error.message}` }),
    );
    worker.on('exit', () => finish({ ok: false, output: '', error: 'the sandbox stopped without an answer' }));
  });
}
