import type { FastifyRequest } from 'fastify';
import type { RestRoute } from '../route';
import { dateTime, nullable, uuid } from '../schemas';
import { pageEnvelope, pageQuery, toPageBody } from '../pagination';
import {
  ADMIN_USER_SORTS,
  ADMIN_USERS_PER_PAGE,
  SUSPEND_REASON_MAX,
  USAGE_DAYS_DEFAULT,
  USAGE_DAYS_MAX,
} from '../../src/domains/identity';
import { SESSIONS_PER_PAGE } from '../../src/domains/identity';
import { roles, userStatuses } from '../../src/domains/identity';
import { sessionBody, sessionSchema, type SessionData } from './me.routes';

/** The AdminUser fields every user-returning operation selects. */
const USER_FIELDS =
  'id email name role status isSuperadmin mfaEnabled companyId company { id name } createdAt updatedAt lastLoginAt activeSessionCount';

interface AdminUserData {
  id: string;
  email: string;
  name: string | null;
  role: string;
  status: string;
  isSuperadmin: boolean;
  mfaEnabled: boolean;
  companyId: string;
  company: { id: string; name: string };
  createdAt: string;
  updatedAt: string;
  lastLoginAt: string | null;
  activeSessionCount: number;
}


const userBody = (u: AdminUserData) => ({
  id: u.id,
  email: u.email,
  name: u.name,
  role: u.role,
  status: u.status,
  is_superadmin: u.isSuperadmin,
  mfa_enabled: u.mfaEnabled,
  company_id: u.companyId,
  company: { id: u.company.id, name: u.company.name },
  created_at: u.createdAt,
  updated_at: u.updatedAt,
  last_login_at: u.lastLoginAt,
  active_session_count: u.activeSessionCount,
});

const adminUser = {
  type: 'object',
  required: [
    'id', 'email', 'name', 'role', 'status', 'is_superadmin', 'mfa_enabled', 'company_id', 'company',
    'created_at', 'updated_at', 'last_login_at', 'active_session_count',
  ],
  properties: {
    id: uuid,
    email: { type: 'string' },
    name: nullable('string'),
    role: { type: 'string', enum: [...roles] },
    status: { type: 'string', enum: [...userStatuses] },
    is_superadmin: { type: 'boolean', description: 'Platform operator (acts across companies)' },
    mfa_enabled: { type: 'boolean' },
    company_id: uuid,
    company: { type: 'object', required: ['id', 'name'], properties: { id: uuid, name: { type: 'string' } } },
    created_at: dateTime,
    updated_at: dateTime,
    last_login_at: nullable('string', { format: 'date-time' }),
    active_session_count: { type: 'integer', description: 'Sessions neither revoked nor expired' },
  },
};


const usageNumbers = {
  credits: { type: 'integer' },
  tokens: { type: 'integer' },
  requests: { type: 'integer', description: 'Usage records (metered uses)' },
};

const userParams = { type: 'object', required: ['user_id'], properties: { user_id: uuid } };
const userIdOf = (request: FastifyRequest) => ({ userId: (request.params as { user_id: string }).user_id });

const WHO =
  "Owners and admins of the user's company, its API keys and superadmins (any company); a member gets 403 and a " +
  'user of another company (or an unknown id) 404.';
const RULES =
  'Role rules: an admin cannot change, suspend or delete an owner (403); nobody removes, suspends or demotes the ' +
  'last active owner (409 conflict); nobody deletes or suspends themselves (403); only an owner grants the owner role (403).';
const PROBLEMS = { 403: 'The caller is not an owner or admin of the company, or a role rule refuses', 404: "No such user in the caller's company" };
const MUTATION_PROBLEMS = { ...PROBLEMS, 409: 'The last active owner of the company would be removed, suspended or demoted' };

/** A route answering the AdminUser body from one mutation or query. */
function userRoute(
  route: Omit<RestRoute, 'tag' | 'auth' | 'status' | 'response' | 'graphql'>,
  field: string,
  document: string,
  variables: (request: FastifyRequest) => Record<string, unknown>,
): RestRoute {
  return {
    ...route,
    tag: 'Administration',
    auth: 'required',
    status: 200,
    response: adminUser,
    graphql: { document, variables, result: (data) => userBody(data[field] as AdminUserData) },
  };
}

const sortValues = ADMIN_USER_SORTS.flatMap((s) => [s, `-${s}`]);
const listQuery = pageQuery(ADMIN_USERS_PER_PAGE) as { properties: Record<string, unknown> };

