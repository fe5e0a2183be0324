import assert from 'node:assert/strict';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { assertCode as assertProblemCode, bearer, createCompanyKey, login, PASSWORD, seedOwner, seedUser, sql } from './helper';
import { inContext } from '../src/boot';

export { seedUser, sql };

/** Shared set-up of the administration tests (companies, models, API keys). */
export function assertCode(res: LightMyRequestResponse, status: number, code: string) {
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/, res.body);
  assertProblemCode(res, status, code);
}

/** A 422 whose errors name the location `where` (e.g. body.name). */
export function assertInvalid(res: LightMyRequestResponse, where: string) {
  assertCode(res, 422, 'validation_error');
  const locs = (res.json().errors as { loc: (string | number)[] }[]).map((e) => e.loc.join('.'));
  assert.ok(locs.includes(where), `expected an error at ${where}, got ${res.body}`);
}

/**
 * Company A (owner, admin, member, API key), company B (owner, API key) and a
 * platform superadmin in a third company, each signed in.
 */
export async function cast(app: FastifyInstance) {
  const a = await seedOwner(app, `owner-a-${Math.random().toString(36).slice(2)}@example.com`, 'Company A');
  const b = await seedOwner(app, `owner-b-${Math.random().toString(36).slice(2)}@example.com`, 'Company B');
  const adminA = await seedUser(app, a.companyId, 'admin');
  const memberA = await seedUser(app, a.companyId, 'member');
  const operatorEmail = `ops-${Math.random().toString(36).slice(2)}@example.com`;
  const operator = await inContext(app.kernel.orm, () =>
    app.domains.identity.accounts.createCompanyWithOwner({ email: operatorEmail, password: PASSWORD, company: 'Platform', superadmin: true }),
  );
  const keyA = await createCompanyKey(app, a.companyId, 'key A');
  const keyB = await createCompanyKey(app, b.companyId, 'key B');
  return {
    a,
    b,
    adminA,
    memberA,
    platformCompanyId: operator.company.id,
    operatorId: operator.user.id,
    keyA,
    keyB,
    tokens: {
      ownerA: (await login(app, a.email)).access_token,
      adminA: (await login(app, adminA.email)).access_token,
      memberA: (await login(app, memberA.email)).access_token,
      ownerB: (await login(app, b.email)).access_token,
      superadmin: (await login(app, operatorEmail)).access_token,
      keyA: keyA.key,
      keyB: keyB.key,
    },
  };
}

export function call(app: FastifyInstance, token: string, method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown) {
  return app.inject({ method, url, headers: bearer(token), ...(payload === undefined ? {} : { payload: payload as object }) });
}

export async function gql(app: FastifyInstance, token: string, query: string, variables: Record<string, unknown> = {}) {
  const res = await app.inject({ method: 'POST', url: '/graphql', payload: { query, variables }, headers: bearer(token) });
  return res.json() as { data?: Record<string, unknown> | null; errors?: { extensions: { code: string } }[] };
}
