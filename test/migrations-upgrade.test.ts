import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { Migration } from '@mikro-orm/migrations';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app';
import { hashPassword } from '../src/auth/password';
import { recordReplacedMigrations } from '../src/db/migrations';
import { openDatabase } from '../src/db/orm';
import { MailOutbox } from '../src/mail/outbox.entity';
import { inContext } from '../src/boot';
import { build, login, PASSWORD, seedOwner, sql } from './helper';
import { assertLedgerAddsUp } from './ledger-helper';
import { MIGRATIONS_TABLE_SQL, PRE_SPLIT_MIGRATIONS } from './fixtures/pre-split-migrations';

const BASELINE = 'Migration20261122000000Initial';

function tempDir(t: { after: (fn: () => unknown) => void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-upgrade-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * Builds atrium.sqlite in `dataDir` as the code before the split did: the
 * shipped migrations' SQL up to and including `upTo`, each recorded as run,
 * plus a company and its owner. Returns the owner.
 */
async function createPreSplitDatabase(dataDir: string, upTo: string) {
  const last = PRE_SPLIT_MIGRATIONS.findIndex((migration) => migration.name === upTo);
  assert.ok(last >= 0, `${upTo} is not in the fixture`);
  const owner = { companyId: randomUUID(), userId: randomUUID(), email: 'owner@example.com' };
  const passwordHash = await hashPassword(PASSWORD, 1024);
  const db = new Database(path.join(dataDir, 'atrium.sqlite'));
  try {
    db.exec(MIGRATIONS_TABLE_SQL);
    const record = db.prepare('insert into `mikro_orm_migrations` (`name`) values (?)');
    for (const migration of PRE_SPLIT_MIGRATIONS.slice(0, last + 1)) {
      db.transaction(() => {
        for (const statement of migration.sql) db.exec(statement);
        record.run(migration.name);
      })();
    }
    const now = Date.now();
    db.prepare('insert into `companies` (`id`, `name`, `created_at`) values (?, ?, ?)').run(owner.companyId, 'Old Co', now);
    db.prepare(
      'insert into `users` (`id`, `company_id`, `email`, `name`, `password_hash`, `role`, `created_at`, `updated_at`) values (?, ?, ?, ?, ?, ?, ?, ?)',
    ).run(owner.userId, owner.companyId, owner.email, 'Old Owner', passwordHash, 'owner', now, now);
  } finally {
    db.close();
  }
  return owner;
}

/** The server, on the database in `dataDir`; closed after the test. */
async function serve(t: { after: (fn: () => unknown) => void }, dataDir: string): Promise<FastifyInstance> {
  const app = await buildApp({ env: { DATA_DIR: dataDir, SCRYPT_COST: '1024' }, logger: false });
  t.after(() => app.close());
  return app;
}

/** Every table, index and trigger with its definition, in a stable order. */
function schemaOf(app: FastifyInstance) {
  return sql(app, "select type, name, tbl_name, sql from sqlite_master where name <> 'sqlite_sequence' order by type, name");
}

async function assertUpToDate(app: FastifyInstance) {
  const migrator = app.kernel.orm.getMigrator();
  assert.deepEqual((await migrator.getPendingMigrations()).map((migration) => migration.name), []);
  const twice = await sql(app, 'select `name` from `mikro_orm_migrations` group by `name` having count(*) > 1');
  assert.deepEqual(twice, [], 'a migration was recorded twice');
  const diff = await app.kernel.orm.getSchemaGenerator().getUpdateSchemaSQL({ wrap: false });
  assert.equal(diff.trim(), '', `entities and the upgraded schema disagree:\n${diff}`);
}

test('a database built before the baseline split starts on the current code without running a migration again', async (t) => {
  const dataDir = tempDir(t);
  const owner = await createPreSplitDatabase(dataDir, PRE_SPLIT_MIGRATIONS.at(-1)!.name);
  const app = await serve(t, dataDir);
  await assertUpToDate(app);

  const recorded = (await sql<{ name: string }>(app, 'select `name` from `mikro_orm_migrations` order by `id`')).map((row) => row.name);
  const shipped = PRE_SPLIT_MIGRATIONS.map((migration) => migration.name);
  assert.deepEqual(recorded.slice(0, shipped.length), shipped, 'the history of the old code is kept');
  // The split baseline's parts were added, each recorded (not run: their tables existed);
  // migrations written after the old code shipped ran as on any database.
  const lastShipped = [...shipped].sort().at(-1)!;
  assert.deepEqual(recorded.slice(shipped.length).filter((name) => name <= lastShipped).sort(), [
    'Migration20261122000000Audit',
    'Migration20261122000000Billing',
    'Migration20261122000000Catalog',
    'Migration20261122000000Identity',
    'Migration20261122000000Platform',
  ]);

  const [company] = await sql<{ name: string }>(app, 'select `name` from `companies` where `id` = ?', [owner.companyId]);
  assert.equal(company?.name, 'Old Co');
  const session = await login(app, owner.email);
  assert.equal(session.user.id, owner.userId);

  const fresh = await build(t);
  assert.deepEqual(await schemaOf(app), await schemaOf(fresh), 'an upgraded database and a fresh one differ');
});

test('a database from before the split that ran only the baseline gets every later migration', async (t) => {
  const dataDir = tempDir(t);
  const owner = await createPreSplitDatabase(dataDir, BASELINE);
  const app = await serve(t, dataDir);
  await assertUpToDate(app);
  const [user] = await sql<{ email: string; mfa_enabled: number }>(app, 'select `email`, `mfa_enabled` from `users` where `id` = ?', [owner.userId]);
  assert.deepEqual({ ...user }, { email: owner.email, mfa_enabled: 0 });

  const fresh = await build(t);
  assert.deepEqual(await schemaOf(app), await schemaOf(fresh), 'an upgraded database and a fresh one differ');
});

test('a migration is recorded in place of those it replaces only when all of them ran', async (t) => {
  class Noop extends Migration {
    override up(): void {}
  }
  const orm = await openDatabase(path.join(tempDir(t), 'replaces.sqlite'), { entities: [MailOutbox], migrations: [] }, { migrate: false });
  t.after(() => orm.close());
  await orm.getMigrator().getExecutedMigrations(); // creates the migrations table
  await orm.em.getConnection().execute("insert into `mikro_orm_migrations` (`name`) values ('Old')");

  const recorded = await recordReplacedMigrations(orm, [
    { name: 'Whole', class: Noop, replaces: ['Old'] },
    { name: 'Partly', class: Noop, replaces: ['Old', 'NeverRan'] },
    { name: 'Plain', class: Noop },
  ]);
  assert.deepEqual(recorded, ['Whole']);
  const executed = (await orm.getMigrator().getExecutedMigrations()).map((row) => row.name);
  assert.deepEqual(executed, ['Old', 'Whole']);
  assert.deepEqual(await recordReplacedMigrations(orm, [{ name: 'Whole', class: Noop, replaces: ['Old'] }]), [], 'already recorded');

  await assert.rejects(
    recordReplacedMigrations(orm, [
      { name: 'Old', class: Noop },
      { name: 'Whole', class: Noop, replaces: ['Old'] },
    ]),
    /replaces Old, which is still listed/,
  );
});

test('the search-keys migration folds the names and emails already stored, so q finds them case-insensitively after the upgrade', async (t) => {
  const dataDir = tempDir(t);
  const owner = await createPreSplitDatabase(dataDir, BASELINE);
  // Rows written by the old code, with letters SQL's lower() does not fold.
  const other = { companyId: randomUUID(), userId: randomUUID() };
  const db = new Database(path.join(dataDir, 'atrium.sqlite'));
  try {
    const now = Date.now();
    db.prepare('insert into `companies` (`id`, `name`, `created_at`) values (?, ?, ?)').run(other.companyId, 'Ödeme GmbH', now);
    db.prepare(
      'insert into `users` (`id`, `company_id`, `email`, `name`, `password_hash`, `role`, `created_at`, `updated_at`) values (?, ?, ?, ?, ?, ?, ?, ?)',
    ).run(other.userId, owner.companyId, 'jörg.straße@example.com', 'Émile Zola', 'x', 'member', now, now);
  } finally {
    db.close();
  }
  const app = await serve(t, dataDir);
  await assertUpToDate(app);
  const companies = await sql<{ name_key: string }>(app, 'select `name_key` from `companies` order by `name_key`');
  assert.deepEqual(companies.map((c) => c.name_key), ['old co', 'ödeme gmbh']);
  const users = await sql<{ email_key: string; name_key: string }>(app, 'select `email_key`, `name_key` from `users` order by `name_key`');
  assert.deepEqual(users.map((u) => ({ ...u })), [
    { email_key: 'owner@example.com', name_key: 'old owner' },
    { email_key: 'jörg.strasse@example.com', name_key: 'émile zola' },
  ]);

  const { access_token: token } = await login(app, owner.email);
  const found = await app.inject({ url: `/v1/admin/users?q=${encodeURIComponent('ÉMILE')}`, headers: { authorization: `Bearer ${token}` } });
  assert.deepEqual(found.json().items.map((u: { id: string }) => u.id), [other.userId]);
});

test('the email NFC migration rewrites addresses stored decomposed, so they sign in and match again, and leaves two users of one address both as they are', async (t) => {
  const dataDir = tempDir(t);
  const owner = await createPreSplitDatabase(dataDir, PRE_SPLIT_MIGRATIONS.at(-1)!.name);
  const nfc = (local: string) => `${local}@example.com`.normalize('NFC');
  const nfd = (local: string) => `${local}@example.com`.normalize('NFD');
  // Rows the old code wrote: it lower-cased and trimmed, but kept the normal form it was given.
  const alone = randomUUID();
  const twinNfc = randomUUID();
  const twinNfd = randomUUID();
  const invitation = randomUUID();
  const change = randomUUID();
  const db = new Database(path.join(dataDir, 'atrium.sqlite'));
  try {
    const now = Date.now();
    const passwordHash = await hashPassword(PASSWORD, 1024);
    const user = db.prepare(
      'insert into `users` (`id`, `company_id`, `email`, `password_hash`, `role`, `created_at`, `updated_at`) values (?, ?, ?, ?, ?, ?, ?)',
    );
    user.run(alone, owner.companyId, nfd('jöhn'), passwordHash, 'member', now, now);
    user.run(twinNfc, owner.companyId, nfc('zoë'), passwordHash, 'member', now, now);
    user.run(twinNfd, owner.companyId, nfd('zoë'), passwordHash, 'member', now, now);
    db.prepare(
      'insert into `invitations` (`id`, `company_id`, `email`, `role`, `token_hash`, `status`, `expires_at`, `created_at`) values (?, ?, ?, ?, ?, ?, ?, ?)',
    ).run(invitation, owner.companyId, nfd('rémi'), 'member', randomUUID(), 'pending', now + 86_400_000, now);
    db.prepare(
      'insert into `one_time_tokens` (`id`, `user_id`, `purpose`, `token_hash`, `expires_at`, `data`, `created_at`) values (?, ?, ?, ?, ?, ?, ?)',
    ).run(change, owner.userId, 'email_change', randomUUID(), now + 86_400_000, JSON.stringify({ newEmail: nfd('chloé') }), now);
  } finally {
    db.close();
  }
  const app = await serve(t, dataDir);
  await assertUpToDate(app);

  const emails = new Map((await sql<{ id: string; email: string }>(app, 'select `id`, `email` from `users`')).map((u) => [u.id, u.email]));
  assert.equal(emails.get(alone), nfc('jöhn'));
  // Not merged, not rewritten: the unique index and the accounts stay as they were.
  assert.equal(emails.get(twinNfc), nfc('zoë'));
  assert.equal(emails.get(twinNfd), nfd('zoë'));
  const [invited] = await sql<{ email: string }>(app, 'select `email` from `invitations` where `id` = ?', [invitation]);
  assert.equal(invited!.email, nfc('rémi'));
  const [token] = await sql<{ data: string }>(app, 'select `data` from `one_time_tokens` where `id` = ?', [change]);
  assert.deepEqual(JSON.parse(token!.data), { newEmail: nfc('chloé') });

  // Typed either way, the rewritten address signs in.
  assert.equal((await login(app, nfd('jöhn'))).user.id, alone);
  assert.equal((await login(app, nfc('jöhn'))).user.id, alone);
});

test('the ledger-clustered migration keeps every entry, hold and usage record and every index, and its down makes ordinary tables of them again', async (t) => {
  const app = await serve(t, tempDir(t));
  const { companyId } = await seedOwner(app);
  const ledger = app.domains.billing.ledger;
  await inContext(app.kernel.orm, async () => {
    await ledger.topUp({ companyId, credits: 500, key: 'migration-test' });
    const spent = await ledger.reserve({ companyId, credits: 40, key: 'spent', feature: 'chat', model: 'gpt-4o-mini' });
    await ledger.commit(spent.id, { credits: 25, tokens: 2500 });
    const returned = await ledger.reserve({ companyId, credits: 30, key: 'returned', feature: 'chat' });
    await ledger.release(returned.id);
    await ledger.reserve({ companyId, credits: 10, key: 'open', feature: 'chat' });
  });
  const tables = ['credit_entries', 'credit_holds', 'usage_records'];
  const contents = async () => Promise.all(tables.map((table) => sql(app, `select * from \`${table}\` order by \`id\``)));
  const definitions = async () =>
    sql<{ name: string; sql: string }>(app, `select name, sql from sqlite_master where tbl_name in (${tables.map(() => '?').join(', ')}) order by name`, tables);
  const before = await contents();
  assert.ok(before.every((rows) => rows.length > 0));
  const clustered = await definitions();
  for (const table of tables) assert.match(clustered.find((d) => d.name === table)!.sql, /without rowid$/i, table);

  const migrator = app.kernel.orm.getMigrator();
  await migrator.down('Migration20261222000000LedgerClustered');
  const ordinary = await definitions();
  for (const table of tables) assert.doesNotMatch(ordinary.find((d) => d.name === table)!.sql, /without rowid/i, table);
  // The same indexes, plus the separate b-tree an ordinary table keeps for its text key; the same rows.
  assert.deepEqual(
    ordinary.map((d) => d.name),
    [...clustered.map((d) => d.name), ...tables.map((table) => `sqlite_autoindex_${table}_1`)].sort(),
  );
  assert.deepEqual(await contents(), before);

  await migrator.up('Migration20261222000000LedgerClustered');
  assert.deepEqual(await definitions(), clustered);
  assert.deepEqual(await contents(), before);
  await assertUpToDate(app);
  await assertLedgerAddsUp(app);
  assert.equal(ledger.balance(companyId).held, 10);
});

test('models stored before prices get the seed price once, by migration; seeding then leaves a stored price alone', async (t) => {
  const dataDir = tempDir(t);
  await createPreSplitDatabase(dataDir, BASELINE);
  const db = new Database(path.join(dataDir, 'atrium.sqlite'));
  try {
    const insert = db.prepare('insert into `models` (`id`, `display_name`, `provider`, `family`, `credit_cost`, `context_length`, `created_at`) values (?, ?, ?, ?, ?, ?, ?)');
    insert.run('gpt-4o-mini', 'GPT-4o mini', 'openai', 'gpt', 1, 128000, Date.now());
    insert.run('in-house-7b', 'In-house 7B', 'local', 'in-house', 1, 8000, Date.now());
  } finally {
    db.close();
  }
  const app = await serve(t, dataDir);
  await assertUpToDate(app);
  const prices = await sql<{ id: string; price: number }>(app, "select `id`, `price_micros_per1k_tokens` as `price` from `models` where `id` in ('gpt-4o-mini', 'in-house-7b') order by `id`");
  // data/models.json prices gpt-4o-mini at 0.0003 a thousand tokens; a model the seed does not know keeps 0.
  assert.deepEqual(prices.map((p) => ({ ...p })), [
    { id: 'gpt-4o-mini', price: 300 },
    { id: 'in-house-7b', price: 0 },
  ]);
});
