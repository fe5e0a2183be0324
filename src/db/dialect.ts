import { raw, type FilterQuery } from '@mikro-orm/core';

/**
 * The SQL that differs between databases and that neither the ORM nor knex
 * writes portably. The kernel holds the adapter of the database it opened
 * (`Kernel.dialect`); a service that needs such SQL takes the port, so
 * another database is another adapter here and nothing else.
 */
export interface SqlDialect {
  /**
   * The condition "`column` contains `text`", case-insensitively (as the
   * database's lower()) and literally: `%` and `_` are plain characters, not
   * LIKE wildcards. A NULL column matches nothing. `column` is a column of
   * the queried table, written by the caller (never user input).
   */
  containsText<T>(column: string, text: string): FilterQuery<T>;
}

/**
 * SQLite: instr() finds a plain substring, where LIKE would read % and _ as
 * wildcards. The expression is the compared value, not the key: MikroORM
 * inlines the parameters of a raw key into the SQL text, and keeps those of a
 * raw value bound (`0 < instr(...)`).
 */
export const sqliteDialect: SqlDialect = {
  containsText: <T>(column: string, text: string) =>
    ({ [raw('0')]: { $lt: raw(`instr(lower(${column}), lower(?))`, [text]) } }) as FilterQuery<T>,
};