/** Administration of a company's users: owners, admins, company API keys and superadmins. */
export const adminUserRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/admin/users',
    operationId: 'listAdminUsers',
    summary: "The company's users",
    description:
      "Users of the caller's company, paged (a Link header gives first, prev, next and last). q matches email or name " +
      `(contains, case-insensitive); role and status filter; sort is one of ${ADMIN_USER_SORTS.join(', ')} ` +
      '(default created_at, ascending), prefixed with - for descending. A superadmin sees every company, or one with ' +
      `company_id (for anyone else another company's id answers 404). ${WHO}`,
    tag: 'Administration',
    paginated: true,
    auth: 'required',
    status: 200,
    request: {
      querystring: {
        ...listQuery,
        properties: {
          ...listQuery.properties,
          q: { type: 'string', maxLength: 320, description: 'Email or name contains (case-insensitive)' },
          role: { type: 'string', enum: [...roles] },
          status: { type: 'string', enum: [...userStatuses] },
          sort: { type: 'string', enum: sortValues, default: 'created_at', description: 'Sort key; - prefix for descending' },
          company_id: { ...uuid, description: 'Superadmins: only this company' },
        },
      },
    },
    response: pageEnvelope(adminUser),
    problems: { 403: PROBLEMS[403], 404: 'company_id of another company' },
    graphql: {
      document: `query AdminUsers($q: String, $role: String, $status: String, $sort: String!, $page: Int!, $perPage: Int!, $companyId: ID) {
        adminUsers(q: $q, role: $role, status: $status, sort: $sort, page: $page, perPage: $perPage, companyId: $companyId) {
          items { ${USER_FIELDS} } page perPage total
        } }`,
      variables: (request) => {
        const q = request.query as {
          q?: string; role?: string; status?: string; sort: string; page: number; per_page: number; company_id?: string;
        };
        return {
          q: q.q ?? null,
          role: q.role ?? null,
          status: q.status ?? null,
          sort: q.sort,
          page: q.page,
          perPage: q.per_page,
          companyId: q.company_id ?? null,
        };
      },
      result: (data) =>
        toPageBody(data.adminUsers as { items: AdminUserData[]; page: number; perPage: number; total: number }, userBody),
    },
  },
  userRoute(
    {
      method: 'GET',
      path: '/admin/users/:user_id',
      operationId: 'getAdminUser',
      summary: 'One user',
      description: `The user with their company and count of active sessions. ${WHO}`,
      request: { params: userParams },
      problems: PROBLEMS,
    },
    'adminUser',
    `query AdminUser($userId: ID!) { adminUser(userId: $userId) { ${USER_FIELDS} } }`,
    userIdOf,
  ),
  userRoute(
    {
      method: 'PATCH',
      path: '/admin/users/:user_id',
      operationId: 'updateAdminUser',
      summary: "Change a user's name, role or status",
      description:
        'UserPatchRequest: any of name (1 to 200 characters once trimmed, or null), role (owner, admin, member), status ' +
        '(active, suspended; suspending ends every session at once, activating clears the failed-login count). Unknown ' +
        `fields are refused (422). Only what differs is written; audited user.updated with the changed fields. ${RULES} ${WHO}`,
      request: {
        params: userParams,
        body: {
          type: 'object',
          title: 'UserPatchRequest',
          additionalProperties: false,
          minProperties: 1,
          properties: {
            name: nullable('string', { maxLength: 400, description: '1 to 200 characters once trimmed; null clears it' }),
            role: { type: 'string', enum: [...roles], description: 'Only an owner grants owner' },
            status: { type: 'string', enum: [...userStatuses] },
          },
        },
      },
      problems: MUTATION_PROBLEMS,
    },
    'updateAdminUser',
    `mutation UpdateAdminUser($userId: ID!, $input: AdminUserPatchInput!) { updateAdminUser(userId: $userId, input: $input) { ${USER_FIELDS} } }`,
    (request) => ({ ...userIdOf(request), input: request.body }),
  ),
  {
    method: 'DELETE',
    path: '/admin/users/:user_id',
    operationId: 'deleteAdminUser',
    summary: 'Delete a user',
    description:
      'Deletes the user. Their sessions end at once (access and refresh tokens, cookies, sockets) and the API keys ' +
      'they created are revoked at once; the audit trail keeps the history. Audited user.deleted. ' +
      `${RULES} ${WHO}`,
    tag: 'Administration',
    auth: 'required',
    status: 204,
    request: { params: userParams },
    problems: MUTATION_PROBLEMS,
    graphql: {
      document: 'mutation DeleteAdminUser($userId: ID!) { deleteAdminUser(userId: $userId) }',
      variables: userIdOf,
      result: () => undefined,
    },
  },
  userRoute(
    {
      method: 'POST',
      path: '/admin/users/:user_id/suspend',
      operationId: 'suspendUser',
      summary: 'Suspend a user',
      description:
        `SuspendRequest: reason (1 to ${SUSPEND_REASON_MAX} characters), kept in the audit entry user.suspended. Every ` +
        'session of the user ends at once; sign-in is refused (403 forbidden) until unsuspended. ' +
        `${RULES} ${WHO}`,
      request: {
        params: userParams,
        body: {
          type: 'object',
          title: 'SuspendRequest',
          required: ['reason'],
          additionalProperties: false,
          properties: { reason: { type: 'string', minLength: 1, maxLength: SUSPEND_REASON_MAX } },
        },
      },
      problems: MUTATION_PROBLEMS,
    },
    'suspendUser',
    `mutation SuspendUser($userId: ID!, $reason: String!) { suspendUser(userId: $userId, reason: $reason) { ${USER_FIELDS} } }`,
    (request) => ({ ...userIdOf(request), reason: (request.body as { reason: string }).reason }),
  ),
  userRoute(
    {
      method: 'POST',
      path: '/admin/users/:user_id/unsuspend',
      operationId: 'unsuspendUser',
      summary: 'Unsuspend a user',
      description:
        'Lets the user sign in again and clears the failed-login count of their address (as an unlock). Audited ' +
        `user.unsuspended. An admin cannot unsuspend an owner. ${WHO}`,
      request: { params: userParams },
      problems: PROBLEMS,
    },
    'unsuspendUser',
    `mutation UnsuspendUser($userId: ID!) { unsuspendUser(userId: $userId) { ${USER_FIELDS} } }`,
    userIdOf,
  ),
  {
    method: 'POST',
    path: '/admin/users/:user_id/reset-password',
    operationId: 'sendUserPasswordReset',
    summary: 'Mail a user a password reset link',
    description:
      'Sends the user the password reset mail (single-use link, PASSWORD_RESET_TTL_MINUTES); earlier unused links stop ' +
      'working. A suspended user is refused (409). Audited user.password_reset_sent. An admin cannot reset an owner. ' +
      WHO,
    tag: 'Administration',
    auth: 'required',
    status: 200,
    request: { params: userParams },
    response: {
      type: 'object',
      required: ['user_id', 'sent', 'expires_at'],
      properties: { user_id: uuid, sent: { type: 'boolean' }, expires_at: { ...dateTime, description: 'When the link stops working' } },
    },
    problems: { ...PROBLEMS, 409: 'The user is suspended' },
    graphql: {
      document: 'mutation SendUserPasswordReset($userId: ID!) { sendUserPasswordReset(userId: $userId) { userId expiresAt } }',
      variables: userIdOf,
      result: (data) => {
        const r = data.sendUserPasswordReset as { userId: string; expiresAt: string };
        return { user_id: r.userId, sent: true, expires_at: r.expiresAt };
      },
    },
  },
  {
    method: 'POST',
    path: '/admin/users/:user_id/force-logout',
    operationId: 'forceLogoutUser',
    summary: "End all of a user's sessions",
    description:
      'Every active session of the user ends at once: access and refresh tokens are refused, cookies and ' +
      `subscriptions closed. revoked_sessions counts them. Audited user.force_logout. An admin cannot log out an owner. ${WHO}`,
    tag: 'Administration',
    auth: 'required',
    status: 200,
    request: { params: userParams },
    response: {
      type: 'object',
      required: ['user_id', 'revoked_sessions'],
      properties: { user_id: uuid, revoked_sessions: { type: 'integer' } },
    },
    problems: PROBLEMS,
    graphql: {
      document: 'mutation ForceLogoutUser($userId: ID!) { forceLogoutUser(userId: $userId) { userId revokedSessions } }',
      variables: userIdOf,
      result: (data) => {
        const r = data.forceLogoutUser as { userId: string; revokedSessions: number };
        return { user_id: r.userId, revoked_sessions: r.revokedSessions };
      },
    },
  },
  userRoute(
    {
      method: 'POST',
      path: '/admin/users/:user_id/disable-mfa',
      operationId: 'disableUserMfa',
      summary: "Turn off a user's MFA",
      description:
        "Removes the user's TOTP secret and recovery codes (for a lost device); the user is told by mail. Without MFA " +
        `on, 409 conflict. Audited user.mfa_disabled_by_admin. An admin cannot do this to an owner. ${WHO}`,
      request: { params: userParams },
      problems: { ...PROBLEMS, 409: 'MFA is not enabled for the user' },
    },
    'disableUserMfa',
    `mutation DisableUserMfa($userId: ID!) { disableUserMfa(userId: $userId) { ${USER_FIELDS} } }`,
    userIdOf,
  ),
  {
    method: 'GET',
    path: '/admin/users/:user_id/sessions',
    operationId: 'listAdminUserSessions',
    summary: "A user's active sessions",
    description:
      `The user's sessions that are neither revoked nor expired, newest first, paged (per_page defaults to ${SESSIONS_PER_PAGE}; ` +
      `a Link header gives first, prev, next and last). ${WHO}`,
    tag: 'Administration',
    paginated: true,
    auth: 'required',
    status: 200,
    request: { params: userParams, querystring: pageQuery(SESSIONS_PER_PAGE) },
    response: pageEnvelope(sessionSchema),
    problems: PROBLEMS,
    graphql: {
      document: `query AdminUserSessions($userId: ID!, $page: Int!, $perPage: Int!) {
        adminUserSessions(userId: $userId, page: $page, perPage: $perPage) {
          items { id device userAgent ip createdAt lastSeenAt current } page perPage total
        } }`,
      variables: (request) => {
        const q = request.query as { page: number; per_page: number };
        return { ...userIdOf(request), page: q.page, perPage: q.per_page };
      },
      result: (data) =>
        toPageBody(data.adminUserSessions as { items: SessionData[]; page: number; perPage: number; total: number }, sessionBody),
    },
  },
  {
    method: 'GET',
    path: '/admin/users/:user_id/usage',
    operationId: 'getAdminUserUsage',
    summary: "A user's usage by model",
    description:
      `The user's metered usage over the last days (1 to ${USAGE_DAYS_MAX}, default ${USAGE_DAYS_DEFAULT}), grouped by model ` +
      '(most credits first), with totals. Empty until usage is recorded. ' +
      WHO,
    tag: 'Administration',
    auth: 'required',
    status: 200,
    request: {
      params: userParams,
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: { days: { type: 'integer', minimum: 1, maximum: USAGE_DAYS_MAX, default: USAGE_DAYS_DEFAULT } },
      },
    },
    response: {
      type: 'object',
      required: ['user_id', 'days', 'since', 'items', 'totals'],
      properties: {
        user_id: uuid,
        days: { type: 'integer' },
        since: { ...dateTime, description: 'Start of the period' },
        items: {
          type: 'array',
          items: { type: 'object', required: ['model', 'credits', 'tokens', 'requests'], properties: { model: { type: 'string' }, ...usageNumbers } },
        },
        totals: { type: 'object', required: ['credits', 'tokens', 'requests'], properties: usageNumbers },
      },
    },
    problems: PROBLEMS,
    graphql: {
      document: `query AdminUserUsage($userId: ID!, $days: Int!) { adminUserUsage(userId: $userId, days: $days) {
        userId days since items { model credits tokens requests } totals { credits tokens requests }
      } }`,
      variables: (request) => ({ ...userIdOf(request), days: (request.query as { days: number }).days }),
      result: (data) => {
        const r = data.adminUserUsage as {
          userId: string; days: number; since: string;
          items: { model: string; credits: number; tokens: number; requests: number }[];
          totals: { credits: number; tokens: number; requests: number };
        };
        return { user_id: r.userId, days: r.days, since: r.since, items: r.items, totals: r.totals };
      },
    },
  },
  {
    method: 'POST',
    path: '/admin/users/:user_id/unlock',
    operationId: 'unlockUser',
    summary: "End a user's sign-in lock",
    description:
      "Clears the user's count of failed logins, which ends a sign-in lock (429 account_locked) or delay at once. " +
      "Owners and admins of the user's company, its API keys and superadmins; a member gets 403 and a user of " +
      'another company 404. was_locked tells whether sign-in was locked or delayed at the time. Audited user.unlocked.',
    tag: 'Administration',
    extension: true,
    auth: 'required',
    status: 200,
    request: { params: { type: 'object', required: ['user_id'], properties: { user_id: uuid } } },
    response: {
      type: 'object',
      required: ['user_id', 'was_locked', 'failures'],
      properties: {
        user_id: uuid,
        was_locked: { type: 'boolean', description: 'Whether sign-in was locked or delayed at the time' },
        failures: { type: 'integer', description: 'Consecutive failed logins that were cleared' },
      },
    },
    problems: { 403: 'The caller is not an owner or admin of the company', 404: 'No such user in the caller\'s company' },
    graphql: {
      document: 'mutation UnlockUser($userId: ID!) { unlockUser(userId: $userId) { userId wasLocked failures } }',
      variables: (request) => ({ userId: (request.params as { user_id: string }).user_id }),
      result: (data) => {
        const r = data.unlockUser as { userId: string; wasLocked: boolean; failures: number };
        return { user_id: r.userId, was_locked: r.wasLocked, failures: r.failures };
      },
    },
  },
];
