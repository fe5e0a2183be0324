import type { RestRoute } from '../route';
import { pageEnvelope, pageQuery, toPageBody } from '../pagination';
import { dateTime, nullable, uuid } from '../schemas';
import { API_KEYS_PER_PAGE, MAX_ACTIVE_API_KEYS } from '../../src/domains/identity';

interface ApiKeyData {
  id: string;
  name: string;
  prefix: string;
  createdBy: { id: string; email: string } | null;
  createdAt: string;
  lastUsedAt: string | null;
}

const KEY_FIELDS = 'id name prefix createdBy { id email } createdAt lastUsedAt';

const apiKey = {
  type: 'object',
  required: ['id', 'name', 'prefix', 'created_by', 'created_at', 'last_used_at'],
  properties: {
    id: uuid,
    name: { type: 'string' },
    prefix: { type: 'string', description: 'The first characters of the key, to tell keys apart' },
    created_by: {
      type: ['object', 'null'],
      description: 'The user who created the key; null when made from the command line or by another key',
      required: ['id', 'email'],
      properties: { id: uuid, email: { type: 'string' } },
    },
    created_at: dateTime,
    last_used_at: nullable('string', { format: 'date-time', description: 'Updated at most about once a minute' }),
  },
};

const keyBody = (k: ApiKeyData) => ({
  id: k.id,
  name: k.name,
  prefix: k.prefix,
  created_by: k.createdBy,
  created_at: k.createdAt,
  last_used_at: k.lastUsedAt,
});

const WHO = 'Owners and admins of the company and its API keys; a member gets 403.';

/** A company's API keys (`svc_…`). */
export const adminApiKeyRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/admin/api-keys',
    operationId: 'listApiKeys',
    summary: "The company's API keys",
    description:
      "The caller's company's active (not revoked) API keys, newest first, paged (per_page defaults to " +
      `${API_KEYS_PER_PAGE}; a Link header gives first, prev, next and last). Never the key or its hash. ${WHO}`,
    tag: 'Administration',
    paginated: true,
    auth: 'required',
    status: 200,
    request: { querystring: pageQuery(API_KEYS_PER_PAGE) },
    response: pageEnvelope(apiKey),
    problems: { 403: 'The caller is not an owner or admin' },
    graphql: {
      document: `query ApiKeys($page: Int!, $perPage: Int!) { apiKeys(page: $page, perPage: $perPage) {
        items { ${KEY_FIELDS} } page perPage total } }`,
      variables: (request) => {
        const q = request.query as { page: number; per_page: number };
        return { page: q.page, perPage: q.per_page };
      },
      result: (data) =>
        toPageBody(data.apiKeys as { items: ApiKeyData[]; page: number; perPage: number; total: number }, keyBody),
    },
  },
  {
    method: 'POST',
    path: '/admin/api-keys',
    operationId: 'createApiKey',
    summary: 'Create an API key',
    description:
      'ApiKeyCreateRequest: name (1 to 200 characters). The response carries the plaintext key (svc_…) once; only ' +
      `its SHA-256 hash is stored. A company holds at most ${MAX_ACTIVE_API_KEYS} active keys (409 ` +
      `api_key_limit_reached). Audited api_key.created. ${WHO}`,
    tag: 'Administration',
    auth: 'required',
    status: 201,
    request: {
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['name'],
        properties: { name: { type: 'string', minLength: 1, maxLength: 200 } },
      },
    },
    response: {
      ...apiKey,
      required: [...apiKey.required, 'key'],
      properties: { ...apiKey.properties, key: { type: 'string', description: 'The plaintext key; shown once, never again' } },
    },
    problems: { 403: 'The caller is not an owner or admin', 409: 'The company already holds the maximum of active keys' },
    graphql: {
      document: `mutation CreateApiKey($input: ApiKeyCreateInput!) { createApiKey(input: $input) { key apiKey { ${KEY_FIELDS} } } }`,
      variables: (request) => ({ input: { name: (request.body as { name: string }).name } }),
      result: (data) => {
        const r = data.createApiKey as { key: string; apiKey: ApiKeyData };
        return { ...keyBody(r.apiKey), key: r.key };
      },
    },
  },
  {
    method: 'DELETE',
    path: '/admin/api-keys/:key_id',
    operationId: 'revokeApiKey',
    summary: 'Revoke an API key',
    description:
      'Revokes the key at once: from this response on, requests with it are 401 token_invalid and its open ' +
      'subscriptions are closed (4401). A key of another company (unless the caller is a platform superadmin), or ' +
      `one already revoked, is 404. Audited api_key.revoked. ${WHO}`,
    tag: 'Administration',
    auth: 'required',
    status: 204,
    request: { params: { type: 'object', required: ['key_id'], properties: { key_id: uuid } } },
    problems: { 403: 'The caller is not an owner or admin', 404: 'No such active key in the caller\'s company' },
    graphql: {
      document: 'mutation RevokeApiKey($id: ID!) { revokeApiKey(id: $id) }',
      variables: (request) => ({ id: (request.params as { key_id: string }).key_id }),
      result: () => undefined,
    },
  },
];
