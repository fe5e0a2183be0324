import 'reflect-metadata';
import { MikroORM, type Options } from '@mikro-orm/better-sqlite';
import { Migrator } from '@mikro-orm/migrations';
import { ReflectMetadataProvider } from '@mikro-orm/core';
import fs from 'node:fs';
import path from 'node:path';
import type { EntityClass } from '../kernel/domain';
import { recordReplacedMigrations, type MigrationEntry } from './migrations';
import { CommitHooks } from './unit-of-work';
import { BoundSqliteDriver } from './sqlite-driver';

export type Orm = MikroORM;

export interface Schema {
  /** The entities to map: the booted domains' and the kernel's. */
  entities: readonly EntityClass[];
  /** Every migration of every domain and the kernel; applied in name order. */
  migrations: readonly MigrationEntry[];
}

export function ormOptions(databaseFile: string, schema: Schema): Options {
  return {
    dbName: databaseFile,
    // Every value a bound parameter (MikroORM's own connection inlines them into the SQL text).
    driver: BoundSqliteDriver,
    // A failed statement's error message shows its SQL with `?`, never the values (hashes, tokens).
    driverOptions: { compileSqlOnError: false },
    entities: [...schema.entities],
    metadataProvider: ReflectMetadataProvider,
    extensions: [Migrator],
    // afterCommit / beforeCommit (src/db/unit-of-work.ts).
    subscribers: [new CommitHooks()],
    // Each request, WebSocket operation and job gets its own fork; touching the
    // global manager by accident is a bug, so it throws.
    allowGlobalContext: false,
    forceUtcTimezone: true,
    debug: false,
    migrations: {
      // Sorted by name (their timestamps), whichever domain they come from.
      migrationsList: [...schema.migrations].sort((a, b) => a.name.localeCompare(b.name)),
      transactional: true,
      allOrNothing: true,
      snapshot: false,
      silent: true,
    },
    // knex keeps SQLite to one connection (min 1, max 1), so the pragmas
    // openDatabase sets hold for every query.
    discovery: { warnWhenNoEntities: true },
    // Full-text indexes (FTS5 virtual tables named *_fts, and their shadow tables) are built by
    // their domain's migration; no entity can describe them, so the schema generator leaves them be.
    schemaGenerator: { skipTables: [/_fts(_(data|idx|content|docsize|config))?$/] },
  };
}

/**
 * Opens the SQLite file (creating its folder), turns on WAL and foreign keys,
 * and applies pending migrations (after recording those that replace
 * migrations the database already ran).
 */
export async function openDatabase(databaseFile: string, schema: Schema, options: { migrate?: boolean } = {}): Promise<Orm> {
  if (databaseFile !== ':memory:') fs.mkdirSync(path.dirname(databaseFile), { recursive: true });
  const orm = await MikroORM.init(ormOptions(databaseFile, schema));
  const connection = orm.em.getConnection();
  if (databaseFile !== ':memory:') await connection.execute('pragma journal_mode = wal');
  await connection.execute('pragma foreign_keys = on');
  await connection.execute('pragma busy_timeout = 5000');
  await connection.execute('pragma synchronous = normal');
  if (options.migrate !== false) {
    try {
      await recordReplacedMigrations(orm, schema.migrations);
      await orm.getMigrator().up();
    } catch (error) {
      // No one else holds the connection yet; left open, it keeps the process alive.
      await orm.close();
      throw error;
    }
  }
  return orm;
}
