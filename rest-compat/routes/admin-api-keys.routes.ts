import { body, path, type RestRoute } from '../route';
import { createdKeyAnswer } from '../schemas';
import { pageArgs } from '../pagination';
import { API_KEYS_PER_PAGE, MAX_ACTIVE_API_KEYS } from '../../src/domains/identity';

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
    status: 200,
    problems: { 403: 'forbidden: the caller is not an owner or admin' },
    field: 'apiKeys',
    args: pageArgs(),
    paginated: true,
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
    status: 201,
    problems: { 403: 'forbidden: the caller is not an owner or admin', 409: 'The company already holds the maximum of active keys' },
    field: 'createApiKey',
    args: { input: body() },
    bodyHints: { title: 'ApiKeyCreateRequest' },
    // The documented body is the key's listing with the plaintext beside it, not nested.
    answer: createdKeyAnswer,
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
    status: 204,
    problems: { 403: 'forbidden: the caller is not an owner or admin', 404: 'No such active key in the caller\'s company' },
    field: 'revokeApiKey',
    args: { id: path('key_id') },
  },
];
