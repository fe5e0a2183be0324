import type { RestRoute } from '../route';
import { dateTime, nullable, uuid } from '../schemas';
import { pageEnvelope, pageQuery, toPageBody } from '../pagination';
import { SESSIONS_PER_PAGE } from '../../src/domains/identity';
import { PROFILE_COMPANY_FIELDS, PROFILE_USER_FIELDS, profileBody, profileResponse, type ViewerData } from './auth.routes';

/**
 * The caller's own account: sessions and profile edits. GET /me/profile lives
 * with the other authentication routes (auth.routes.ts). All of these need a
 * signed-in user: a company API key has no sessions and no profile (403 forbidden).
 */

/** A session as GraphQL answers it; shared with the admin session lists. */
export interface SessionData {
  id: string;
  device: string | null;
  userAgent: string | null;
  ip: string | null;
  createdAt: string;
  lastSeenAt: string;
  current: boolean;
}

/** A session as REST answers it (GET /me/sessions, GET /admin/users/{user_id}/sessions). */
export const sessionSchema = {
  type: 'object',
  required: ['id', 'device', 'user_agent', 'ip', 'created_at', 'last_seen_at', 'current'],
  properties: {
    id: uuid,
    device: nullable('string', {
      description: 'Browser and OS family (or tool name) read from the user agent, e.g. "Firefox on Linux"; null when unknown',
    }),
    user_agent: nullable('string', { description: 'The User-Agent header sent at sign-in (first 512 characters)' }),
    ip: nullable('string', { description: 'Client IP address at sign-in' }),
    created_at: dateTime,
    last_seen_at: { ...dateTime, description: 'Last request on this session (updated at most about once a minute)' },
    current: { type: 'boolean', description: 'The session of the access token making this request' },
  },
};

export const sessionBody = (s: SessionData) => ({
  id: s.id,
  device: s.device,
  user_agent: s.userAgent,
  ip: s.ip,
  created_at: s.createdAt,
  last_seen_at: s.lastSeenAt,
  current: s.current,
});

const API_KEY_REFUSED = 'A company API key has no sessions and is refused with 403 forbidden.';

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
    paginated: true,
    auth: 'required',
    status: 200,
    request: { querystring: pageQuery(SESSIONS_PER_PAGE) },
    response: pageEnvelope(sessionSchema),
    graphql: {
      document: `query MySessions($page: Int!, $perPage: Int!) { mySessions(page: $page, perPage: $perPage) {
        items { id device userAgent ip createdAt lastSeenAt current } page perPage total
      } }`,
      variables: (request) => {
        const q = request.query as { page: number; per_page: number };
        return { page: q.page, perPage: q.per_page };
      },
      result: (data) =>
        toPageBody(data.mySessions as { items: SessionData[]; page: number; perPage: number; total: number }, sessionBody),
    },
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
    auth: 'required',
    status: 204,
    request: {
      params: { type: 'object', required: ['session_id'], properties: { session_id: uuid } },
    },
    graphql: {
      document: 'mutation RevokeSession($id: ID!) { revokeSession(id: $id) }',
      variables: (request) => ({ id: (request.params as { session_id: string }).session_id }),
      result: () => undefined,
    },
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
    auth: 'required',
    status: 200,
    response: { type: 'object', required: ['revoked'], properties: { revoked: { type: 'integer' } } },
    graphql: {
      document: 'mutation RevokeAllSessions { revokeAllSessions }',
      result: (data) => ({ revoked: data.revokeAllSessions as number }),
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
    auth: 'required',
    status: 200,
    request: {
      body: {
        type: 'object',
        required: ['name'],
        additionalProperties: false,
        properties: {
          name: nullable('string', { description: 'Display name, 1 to 200 characters once trimmed; null clears it' }),
        },
      },
    },
    response: profileResponse,
    graphql: {
      document: `mutation UpdateProfile($input: UpdateProfileInput!) { updateMyProfile(input: $input) {
        role ${PROFILE_USER_FIELDS} ${PROFILE_COMPANY_FIELDS}
      } }`,
      variables: (request) => ({ input: { name: (request.body as { name: string | null }).name } }),
      result: (data) => {
        const { company, role, ...user } = data.updateMyProfile as NonNullable<ViewerData['user']> & Pick<ViewerData, 'role' | 'company'>;
        return profileBody({ role, authMethod: 'session', company, user, apiKey: null });
      },
    },
  },
];
