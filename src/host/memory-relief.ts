import fp from 'fastify-plugin';
import { performance } from 'node:perf_hooks';
import { collectGarbage } from '../kernel/gc';

/** How often the process looks at its memory and how busy it was. */
const CHECK_EVERY_MS = 5_000;
/** Growth of the resident set since the last look back that is worth a collection (a warm heap grows less). */
const GROWTH_BYTES = 64 * 1024 * 1024;
/** Idle looks in a row before collecting: a pause between bursts is not yet idleness, and a collection leaves a cold heap. */
const IDLE_LOOKS = 3;
/** Event-loop utilisation under which the process counts as idle (nobody would wait for the collection). */
const IDLE_UTILISATION = 0.05;

/**
 * Gives memory back after a burst. Large answers (a few hundred KB of JSON
 * each) live in V8's old generation until a full collection, and V8 starts
 * none while nothing allocates: after a flood of heavy operations the
 * process would keep its peak size indefinitely. Every few seconds it looks:
 * once the event loop has been idle for IDLE_LOOKS looks in a row and the
 * resident set grew by more than GROWTH_BYTES, one full collection runs (through an in-process
 * inspector session, which needs no flag and opens no port). It takes a
 * fraction of a second, only when no request is there to wait for it.
 */
export const memoryReliefPlugin = fp<{ checkEveryMs?: number; growthBytes?: number }>(
  async (app, { checkEveryMs = CHECK_EVERY_MS, growthBytes = GROWTH_BYTES }) => {
    let baseline = process.memoryUsage.rss();
    let last = performance.eventLoopUtilization();
    let idleLooks = 0;
    const timer = setInterval(() => {
      const now = performance.eventLoopUtilization();
      const busy = performance.eventLoopUtilization(now, last).utilization;
      last = now;
      idleLooks = busy > IDLE_UTILISATION ? 0 : idleLooks + 1;
      const rss = process.memoryUsage.rss();
      if (rss < baseline) baseline = rss;
      if (idleLooks < IDLE_LOOKS || rss - baseline < growthBytes) return;
      idleLooks = 0;
      collectGarbage().then(
        () => {
          baseline = process.memoryUsage.rss();
          last = performance.eventLoopUtilization();
        },
        (error: unknown) => app.log.warn({ err: error }, 'memory relief: full collection failed'),
      );
    }, checkEveryMs);
    timer.unref();
    app.addHook('onClose', async () => clearInterval(timer));
  },
  { name: 'atrium-memory-relief' },
);
