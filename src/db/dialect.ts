import { raw, type FilterQuery } from '@mikro-orm/core';

/**
 * The SQL that differs between databases and that neither the ORM nor knex
 * writes portably. The kernel holds the adapter of the database it opened
 * (`Kernel.dialect`); a service that needs such SQL takes the port, so
 * another database is another adapter here and nothing else.
 */
export interface SqlDialect {
  /**
   * The condition "`column` contains `text`", literally and exactly: `%` and
   * `_` are plain characters, not LIKE wildcards, and case counts (search
   * case-insensitively by comparing folded keys, src/search-key.ts). A NULL
   * column matches nothing. `column` is a column of the queried table,
   * written by the caller (never user input).
   */
  contains<T>(column: string, text: string): FilterQuery<T>;
}

/**
 * SQLite: instr() finds a plain substring, where LIKE would read % and _ as
 * wildcards. The expression is the compared value, not the key: MikroORM
 * inlines the parameters of a raw key into the SQL text, and keeps those of a
 * raw value bound (`0 < instr(...)`).
 */
export const sqliteDialect: SqlDialect = {
  contains: <T>(column: string, text: string) => ({ [raw('0')]: { $lt: raw(`instr(${column}, ?)`, [text]) } }) as FilterQuery<T>,
};
