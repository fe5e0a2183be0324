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
import { BACKSTOP_PAGES } from './checkpointer';

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
 * A new database file is created empty (a valid SQLite database), readable by
 * its owner alone, before SQLite opens it: it holds password hashes, sessions
 * and encrypted secrets, as secrets.json beside it does (0600). SQLite
 * creates the -wal and -shm files with the database file's mode, so they are
 * 0600 too. A folder we create is 0700. An existing file or folder keeps the
 * mode its operator gave it.
 */
function createPrivately(databaseFile: string): void {
  fs.mkdirSync(path.dirname(databaseFile), { recursive: true, mode: 0o700 });
  try {
    fs.closeSync(fs.openSync(databaseFile, 'wx', 0o600));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/**
 * Opens the SQLite file (creating it and its folder, owner-only), turns on
 * WAL and foreign keys, and applies pending migrations (after recording those
 * that replace migrations the database already ran).
 */
export async function openDatabase(databaseFile: string, schema: Schema, options: { migrate?: boolean } = {}): Promise<Orm> {
  if (databaseFile !== ':memory:') createPrivately(databaseFile);
  const orm = await MikroORM.init(ormOptions(databaseFile, schema));
  const connection = orm.em.getConnection();
  if (databaseFile !== ':memory:') await connection.execute('pragma journal_mode = wal');
  await connection.execute('pragma foreign_keys = on');
  await connection.execute('pragma busy_timeout = 5000');
  await connection.execute('pragma synchronous = normal');
  // Checkpoints run in the background (checkpointer.ts); this connection's own only past a backstop.
  if (databaseFile !== ':memory:') await connection.execute(`pragma wal_autocheckpoint = ${BACKSTOP_PAGES}`);
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
