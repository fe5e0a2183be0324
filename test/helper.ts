import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../src/app';
import type { Config } from '../src/config';
import { inContext } from '../src/boot';
import { hashPassword } from '../src/auth/password';
import { searchKey } from '../src/search-key';
import { Company } from '../src/domains/identity/company.entity';
import { User, type Role, type UserStatus } from '../src/domains/identity/user.entity';

export const PASSWORD = 'correct-horse-battery-staple';

/**
 * An app over a fresh temp-file SQLite database (migrations applied, catalog
 * seeded), closed and deleted after the test. Rate limits are high unless a
 * test sets its own; scrypt cost is lowered to keep tests fast.
 */
export async function build(t: TestContext | { after: (fn: () => unknown) => void }, config: Partial<Config> = {}) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-test-'));
  const app = await buildApp({
    env: { DATA_DIR: dataDir, SCRYPT_COST: '1024' },
    logger: false,
    config: {
      rateLimit: { windowSeconds: 60, authenticated: 10_000, moduleKey: 10_000, anonymous: 10_000, auth: 10_000, feedback: 10_000 },
      ...config,
    },
  });
  t.after(async () => {
    await app.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  return app;
}

export interface Seeded {
  companyId: string;
  userId: string;
  email: string;
}

/**
 * Creates a company and its owner through the core service, as the CLI does.
 * Tests seed several companies of the default name, so a duplicate name is
 * allowed here (the rule against it has its own tests, in cli.test.ts).
 */
export async function seedOwner(app: FastifyInstance, email = `owner-${Math.random().toString(36).slice(2)}@example.com`, company = 'Acme'): Promise<Seeded> {
  const { company: c, user } = await inContext(app.kernel.orm, () =>
    app.domains.identity.accounts.createCompanyWithOwner({ email, password: PASSWORD, company, allowDuplicateName: true }),
  );
  return { companyId: c.id, userId: user.id, email };
}

export async function login(app: FastifyInstance, email: string, password = PASSWORD) {
  const res = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email, password } });
  if (res.statusCode !== 200) throw new Error(`login failed: ${res.statusCode} ${res.body}`);
  return res.json() as { access_token: string; refresh_token: string; user: { id: string; email: string; role: string } };
}

export async function createCompanyKey(app: FastifyInstance, companyId: string, name = 'test key') {
  const { plaintext, apiKey } = await inContext(app.kernel.orm, () =>
    app.domains.identity.apiKeys.createCompanyKey({ companyId, name }),
  );
  return { key: plaintext, id: apiKey.id };
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A problem answer with this status and catalog code. */
export function assertCode(res: LightMyRequestResponse, status: number, code: string) {
  assert.equal(res.statusCode, status, res.body);
  assert.equal(res.json().code, code, res.body);
}

/** Raw SQL on the ORM's connection, for set-up and for checking what was stored. */
export async function sql<T = Record<string, unknown>>(app: FastifyInstance, query: string, params: unknown[] = []): Promise<T[]> {
  return (await app.kernel.orm.em.fork().getConnection().execute(query, params)) as T[];
}

/** A user of the company (password PASSWORD), created directly in the database. */
export async function seedUser(app: FastifyInstance, companyId: string, role: Role = 'member', status: UserStatus = 'active') {
  const email = `${role}-${Math.random().toString(36).slice(2)}@example.com`;
  await inContext(app.kernel.orm, async () => {
    const em = app.kernel.orm.em.fork();
    em.create(User, { company: em.getReference(Company, companyId), email, role, status, passwordHash: await hashPassword(PASSWORD, 1024) });
    await em.flush();
  });
  const [row] = await sql<{ id: string }>(app, 'select id from users where email = ?', [email]);
  return { email, userId: row!.id };
}

/**
 * Every user's and company's search keys (users.email_key, users.name_key,
 * companies.name_key) are the folded form of the text they stand for: what
 * the admin lists' `q` and name sort read. A write that changes the text
 * without its key (a native update) would leave the row unfindable.
 */
export async function assertSearchKeysInStep(app: FastifyInstance): Promise<void> {
  const users = await sql<{ id: string; email: string; email_key: string; name: string | null; name_key: string | null }>(
    app,
    'select id, email, email_key, name, name_key from users',
  );
  for (const u of users) {
    assert.equal(u.email_key, searchKey(u.email), `users.email_key of ${u.id}`);
    assert.equal(u.name_key, u.name === null ? null : searchKey(u.name), `users.name_key of ${u.id}`);
  }
  const companies = await sql<{ id: string; name: string; name_key: string }>(app, 'select id, name, name_key from companies');
  for (const c of companies) assert.equal(c.name_key, searchKey(c.name), `companies.name_key of ${c.id}`);
}
