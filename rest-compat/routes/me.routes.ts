import { body, path, type RestRoute } from '../route';
import { pageArgs } from '../pagination';
import { SESSIONS_PER_PAGE } from '../../src/domains/identity';
import { profileBody, profileResponse } from './auth.routes';

/**
 * The caller's own account: sessions and profile edits. GET /me/profile lives
 * with the other authentication routes (auth.routes.ts). All of these need a
 * signed-in user: a company API key has no sessions and no profile (403 forbidden).
 */

const API_KEY_REFUSED = 'A company API key has no sessions and is refused with 403 forbidden.';
const USER_ONLY = { 403: 'forbidden for an API key' };

export const meRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/me/sessions',
    operationId: 'listMySessions',
    summary: "The caller's active sessions",
    description:
      'Every session of the caller that is neither revoked nor expired, newest first, paged ' +
      `(per_page defaults to ${SESSIONS_PER_PAGE}; a Link header gives first, prev, next and last). ` +
      `current marks the session of the calling access token. ${API_KEY_REFUSED}`,
    tag: 'Authentication',
    extension: true,
    status: 200,
    problems: USER_ONLY,
    field: 'mySessions',
    args: pageArgs(),
    paginated: true,
  },
  {
    method: 'DELETE',
    path: '/me/sessions/:session_id',
    operationId: 'revokeMySession',
    summary: 'End one of your sessions',
    description:
      "Revokes one of the caller's active sessions at once: its access tokens, refresh token and open " +
      'subscriptions stop working (the current session may be ended too). An id that is not an active ' +
      `session of the caller answers 404 not_found. ${API_KEY_REFUSED}`,
    tag: 'Authentication',
    extension: true,
    status: 204,
    problems: { ...USER_ONLY, 404: 'not_found: not an active session of the caller' },
    field: 'revokeSession',
    args: { id: path('session_id') },
  },
  {
    method: 'POST',
    path: '/me/sessions/revoke-all',
    operationId: 'revokeAllMySessions',
    summary: 'End all of your sessions',
    description:
      "Revokes every active session of the caller, the current one included: from this response on, all " +
      'their access and refresh tokens are refused and their subscriptions closed. The service_token ' +
      `cookie is cleared. revoked is the number of sessions ended. ${API_KEY_REFUSED}`,
    tag: 'Authentication',
    status: 200,
    problems: USER_ONLY,
    field: 'revokeAllSessions',
    // The field answers the count; the documented body names it.
    answer: {
      body: (revoked: number) => ({ revoked }),
      schema: (count) => ({ type: 'object', required: ['revoked'], properties: { revoked: count } }),
    },
  },
  {
    method: 'PATCH',
    path: '/me/profile',
    operationId: 'updateProfile',
    summary: 'Update your profile',
    description:
      'Changes the signed-in caller\'s name: 1 to 200 characters once trimmed, or null to clear it. ' +
      'Unknown fields are refused (422). Answers the updated profile, as GET /me/profile does. ' +
      'A company API key has no profile and is refused with 403 forbidden.',
    tag: 'Authentication',
    extension: true,
    status: 200,
    problems: USER_ONLY,
    field: 'updateMyProfile',
    args: { input: body() },
    bodyHints: { required: ['name'] },
    select: 'role id email name status createdAt lastLoginAt mfaEnabled deletionScheduledFor company { id name plan { id name monthlyCredits } }',
    // The documented answer is the profile, as GET /me/profile has it.
    answer: {
      body: (user: Parameters<typeof profileBody>[0]['user'] & { role: string; company: Parameters<typeof profileBody>[0]['company'] }) =>
        profileBody({ role: user.role, auth_method: 'session', company: user.company, user, api_key: null }),
      schema: () => profileResponse,
    },
  },
];
