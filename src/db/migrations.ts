import type { MigrationObject } from '@mikro-orm/core';
import type { Orm } from './orm';

/**
 * One entry of a migration list (a domain's or the kernel's migrations/index.ts).
 *
 * `replaces` lets a migration take over from shipped ones, e.g. when a
 * migration is split or moved to the domain that owns its tables: it names
 * the migrations whose work it repeats. A database where every one of them
 * has run records this migration as run too, without running it (see
 * `recordReplacedMigrations`); a fresh database runs it like any other. A
 * replaced migration must no longer be listed.
 */
export interface MigrationEntry extends MigrationObject {
  readonly replaces?: readonly string[];
}

/**
 * Before pending migrations are applied: records as executed, in one
 * transaction, every listed migration not yet recorded whose replaced
 * migrations are all recorded. Returns the names it recorded.
 */
export async function recordReplacedMigrations(orm: Orm, migrations: readonly MigrationEntry[]): Promise<string[]> {
  const listed = new Set(migrations.map((migration) => migration.name));
  const replacing = migrations.filter((migration) => migration.replaces?.length);
  for (const migration of replacing) {
    const stillListed = migration.replaces!.filter((name) => listed.has(name));
    // Both would run on a fresh database.
    if (stillListed.length) throw new Error(`Migration ${migration.name} replaces ${stillListed.join(', ')}, which is still listed`);
  }
  if (!replacing.length) return [];

  const executed = new Set((await orm.getMigrator().getExecutedMigrations()).map((row) => row.name));
  const names = replacing
    .filter((migration) => !executed.has(migration.name) && migration.replaces!.every((name) => executed.has(name)))
    .map((migration) => migration.name);
  if (!names.length) return [];

  const tableName = orm.config.get('migrations').tableName ?? 'mikro_orm_migrations';
  const connection = orm.em.getConnection();
  await connection.transactional(async (trx) => {
    await connection.execute(connection.getKnex().insert(names.map((name) => ({ name }))).into(tableName), [], 'run', trx);
  });
  return names;
}
