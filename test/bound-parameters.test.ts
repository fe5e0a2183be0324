import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { raw } from '@mikro-orm/core';
import { build, seedOwner, sql } from './helper';
import { inContext } from '../src/boot';
import { sqliteDialect } from '../src/db/dialect';
import { DocsFeedback } from '../src/domains/platform/docs-feedback.entity';
import { User } from '../src/domains/identity/user.entity';

interface Issued {
  sql: string;
  bindings: unknown[];
}

/** The statements knex hands better-sqlite3 while `fn` runs, with their bindings. */
async function issuedDuring(app: FastifyInstance, fn: () => Promise<unknown>): Promise<Issued[]> {
  const knex = app.kernel.orm.em.getConnection().getKnex();
  const issued: Issued[] = [];
  const listener = (query: Issued) => issued.push({ sql: query.sql, bindings: [...(query.bindings ?? [])] });
  knex.on('query', listener);
  try {
    await fn();
  } finally {
    knex.off('query', listener);
  }
  return issued;
}

const NUL_TEXT = 'before\u0000after \u0000 \'quoted\' end';

test('a string with NUL characters is stored exactly, as a bound value of the insert the ORM issues', async (t) => {
  const app = await build(t);
  let id = '';
  const issued = await issuedDuring(app, () =>
    inContext(app.kernel.orm, async () => {
      const em = app.kernel.orm.em.fork();
      const row = em.create(DocsFeedback, { page: '/docs/nul', comment: NUL_TEXT, helpful: true });
      id = row.id;
      await em.flush();
    }),
  );
  const insert = issued.find((q) => /^insert into `docs_feedback`/.test(q.sql));
  assert.ok(insert, `no insert among ${issued.map((q) => q.sql).join('\n')}`);
  assert.ok(insert.bindings.includes(NUL_TEXT), 'the text is a binding');
  assert.ok(!insert.sql.includes('\u0000') && !insert.sql.includes('before'), 'the SQL text holds no value');

  const [stored] = await sql<{ comment: string; helpful: number; kind: string }>(
    app,
    'select comment, helpful, typeof(comment) as kind from docs_feedback where id = ?',
    [id],
  );
  assert.equal(stored!.comment, NUL_TEXT);
  assert.equal(stored!.kind, 'text');
  const read = await app.kernel.orm.em.fork().findOneOrFail(DocsFeedback, { id });
  assert.equal(read.comment, NUL_TEXT);
  // The same value as a query parameter finds the row.
  assert.equal((await app.kernel.orm.em.fork().find(DocsFeedback, { comment: NUL_TEXT })).length, 1);
});

test('the literal substring search of the SQL dialect binds its text (a NUL in it matches, nothing breaks)', async (t) => {
  const app = await build(t);
  const owner = await seedOwner(app);
  await app.kernel.orm.em.fork().nativeUpdate(User, { id: owner.userId }, { name: 'x100%_a\u0000bz' });
  const search = (text: string) =>
    app.kernel.orm.em.fork().find(User, { $and: [{ company: owner.companyId }, sqliteDialect.contains<User>('name', text)] });
  let found: User[] = [];
  const issued = await issuedDuring(app, async () => void (found = await search('%_a\u0000b')));
  assert.deepEqual(found.map((u) => u.id), [owner.userId]);
  const select = issued.find((q) => q.sql.includes('instr('))!;
  assert.ok(select.bindings.includes('%_a\u0000b'), JSON.stringify(select, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)));
  assert.ok(!select.sql.includes('%_a'));
  assert.equal((await search('a\u0000c')).length, 0);
  assert.equal((await search('a_b')).length, 0, '_ is a plain character');
});

/**
 * What MikroORM's own connection ran before: the statement with every value
 * inlined by the platform's formatQuery, unbound.
 */
async function inlined(app: FastifyInstance, query: string, params: unknown[]) {
  const connection = app.kernel.orm.em.getConnection();
  return (await connection.getKnex().raw(connection.getPlatform().formatQuery(query, params))) as Record<string, unknown>[];
}

test('bound values read and compare as their inlined literals did (dates, booleans, numbers, bigint, blobs, JSON, null, lists, raw fragments, identifiers)', async (t) => {
  const app = await build(t);
  const connection = app.kernel.orm.em.getConnection();
  const date = new Date('2026-03-04T05:06:07.089Z');
  const cases: [string, unknown[]][] = [
    ['select ? as v, typeof(?) as t', ['text', 'text']],
    ['select ? as v, typeof(?) as t', ["it's", "it's"]],
    ['select ? as v, typeof(?) as t', [42, 42]],
    ['select ? as v, typeof(?) as t', [-7, -7]],
    ['select ? as v, typeof(?) as t', [3.5, 3.5]],
    ['select ? as v, typeof(?) as t', [2 ** 60, 2 ** 60]],
    ['select ? as v, typeof(?) as t', [true, true]],
    ['select ? as v, typeof(?) as t', [false, false]],
    ['select ? as v, typeof(?) as t', [null, null]],
    ['select ? as v, typeof(?) as t', [undefined, undefined]],
    ['select ? as v, typeof(?) as t', [date, date]],
    ['select ? as v, typeof(?) as t', [12n, 12n]],
    ['select hex(?) as v, typeof(?) as t', [Buffer.from([0, 1, 255]), Buffer.from([0, 1, 255])]],
    ['select ? as v, typeof(?) as t', [{ a: 1, b: ['x'] }, { a: 1, b: ['x'] }]],
    ['select json_extract(?, \'$.a\') as v', [{ a: 2 }]],
    ['select 2 in (?) as v, 5 in (?) as w', [[1, 2, 3], [1, 2, 3]]],
    ['select \'b\' in (?) as v', [['a', 'b']]],
    ['select ? as v', [[date]]],
    ['select ? as v', [[true]]],
    ['select (?) + 1 as v', [raw('? * 2', [20])]],
    ['select ?? as v from (select 7 as x)', ['x']],
    ['select ? as v, ? as w', [1]],
    ['select length(?) as v, ? as w', ['a?b', 'c']],
  ];
  for (const [query, params] of cases) {
    const before = await inlined(app, query, params);
    const after = await connection.execute(query, params);
    assert.deepEqual(after, before, `${query} with ${String(params)}`);
  }
  // Stored through the ORM: a date is an INTEGER of epoch milliseconds, a boolean 0 or 1, as before.
  const owner = await seedOwner(app);
  const [row] = await sql<{ created: string; superadmin: string }>(
    app,
    'select typeof(created_at) as created, typeof(is_superadmin) as superadmin from users where id = ?',
    [owner.userId],
  );
  assert.deepEqual({ ...row }, { created: 'integer', superadmin: 'integer' });
});
