import type { TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { loadAiConfig } from '../src/domains/ai';
import { build, login, seedOwner, seedUser } from './helper';
import { call } from './admin-helper';

/** An app whose AI engine (and, when given, web search) points at loopback fakes. */
export async function buildWithAi(t: TestContext, env: Record<string, string> = {}, config: Parameters<typeof build>[1] = {}) {
  return build(t, { ...config, ai: loadAiConfig({ AI_MAX_RETRIES: '0', ...env }).ai });
}

/** A user's AI-modules key, created through POST /v1/apikeys with the user's access token. */
export async function moduleKey(app: FastifyInstance, token: string, scopes?: string[], name = 'test key'): Promise<{ id: string; key: string }> {
  const res = await call(app, token, 'POST', '/v1/apikeys', { name, ...(scopes ? { scopes } : {}) });
  if (res.statusCode !== 201) throw new Error(`key creation failed: ${res.statusCode} ${res.body}`);
  const body = res.json() as { id: string; key: string };
  return { id: body.id, key: body.key };
}

/** Two companies; in A an owner and a member, in B an owner; each signed in, each with an AI-modules key. */
export async function modulesCast(app: FastifyInstance) {
  const a = await seedOwner(app, `ai-a-${Math.random().toString(36).slice(2)}@example.com`, 'AI A');
  const b = await seedOwner(app, `ai-b-${Math.random().toString(36).slice(2)}@example.com`, 'AI B');
  const memberA = await seedUser(app, a.companyId, 'member');
  const tokens = {
    ownerA: (await login(app, a.email)).access_token,
    memberA: (await login(app, memberA.email)).access_token,
    ownerB: (await login(app, b.email)).access_token,
  };
  return {
    a,
    b,
    memberA,
    tokens,
    keys: { ownerA: await moduleKey(app, tokens.ownerA), memberA: await moduleKey(app, tokens.memberA), ownerB: await moduleKey(app, tokens.ownerB) },
  };
}
