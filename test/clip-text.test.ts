import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clipText } from '../src/clip-text';

test('clipText cuts at most max units and never leaves half of a surrogate pair', () => {
  assert.equal(clipText('abc', 5), 'abc');
  assert.equal(clipText('abcdef', 3), 'abc');
  assert.equal(clipText('ab\u{1F600}', 3), 'ab', 'the pair would be split: it goes whole');
  assert.equal(clipText('ab\u{1F600}', 4), 'ab\u{1F600}');
  assert.equal(clipText('a\u{1F600}b', 3), 'a\u{1F600}');
  assert.ok(clipText('\u{1F600}'.repeat(10), 7).isWellFormed());
});
