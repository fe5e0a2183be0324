import { Migration } from '@mikro-orm/migrations';
import type { Knex } from '@mikro-orm/better-sqlite';

/**
 * A migration written with knex's schema builder (the one MikroORM's schema
 * generator uses) instead of SQL text: each statement is compiled for the
 * connected database, so the same migration yields SQLite's DDL today and
 * another dialect's with that dialect's driver.
 *
 * Column types follow the ORM's mapping of the entities: text(), integer(),
 * datetime() (datetime on SQLite), jsonb() (json on SQLite, jsonb on
 * Postgres, as the ORM's json type) and `boolean` below. Constraint and index
 * names are always given: the ORM's schema comparison checks them.
 */
export abstract class SchemaMigration extends Migration {
  /**
   * Queues the statements `build` compiles to, in order. A statement knex can
   * only run itself is refused: on SQLite, dropping or altering a column that
   * way rebuilds the table, and dropping the old table inside the migration's
   * transaction (where foreign keys stay on) would cascade to the rows that
   * reference it.
   */
  protected schema(build: (schema: Knex.SchemaBuilder) => Knex.SchemaBuilder): void {
    for (const statement of build(this.getKnex().schema).toSQL()) {
      if ('output' in statement || 'statementsProducer' in statement) {
        throw new Error(`${this.constructor.name}: "${statement.sql}" needs knex to rebuild the table; write the change in place`);
      }
      this.addSql(statement.bindings.length ? this.getKnex().raw(statement.sql, statement.bindings) : statement.sql);
    }
  }

  /**
   * A boolean column typed the way the ORM maps booleans (integer on SQLite,
   * boolean where the database has one); knex's own boolean() is the type
   * name `boolean` on SQLite, which the entities would not match.
   */
  protected boolean(table: Knex.TableBuilder, name: string): Knex.ColumnBuilder {
    return table.specificType(name, this.driver.getPlatform().getBooleanTypeDeclarationSQL());
  }

  /** A default written as an SQL literal: knex's defaultTo quotes numbers and booleans as strings ('0', 'false'). */
  protected literal(value: number | boolean): Knex.Raw {
    return this.getKnex().raw(String(value));
  }

  /** Drops columns in place (alter table … drop column), never through knex's SQLite table rebuild (see `schema`). */
  protected dropColumns(table: string, ...columns: string[]): void {
    for (const column of columns) this.addSql(this.getKnex().raw('alter table ?? drop column ??', [table, column]));
  }

  /**
   * SQLite only (elsewhere a no-op): rebuilds `table` as a WITHOUT ROWID
   * table, stored in the order of its primary key, or back as an ordinary
   * one. An ordinary table with a text primary key keeps that key in a second
   * b-tree beside the rows, which every insert writes too. The table is
   * copied with its own definition, columns and indexes as they stand.
   * Nothing may reference the table by foreign key (dropping it inside the
   * migration's transaction would cascade).
   */
  protected async clusterByPrimaryKey(table: string, clustered = true): Promise<void> {
    if (this.getKnex().client.dialect !== 'sqlite3') return;
    const knex = this.getKnex();
    const objects = (await this.execute(knex.raw("select type, name, sql from sqlite_master where tbl_name = ? and sql is not null", [table]))) as {
      type: string;
      name: string;
      sql: string;
    }[];
    const definition = objects.find((object) => object.type === 'table')?.sql;
    if (!definition) throw new Error(`${this.constructor.name}: no table ${table}`);
    const name = new RegExp(`^create table [\`"]?${table}[\`"]?`, 'i');
    if (!name.test(definition)) throw new Error(`${this.constructor.name}: cannot read the definition of ${table}`);
    const body = definition.replace(name, '').replace(/\s+without rowid\s*$/i, '');
    const copy = `${table}__rebuilt`;
    this.addSql(`create table \`${copy}\`${body}${clustered ? ' without rowid' : ''}`);
    this.addSql(`insert into \`${copy}\` select * from \`${table}\``);
    this.addSql(`drop table \`${table}\``);
    this.addSql(`alter table \`${copy}\` rename to \`${table}\``);
    for (const index of objects.filter((object) => object.type === 'index')) this.addSql(index.sql);
  }

  /** Drops an index by name if it is there (knex's dropIndex has no "if exists"). */
  protected dropIndexIfExists(name: string): void {
    this.addSql(this.getKnex().raw('drop index if exists ??', [name]));
  }
}
