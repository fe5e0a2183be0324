import { parentPort, workerData } from 'node:worker_threads';
import { getQuickJS, shouldInterruptAfterDeadline } from 'quickjs-emscripten';

/**
 * The sandbox itself: QuickJS compiled to WebAssembly, in a worker thread of
 * its own. The script sees a bare JavaScript global plus `console`, nothing
 * of Node (no require, process, fetch, timers or files): the only way out is
 * the console's text, capped. Memory and stack are QuickJS's own limits; the
 * interrupt handler stops long scripts, and the host terminates the worker
 * when a built-in runs past it.
 */
interface Job {
  code: string;
  timeoutMs: number;
  memoryBytes: number;
  maxOutputChars: number;
}

async function run(job: Job) {
  const QuickJS = await getQuickJS();
  const runtime = QuickJS.newRuntime();
  runtime.setMemoryLimit(job.memoryBytes);
  runtime.setMaxStackSize(512 * 1024);
  runtime.setInterruptHandler(shouldInterruptAfterDeadline(Date.now() + job.timeoutMs));
  const vm = runtime.newContext();
  let output = '';
  let truncated = false;
  const write = (...args: unknown[]) => {
    if (truncated) return;
    const line = `${args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a) ?? String(a))).join(' ')}\n`;
    if (output.length + line.length > job.maxOutputChars) {
      output += line.slice(0, Math.max(0, job.maxOutputChars - output.length));
      output += '…[output truncated]';
      truncated = true;
    } else output += line;
  };
  const consoleHandle = vm.newObject();
  for (const name of ['log', 'info', 'warn', 'error']) {
    const fn = vm.newFunction(name, (...args) => {
      write(...args.map((handle) => vm.dump(handle)));
    });
    vm.setProp(consoleHandle, name, fn);
    fn.dispose();
  }
  vm.setProp(vm.global, 'console', consoleHandle);
  consoleHandle.dispose();

  const result = vm.evalCode(job.code, 'script.js');
  let reply: { ok: boolean; output: string; result?: string; error?: string };
  if (result.error) {
    const error = vm.dump(result.error) as { name?: string; message?: string } | string;
    result.error.dispose();
    const text = typeof error === 'string' ? error : `${error?.name ?? 'Error'}: ${error?.message ?? String(error)}`;
    reply = { ok: false, output, error: /interrupted/i.test(text) ? `time limit of ${job.timeoutMs} ms exceeded` : /out of memory/i.test(text) ? 'memory limit exceeded' : text };
  } else {
    const value = vm.dump(result.value);
    result.value.dispose();
    let shown: string | undefined;
    if (value !== undefined) {
      try {
        shown = typeof value === 'string' ? value : JSON.stringify(value);
      } catch {
        shown = String(value);
      }
    }
    reply = { ok: true, output, ...(shown === undefined ? {} : { result: shown.slice(0, job.maxOutputChars) }) };
  }
  vm.dispose();
  runtime.dispose();
  return reply;
}

run(workerData as Job).then(
  (reply) => parentPort!.postMessage(reply),
  (error: unknown) => parentPort!.postMessage({ ok: false, output: '', error: /memory/i.test(String(error)) ? 'memory limit exceeded' : String(error) }),
);
