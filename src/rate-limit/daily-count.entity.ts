import { Entity, PrimaryKey, Property } from '@mikro-orm/core';

/**
 * Requests counted against a daily limit (a plan's daily requests), per key
 * and UTC day, so a restart does not hand out a fresh day. Written by
 * `SqliteDailyCounts`, at most every second; read on a key's first request
 * of the day in a process.
 */
@Entity({ tableName: 'daily_request_counts' })
export class DailyRequestCount {
  @PrimaryKey({ type: 'string', length: 200 })
  key!: string;

  /** Days since 1970-01-01, UTC. */
  @PrimaryKey({ type: 'integer' })
  day!: number;

  @Property({ type: 'integer' })
  count!: number;
}
