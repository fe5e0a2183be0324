import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { call, cast, gql } from './admin-helper';
import { buildWithAi, moduleKey } from './ai-helper';
import { fakeOpenAi } from './fake-ai';
import { NUL_ISSUE } from '../src/errors/refused-text';
import { NULL_ISSUE } from '../src/errors/catalog';

type Issue = { loc: (string | number)[]; msg: string; type: string };

/** The issues of a REST 422, each exactly {loc, msg, type} as documented. */
function restIssues(res: LightMyRequestResponse): Issue[] {
  assert.equal(res.statusCode, 422, res.body);
  const body = res.json() as { code: string; errors: Issue[] };
  assert.equal(body.code, 'validation_error', res.body);
  for (const issue of body.errors) assert.deepEqual(Object.keys(issue).sort(), ['loc', 'msg', 'type'], res.body);
  return body.errors;
}

/** The issues of a GraphQL validation_error. */
function gqlIssues(answer: Awaited<ReturnType<typeof gql>>): Issue[] {
  const error = answer.errors?.[0] as { extensions: { code: string; errors: Issue[] } } | undefined;
  assert.equal(error?.extensions.code, 'validation_error', JSON.stringify(answer));
  return error!.extensions.errors;
}

test('an optional body member takes null over REST as its GraphQL input field does, and both transports answer it alike', async (t) => {
  const fake = await fakeOpenAi(t);
  const app = await buildWithAi(t, { AI_BASE_URL: fake.url });
  const c = await cast(app);
  const key = await moduleKey(app, c.tokens.ownerA, ['chat', 'translate']);

  // POST /v1/chat: a null model is the default model, a null web_search (and stream) no search, as absent.
  const chat = { message: 'Hi', agent: 'general', session_id: 's-null' };
  const absent = await call(app, key.key, 'POST', '/v1/chat', chat);
  assert.equal(absent.statusCode, 200, absent.body);
  const nulls = await call(app, key.key, 'POST', '/v1/chat', { ...chat, model: null, web_search: null, stream: null });
  assert.equal(nulls.statusCode, 200, nulls.body);
  assert.equal(nulls.json().model, absent.json().model);
  assert.equal(nulls.json().sources, undefined);
  const viaGraphql = await gql(app, key.key, 'mutation($input: ChatInput!) { chat(input: $input) { model sources { url } } }', {
    input: { message: 'Hi', agent: 'general', sessionId: 's-null-gql', model: null, webSearch: null },
  });
  assert.deepEqual(viaGraphql.data, { chat: { model: absent.json().model, sources: null } });

  // A member with a GraphQL default (mode, target_lang): null reaches the service as GraphQL hands it over, which reads it as the default.
  const studio = await call(app, key.key, 'POST', '/v1/studio/process', { text: 'Hallo wereld, hoe gaat het', mode: null, target_lang: null, source_lang: null, model: null });
  assert.equal(studio.statusCode, 200, studio.body);
  assert.equal(studio.json().mode, 'translate');
  assert.equal(studio.json().target_lang, 'en');
  const studioGql = await gql(app, key.key, 'mutation($input: StudioInput!) { studioProcess(input: $input) { mode targetLang } }', {
    input: { text: 'Hallo wereld, hoe gaat het', mode: null, targetLang: null, sourceLang: null, model: null },
  });
  assert.deepEqual(studioGql.data, { studioProcess: { mode: 'translate', targetLang: 'en' } });

  // A PATCH: null leaves a model's field as it is, on both transports.
  const patched = await call(app, c.tokens.superadmin, 'PATCH', '/v1/admin/models/gpt-4o', { display_name: null, credit_cost: null, blocked: true });
  assert.equal(patched.statusCode, 200, patched.body);
  assert.equal(patched.json().display_name, 'GPT-4o');
  assert.equal(patched.json().blocked, true);
  const patchedGql = await gql(app, c.tokens.superadmin, 'mutation($input: ModelPatchInput!) { updateModel(id: "gpt-4o", input: $input) { displayName blocked } }', {
    input: { displayName: null, blocked: false },
  });
  assert.deepEqual(patchedGql.data, { updateModel: { displayName: 'GPT-4o', blocked: false } });

  // Where a service refuses null for a member, both transports answer the same single issue (never a 500).
  const role = await call(app, c.tokens.ownerA, 'PATCH', `/v1/admin/users/${c.memberA.userId}`, { role: null });
  const roleGql = await gql(app, c.tokens.ownerA, 'mutation($id: ID!, $input: AdminUserPatchInput!) { updateAdminUser(userId: $id, input: $input) { role } }', {
    id: c.memberA.userId,
    input: { role: null },
  });
  assert.deepEqual(restIssues(role), [{ loc: ['body', 'role'], msg: 'must be one of owner, admin, member', type: 'enum' }]);
  assert.deepEqual(gqlIssues(roleGql), [{ loc: ['input', 'role'], msg: 'must be one of owner, admin, member', type: 'enum' }]);
});

