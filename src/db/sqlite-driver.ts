import {
  AbstractSqlDriver,
  BetterSqliteConnection,
  BetterSqlitePlatform,
  type AbstractSqlPlatform,
  type Knex,
} from '@mikro-orm/better-sqlite';
import { JsonProperty, Utils, type AnyEntity, type Configuration, type EntityData, type LoggingOptions, type QueryResult, type Transaction } from '@mikro-orm/core';

/** SQL text and the values bound to its `?` placeholders, one each, in order. */
export interface BoundSql {
  sql: string;
  bindings: unknown[];
}

/**
 * MikroORM 6's knex connection inlines every parameter into the SQL text
 * (`platform.formatQuery`) and runs it unbound; SQLite reads the text as a C
 * string, so a NUL inside a string literal cut the statement short (a 500).
 * This is `formatQuery`, placeholder for placeholder, with every value bound
 * instead: the same SQL text but for the values, and each value stored the way
 * its inlined literal stored it (see `bindValue`). Identifiers (`??`) and raw
 * fragments stay SQL text, as before.
 */
export function bindParameters(platform: AbstractSqlPlatform, sql: string, params: readonly unknown[]): BoundSql {
  const bindings: unknown[] = [];
  if (params.length === 0) return { sql, bindings };
  // A placeholder past the last parameter was inlined as NULL; it still is (it is no one's value).
  const value = (param: unknown) => (j > params.length ? 'NULL' : bindValue(platform, param, bindings));
  const identifier = (param: unknown) => platform.quoteIdentifier(param as string);
  // The scan of Platform.formatQuery, kept as is so the same `?` are placeholders. It cannot tell a `?`
  // inside a quoted literal of the SQL text from a placeholder; the ORM writes no such literal.
  let j = 0;
  let pos = 0;
  let ret = '';
  if (sql[0] === '?') {
    if (sql[1] === '?') {
      ret += identifier(params[j++]);
      pos = 2;
    } else {
      ret += value(params[j++]);
      pos = 1;
    }
  }
  while (pos < sql.length) {
    const idx = sql.indexOf('?', pos + 1);
    if (idx === -1) {
      ret += sql.substring(pos, sql.length);
      break;
    }
    if (sql.substring(idx - 1, idx + 1) === '\\?') {
      ret += sql.substring(pos, idx - 1) + '?';
      pos = idx + 1;
    } else if (sql.substring(idx, idx + 2) === '??') {
      ret += sql.substring(pos, idx) + identifier(params[j++]);
      pos = idx + 2;
    } else {
      ret += sql.substring(pos, idx) + value(params[j++]);
      pos = idx + 1;
    }
  }
  return { sql: ret, bindings };
}

/**
 * The SQL text standing for one parameter (`?`, a list of them, or a raw
 * fragment), its values pushed to `bindings`. Mirrors the SQLite platform's
 * quoteValue: a Date was its epoch milliseconds, a plain object its JSON.
 */
function bindValue(platform: AbstractSqlPlatform, value: unknown, bindings: unknown[]): string {
  if (value instanceof Date) return bind(bindings, integer(+value));
  if (Utils.isRawSql(value)) return spliced(platform, value.sql, value.params ?? [], bindings);
  if (platform.isRaw(value)) {
    // A knex Raw or Ref: its own SQL and bindings.
    const compiled = (value as Knex.Raw).toSQL();
    return spliced(platform, compiled.sql, compiled.bindings ?? [], bindings);
  }
  if (Utils.isPlainObject(value) || (value as Record<symbol, unknown> | null)?.[JsonProperty]) return bind(bindings, JSON.stringify(value));
  return escaped(value, bindings, false);
}

function spliced(platform: AbstractSqlPlatform, sql: string, params: readonly unknown[], bindings: unknown[]): string {
  const inner = bindParameters(platform, sql, params);
  bindings.push(...inner.bindings);
  return inner.sql;
}

/**
 * What sqlstring's escape() (the platform's escape) inlined, as a binding of
 * the same SQLite type: integers and booleans INTEGER (better-sqlite3 binds a
 * JS number as REAL, so an integer goes as a BigInt), a bigint the TEXT it
 * was quoted as, a Buffer a BLOB, a list `?, ?` (nested lists in
 * parentheses, a Date in a list its UTC text as sqlstring wrote it).
 */
