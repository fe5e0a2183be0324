import { body, path, type RestRoute } from '../route';
import { createdKeyAnswer } from '../schemas';
import { moduleScopes } from '../../src/auth/principal';
import { MAX_MODULE_KEYS_PER_USER } from '../../src/domains/identity';

const SIGNED_IN = "With the user's own access token (the dashboard), never with a key: a key is 401.";

/**
 * A user's AI-modules keys (sk_live_svc_…). The spec does not show these
 * paths; ours sit beside the key's own GET /apikeys/verify.
 */
export const moduleKeyRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/apikeys',
    operationId: 'createModuleKey',
    summary: 'Create an AI-modules key',
    description:
      `Body: name (1 to 200 characters) and scopes (some of ${moduleScopes.join(', ')}; all six when omitted). The response ` +
      'carries the plaintext key (sk_live_svc_…) once; only its SHA-256 hash is stored. At most ' +
      `${MAX_MODULE_KEYS_PER_USER} active keys per account (409 api_key_limit_reached). Audited module_key.created. ${SIGNED_IN}`,
    tag: 'AI modules: keys',
    extension: true,
    status: 201,
    problems: { 403: 'forbidden for an API key', 409: `The account already holds ${MAX_MODULE_KEYS_PER_USER} active keys` },
    field: 'createMyApiKey',
    args: { input: body() },
    // The key's listing with the plaintext beside it, as the company keys answer.
    answer: createdKeyAnswer,
  },
  {
    method: 'GET',
    path: '/apikeys',
    operationId: 'listModuleKeys',
    summary: 'Your AI-modules keys',
    description: `The caller's active keys, newest first: id, name, prefix, scopes, created_at, last_used_at. Never the key. ${SIGNED_IN}`,
    tag: 'AI modules: keys',
    extension: true,
    status: 200,
    problems: { 403: 'forbidden for an API key' },
    field: 'myApiKeys',
    answer: {
      body: (keys: unknown[]) => ({ keys }),
      schema: (derived) => ({ type: 'object', required: ['keys'], additionalProperties: false, properties: { keys: derived } }),
    },
  },
  {
    method: 'DELETE',
    path: '/apikeys/:key_id',
    operationId: 'revokeModuleKey',
    summary: 'Revoke an AI-modules key',
    description: `Revokes one of the caller's keys at once: the next request with it is 401. Another user's key, or an unknown one, is 404. Audited module_key.revoked. ${SIGNED_IN}`,
    tag: 'AI modules: keys',
    extension: true,
    status: 204,
    problems: { 403: 'forbidden for an API key', 404: 'You have no active key with this id' },
    field: 'revokeMyApiKey',
    args: { id: path('key_id') },
  },
];