test('a null setting that may not be null is one issue, none_not_allowed, on both transports, and the document declares no null for it', async (t) => {
  const app = await buildWithAi(t);
  const c = await cast(app);
  const policyMembers = [
    ['mfa_required', 'mfaRequired'],
    ['min_password_length', 'minPasswordLength'],
    ['allowed_sso_providers', 'allowedSsoProviders'],
    ['sso_signup_email_domains', 'ssoSignupEmailDomains'],
    ['ip_allowlist', 'ipAllowlist'],
  ] as const;
  for (const [member, field] of policyMembers) {
    const rest = await call(app, c.tokens.ownerA, 'PATCH', '/v1/admin/security/policy', { [member]: null });
    assert.deepEqual(restIssues(rest), [{ loc: ['body', member], msg: 'must not be null', type: 'none_not_allowed' }], member);
    const viaGraphql = await gql(app, c.tokens.ownerA, 'mutation($input: SecurityPolicyInput!) { updateSecurityPolicy(input: $input) { mfaRequired } }', {
      input: { [field]: null },
    });
    assert.deepEqual(gqlIssues(viaGraphql), [{ loc: ['input', field], msg: 'must not be null', type: 'none_not_allowed' }], field);
  }
  for (const [member, field] of [['enabled', 'enabled'], ['sync_interval_minutes', 'syncIntervalMinutes']] as const) {
    const rest = await call(app, c.tokens.ownerA, 'PATCH', '/v1/admin/connectors/google_drive', { [member]: null });
    assert.deepEqual(restIssues(rest), [{ loc: ['body', member], ...NULL_ISSUE }], member);
    const viaGraphql = await gql(app, c.tokens.ownerA, 'mutation($input: ConnectorInput!) { updateConnector(name: "google_drive", input: $input) { enabled } }', {
      input: { [field]: null },
    });
    assert.deepEqual(gqlIssues(viaGraphql), [{ loc: ['input', field], ...NULL_ISSUE }], field);
  }
  // A null that means something still does: no idle timeout.
  const cleared = await call(app, c.tokens.ownerA, 'PATCH', '/v1/admin/security/policy', { session_idle_timeout_minutes: null });
  assert.equal(cleared.statusCode, 200, cleared.body);
  assert.equal(cleared.json().session_idle_timeout_minutes, null);

  // What the published document declares: null only where it is taken.
  type Member = { type: unknown };
  const doc = (await app.inject({ url: '/openapi.json' })).json() as {
    paths: Record<string, Record<string, { requestBody: { content: Record<string, { schema: { $ref?: string; properties: Record<string, Member> } }> } }>>;
    components: { schemas: Record<string, { properties: Record<string, Member> }> };
  };
  const bodyOf = (path: string, method: string) => {
    const schema = doc.paths[path]![method]!.requestBody.content['application/json']!.schema;
    return (schema.$ref ? doc.components.schemas[schema.$ref.replace('#/components/schemas/', '')]! : schema).properties;
  };
  const policy = bodyOf('/admin/security/policy', 'patch');
  for (const [member] of policyMembers) assert.ok(!String(policy[member]!.type).includes('null'), `${member}: ${JSON.stringify(policy[member])}`);
  assert.deepEqual(policy.session_idle_timeout_minutes!.type, ['integer', 'null']);
  assert.deepEqual(policy.api_key_max_age_days!.type, ['integer', 'null']);
  const connector = bodyOf('/admin/connectors/{name}', 'patch');
  assert.equal(connector.enabled!.type, 'boolean');
  assert.equal(connector.sync_interval_minutes!.type, 'integer');
  assert.deepEqual(connector.client_secret!.type, ['string', 'null']);
});

