import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChatHistoryCache, TURN_OVERHEAD, type Turn } from '../src/domains/ai/chat-history';

const turn = (content: string, role: Turn['role'] = 'user'): Turn => ({ role, content, tokens: 1 });

test('a cached history is served only at the revision it was read at', () => {
  const cache = new ChatHistoryCache(10);
  let loads = 0;
  const load = () => (loads++, [turn('a')]);
  cache.get('s', 1, load);
  cache.get('s', 1, load);
  assert.equal(loads, 1);
  // Another process wrote: the revision moved, the history is read again.
  cache.get('s', 2, load);
  assert.equal(loads, 2);
});

test('this process\'s own write extends the entry it began from; a missed write drops it', () => {
  const cache = new ChatHistoryCache(3);
  cache.get('s', 1, () => [turn('b2', 'assistant'), turn('b1')]);
  cache.appended('s', 1, 2, [turn('c2', 'assistant'), turn('c1')]);
  // At most maxTurns, newest first.
  assert.deepEqual(cache.get('s', 2, () => assert.fail('read again')).map((t) => t.content), ['c2', 'c1', 'b2']);
  // A write from revision 5 means writes 3 and 4 were made elsewhere: the entry is stale.
  cache.appended('s', 5, 6, [turn('z')]);
  let loaded = false;
  cache.get('s', 2, () => ((loaded = true), []));
  assert.ok(loaded);
});

test('the history cache is bounded by sessions and by characters, least recently used first', () => {
  // Room for two four-character turns and a two-character one, each with its object's share.
  const cache = new ChatHistoryCache(10, 2, 10 + 3 * TURN_OVERHEAD);
  cache.get('a', 1, () => [turn('aaaa')]);
  cache.get('b', 1, () => [turn('bbbb')]);
  cache.get('a', 1, () => assert.fail('a is cached'));
  // A third session evicts b, the least recently used.
  cache.get('c', 1, () => [turn('cc')]);
  let reads = 0;
  cache.get('b', 1, () => (reads++, [turn('bbbb')]));
  assert.equal(reads, 1);
  // Over the character budget: a history larger than all of it is not kept at all.
  cache.get('big', 1, () => [turn('x'.repeat(11 + 2 * TURN_OVERHEAD))]);
  cache.get('big', 1, () => (reads++, []));
  assert.equal(reads, 2);
});

test('many short turns count against the character budget too (each turn\'s object is counted)', () => {
  const cache = new ChatHistoryCache(1000, 1000, 100 * TURN_OVERHEAD);
  // Ten sessions of twenty empty turns: 200 turns where the budget holds 100.
  for (let i = 0; i < 10; i++) cache.get(`s${i}`, 1, () => Array.from({ length: 20 }, () => turn('')));
  let reads = 0;
  for (let i = 0; i < 10; i++) cache.get(`s${i}`, 1, () => (reads++, []));
  assert.ok(reads >= 5, `the oldest sessions were evicted (${reads} read again)`);
});
