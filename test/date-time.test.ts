import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GraphQLDateTimeISO } from 'graphql-scalars';
import { DateTimeISO } from '../subgraphs/date-time';
import { buildSupergraph } from '../subgraphs/supergraph';

/**
 * DateTimeISO remembers the ISO string of each Date it has serialized (the
 * cached viewer hands the same Date objects to every request). These guard
 * that it still answers exactly as graphql-scalars' scalar does.
 */

test('date-time scalar: same output as graphql-scalars for Dates, strings and epoch numbers', () => {
  const inputs: unknown[] = [new Date('2026-11-22T10:15:30.123Z'), new Date(0), '2007-12-03T10:15:30+01:00', 1_795_000_000_000];
  for (const input of inputs) {
    assert.equal(DateTimeISO.serialize(input), GraphQLDateTimeISO.serialize(input), String(input));
    assert.equal(DateTimeISO.serialize(input), GraphQLDateTimeISO.serialize(input), `${String(input)}, second time`);
  }
});

test('date-time scalar: a Date changed in place is never answered with its old time', () => {
  const date = new Date('2026-01-01T00:00:00.000Z');
  assert.equal(DateTimeISO.serialize(date), '2026-01-01T00:00:00.000Z');
  date.setTime(Date.UTC(2027, 5, 6, 7, 8, 9, 10));
  assert.equal(DateTimeISO.serialize(date), '2027-06-06T07:08:09.010Z');
});

test('date-time scalar: invalid values are refused, not serialized', () => {
  assert.throws(() => DateTimeISO.serialize(new Date(Number.NaN)), /invalid Date/);
  assert.throws(() => DateTimeISO.serialize('yesterday'), /invalid date-time-string/);
  assert.throws(() => DateTimeISO.serialize({}), /cannot be serialized/);
  assert.throws(() => DateTimeISO.parseValue('2026-13-01T00:00:00Z'), /invalid date-time-string/);
  assert.equal((DateTimeISO.parseValue('2026-11-22T10:15:30Z') as Date).toISOString(), '2026-11-22T10:15:30.000Z');
});

test('date-time scalar: the served supergraph uses it, under the schema name clients know', async () => {
  const { schema } = await buildSupergraph();
  const served = schema.getType('DateTimeISO');
  assert.ok(served);
  assert.equal((served as typeof DateTimeISO).serialize, DateTimeISO.serialize);
  assert.equal(served.description, GraphQLDateTimeISO.description);
});
