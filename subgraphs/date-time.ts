import { GraphQLScalarType } from 'graphql';
import { GraphQLDateTimeISO } from 'graphql-scalars';

/**
 * Each Date's ISO string, remembered per Date instance. `toISOString` costs
 * about 650 ns on this runtime, the largest single item of a cached profile
 * read (bench/README.md), and the cached viewer hands the same Date objects to
 * every request. The remembered time guards against a Date changed in place.
 */
const formatted = new WeakMap<Date, { time: number; iso: string }>();

/**
 * graphql-scalars' DateTimeISO (same name, description and input parsing)
 * with a faster output path for valid Dates. Anything else (strings, epoch
 * numbers, invalid values) goes through graphql-scalars unchanged.
 */
export const DateTimeISO = new GraphQLScalarType({
  ...GraphQLDateTimeISO.toConfig(),
  serialize(value: unknown): string {
    if (!(value instanceof Date)) return GraphQLDateTimeISO.serialize(value) as string;
    const time = value.getTime();
    if (Number.isNaN(time)) return GraphQLDateTimeISO.serialize(value) as string;
    const known = formatted.get(value);
    if (known !== undefined && known.time === time) return known.iso;
    const iso = value.toISOString();
    formatted.set(value, { time, iso });
    return iso;
  },
});