test('a required body member still refuses null, and query parameters stay without null', async (t) => {
  const app = await buildWithAi(t, { AI_BASE_URL: 'http://127.0.0.1:9/v1' });
  const c = await cast(app);
  const key = await moduleKey(app, c.tokens.ownerA, ['chat', 'translate', 'agent']);
  assert.deepEqual(restIssues(await call(app, key.key, 'POST', '/v1/studio/process', { text: null })), [{ loc: ['body', 'text'], ...NULL_ISSUE }]);
  assert.deepEqual(restIssues(await call(app, key.key, 'POST', '/v1/agent/run', { task: null })), [{ loc: ['body', 'task'], ...NULL_ISSUE }]);
  assert.deepEqual(restIssues(await call(app, key.key, 'POST', '/v1/chat', { message: 'Hi', agent: 'general', session_id: null })), [
    { loc: ['body', 'session_id'], ...NULL_ISSUE },
  ]);
  // A wrong type that is not null is still named as one.
  assert.deepEqual(restIssues(await call(app, key.key, 'POST', '/v1/agent/run', { task: 5 })), [{ loc: ['body', 'task'], msg: 'must be string', type: 'string_type' }]);

  // The published document says the same.
  type Body = { $ref?: string; properties: Record<string, { type: unknown }> };
  const doc = (await app.inject({ url: '/openapi.json' })).json() as {
    paths: Record<string, Record<string, { parameters?: { name: string; schema: { type: unknown } }[]; requestBody?: { content: Record<string, { schema: Body }> } }>>;
    components: { schemas: Record<string, Body> };
  };
  const bodyOf = (path: string, method: string) => {
    const schema = doc.paths[path]![method]!.requestBody!.content['application/json']!.schema;
    return (schema.$ref ? doc.components.schemas[schema.$ref.replace('#/components/schemas/', '')]! : schema).properties;
  };
  const studio = bodyOf('/studio/process', 'post');
  assert.deepEqual(studio.mode!.type, ['string', 'null']);
  assert.deepEqual(studio.target_lang!.type, ['string', 'null']);
  assert.equal(studio.text!.type, 'string');
  assert.deepEqual(bodyOf('/chat', 'post').model!.type, ['string', 'null']);
  assert.equal(bodyOf('/chat', 'post').session_id!.type, 'string');
  assert.equal(bodyOf('/admin/users/{user_id}', 'patch').role!.type, 'string');
  assert.deepEqual(bodyOf('/admin/users/{user_id}', 'patch').name!.type, ['string', 'null']);
  const role = doc.paths['/admin/users']!.get!.parameters!.find((p) => p.name === 'role')!;
  assert.equal(role.schema.type, 'string');
});

