import { test } from 'node:test';
import assert from 'node:assert/strict';
import { uuidv7 } from '../src/ids';

test('uuidv7 ids are valid version-7 UUIDs and strictly increasing, even within one millisecond', () => {
  const ms = Date.now() + 1000;
  const ids = Array.from({ length: 5000 }, () => uuidv7(ms));
  for (const id of ids) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i - 1]! < ids[i]!, `${ids[i - 1]} < ${ids[i]}`);
  assert.equal(new Set(ids).size, ids.length);
  // The timestamp prefix is the millisecond given (or later, past 4096 ids in it).
  assert.ok(parseInt(ids[0]!.replace(/-/g, '').slice(0, 12), 16) >= ms);
});