function escaped(value: unknown, bindings: unknown[], inList: boolean): string {
  if (value === undefined || value === null) return bind(bindings, null);
  switch (typeof value) {
    case 'boolean':
      return bind(bindings, value ? 1n : 0n);
    case 'number':
      return bind(bindings, integer(value));
    case 'string':
      return bind(bindings, value);
    case 'object':
      if (value instanceof Date) return bind(bindings, inList ? dateText(value) : integer(+value));
      if (Array.isArray(value)) return value.map((item) => (Array.isArray(item) ? `(${escaped(item, bindings, true)})` : escaped(item, bindings, true))).join(', ');
      if (Buffer.isBuffer(value)) return bind(bindings, value);
      if (typeof (value as { toSqlString?: unknown }).toSqlString === 'function') return String((value as { toSqlString(): unknown }).toSqlString());
      return bind(bindings, String(value));
    default:
      return bind(bindings, String(value));
  }
}

function bind(bindings: unknown[], value: unknown): string {
  bindings.push(value);
  return '?';
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * A number as SQLite read its inlined text (`String(value)`): plain digits
 * within 64 bits an INTEGER (as a BigInt: better-sqlite3 binds every JS
 * number as REAL), anything else (fractions, exponents, NaN) a REAL.
 */
function integer(value: number): number | bigint {
  if (Number.isSafeInteger(value)) return BigInt(value);
  const text = String(value);
  if (!/^-?\d+$/.test(text)) return value;
  const digits = BigInt(text);
  return digits >= INT64_MIN && digits <= INT64_MAX ? digits : value;
}

/** sqlstring's dateToString in UTC (forceUtcTimezone): 'YYYY-MM-DD HH:mm:ss.mmm', or NULL for an invalid date. */
function dateText(date: Date): string | null {
  return Number.isNaN(date.getTime()) ? null : date.toISOString().replace('T', ' ').slice(0, 23);
}

/**
 * A knex statement of exactly this SQL text and these bindings. knex.raw(sql,
 * bindings) would parse the text again and take every `?` in it for a
 * placeholder, those inside quoted identifiers and literals included.
 */
function statement(knex: Knex, bound: BoundSql): Knex.Raw {
  const raw = knex.raw(bound.sql);
  const compile = raw.toSQL.bind(raw);
  raw.toSQL = (() => Object.assign(compile(), { bindings: bound.bindings })) as typeof raw.toSQL;
  return raw;
}

/** The better-sqlite3 connection with every value a bound parameter (see bindParameters). */
export class BoundSqliteConnection extends BetterSqliteConnection {
  override async execute<T extends QueryResult | EntityData<AnyEntity> | EntityData<AnyEntity>[] = EntityData<AnyEntity>[]>(
    queryOrKnex: string | Knex.QueryBuilder | Knex.Raw,
    params: unknown[] = [],
    method: 'all' | 'get' | 'run' = 'all',
    ctx?: Transaction,
    loggerContext?: LoggingOptions,
  ): Promise<T> {
    await this.ensureConnection();
    if (typeof queryOrKnex !== 'string') {
      // A builder made on a transaction runs in it (as the ORM's own execute does).
      ctx ??= (queryOrKnex as unknown as { client: { transacting?: boolean } }).client.transacting ? queryOrKnex : undefined;
      const compiled = queryOrKnex.toSQL();
      queryOrKnex = compiled.sql;
      params = [...(compiled.bindings ?? [])];
    }
    const sql = this.config.get('onQuery')(queryOrKnex, params);
    const bound = bindParameters(this.platform, sql, params);
    // The ORM's query log, when turned on, shows values only if asked to (query-params), as before.
    const logger = this.config.getLogger();
    const logged = logger.isEnabled('query-params', loggerContext) ? this.platform.formatQuery(sql, params) : sql;
    return this.executeQuery(
      logged,
      async () => {
        const query = statement(this.getKnex(), bound);
        if (ctx) query.transacting(ctx as Knex.Transaction);
        return this.transformRawResult<T>(await query, method);
      },
      { query: sql, params, ...loggerContext },
    );
  }
}

/** MikroORM's better-sqlite3 driver over BoundSqliteConnection; ormOptions names it as `driver`. */
export class BoundSqliteDriver extends AbstractSqlDriver<BoundSqliteConnection> {
  constructor(config: Configuration) {
    super(config, new BetterSqlitePlatform(), BoundSqliteConnection, ['knex', 'better-sqlite3']);
  }
}