test('a wrong value for an enum member is one validation issue whose msg lists the allowed values', async (t) => {
  const app = await buildWithAi(t, { AI_BASE_URL: 'http://127.0.0.1:9/v1' });
  const c = await cast(app);
  const key = await moduleKey(app, c.tokens.ownerA, ['chat', 'translate', 'agent']);
  const user = `/v1/admin/users/${c.memberA.userId}`;
  const cases: [string, () => Promise<LightMyRequestResponse>, Issue][] = [
    // A GraphQL enum (Role, UserStatus): a wrong type, a wrong string.
    ['role: a number', () => call(app, c.tokens.ownerA, 'PATCH', user, { role: 5 }), { loc: ['body', 'role'], msg: 'must be one of owner, admin, member', type: 'enum' }],
    ['role: a wrong string', () => call(app, c.tokens.ownerA, 'PATCH', user, { role: 'boss' }), { loc: ['body', 'role'], msg: 'must be one of owner, admin, member', type: 'enum' }],
    ['status: a boolean', () => call(app, c.tokens.ownerA, 'PATCH', user, { status: true }), { loc: ['body', 'status'], msg: 'must be one of active, suspended', type: 'enum' }],
    // A string with an enum hint, and list items with one.
    ['studio mode: a number', () => call(app, key.key, 'POST', '/v1/studio/process', { text: 'hello', mode: 7 }), { loc: ['body', 'mode'], msg: 'must be one of translate, grammar, formal, informal', type: 'enum' }],
    ['agent tool: a number', () => call(app, key.key, 'POST', '/v1/agent/run', { task: 'sum', tools: [5] }), { loc: ['body', 'tools', 0], msg: 'must be one of web_search, calculator, code_runner', type: 'enum' }],
    // A raw route's own schema.
    ['chat agent: an object', () => call(app, key.key, 'POST', '/v1/chat', { message: 'Hi', agent: {}, session_id: 's' }), { loc: ['body', 'agent'], msg: 'must be one of general, legal, marketing, developer, analyst, copywriter, telecom', type: 'enum' }],
    // Text the server cannot keep is refused as such, there too.
    ['role: text with a NUL', () => call(app, c.tokens.ownerA, 'PATCH', user, { role: 'admin\u0000' }), { loc: ['body', 'role'], ...NUL_ISSUE }],
    // A query parameter's enum.
    ['users ?role=', () => call(app, c.tokens.ownerA, 'GET', '/v1/admin/users?role=boss'), { loc: ['query', 'role'], msg: 'must be one of owner, admin, member', type: 'enum' }],
  ];
  for (const [what, send, issue] of cases) assert.deepEqual(restIssues(await send()), [issue], what);

  // The older error body of a pinned client carries the same single issue.
  const legacy = await app.inject({ method: 'PATCH', url: user, headers: { authorization: `Bearer ${c.tokens.ownerA}`, 'x-service-api-version': '2026.04.21' }, payload: { role: 5 } });
  assert.equal(legacy.statusCode, 422, legacy.body);
  assert.deepEqual(legacy.json(), { detail: [{ loc: ['body', 'role'], msg: 'must be one of owner, admin, member', type: 'enum' }], code: 'validation_error' });
});

test('a wrong type for a member that also takes null is string_type, and its msg says null is allowed', async (t) => {
  const app = await buildWithAi(t);
  const c = await cast(app);
  assert.deepEqual(restIssues(await call(app, c.tokens.memberA, 'PATCH', '/v1/me/profile', { name: 5 })), [{ loc: ['body', 'name'], msg: 'must be string or null', type: 'string_type' }]);
  assert.deepEqual(restIssues(await call(app, c.tokens.ownerA, 'PATCH', '/v1/admin/connectors/onedrive', { tenant: 5 })), [
    { loc: ['body', 'tenant'], msg: 'must be string or null', type: 'string_type' },
  ]);
  // A member that takes no null does not offer it.
  assert.deepEqual(restIssues(await call(app, c.tokens.ownerA, 'PATCH', '/v1/admin/connectors/onedrive', { sync_interval_minutes: 'soon' })), [
    { loc: ['body', 'sync_interval_minutes'], msg: 'must be integer', type: 'integer_type' },
  ]);
});
