import { test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { memoryReliefPlugin } from '../src/host/memory-relief';

/** After a burst leaves garbage in the old generation, an idle process gives the memory back. */
test('an idle process collects the garbage a burst left and its resident set shrinks', async (t) => {
  const app = Fastify();
  await app.register(memoryReliefPlugin, { checkEveryMs: 200, growthBytes: 16 * 1024 * 1024 });
  await app.ready();
  t.after(() => app.close());
  const start = process.memoryUsage.rss();
  // Large strings, as large answers are: each lands in V8's large-object space and is garbage at once.
  // They live a while (answers in flight), then all are dropped.
  let inFlight: string[] = [];
  for (let i = 0; i < 200; i++) inFlight.push(JSON.stringify({ items: 'x'.repeat(500_000 + i) }));
  assert.equal(inFlight.length, 200);
  inFlight = [];
  const peak = process.memoryUsage.rss();
  assert.ok(peak - start > 32 * 1024 * 1024, `the burst grew the resident set (${Math.round((peak - start) / 1048576)} MB)`);
  const deadline = Date.now() + 5_000;
  while (process.memoryUsage.rss() > peak - 32 * 1024 * 1024 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  const after = process.memoryUsage.rss();
  assert.ok(after <= peak - 32 * 1024 * 1024, `peak ${Math.round(peak / 1048576)} MB, after ${Math.round(after / 1048576)} MB`);
});
