import { body, member, path, query, type JsonSchema, type RestRoute } from '../route';
import { pageArgs } from '../pagination';
import {
  ADMIN_USER_SORTS,
  SESSIONS_PER_PAGE,
  SUSPEND_REASON_MAX,
  USAGE_DAYS_DEFAULT,
  USAGE_DAYS_MAX,
  roles,
  userStatuses,
} from '../../src/domains/identity';

const user = { userId: path('user_id') };

const WHO =
  "Owners and admins of the user's company, its API keys and superadmins (any company); a member gets 403 and a " +
  'user of another company (or an unknown id) 404.';
const RULES =
  'Role rules: an admin cannot change, suspend or delete an owner (403); nobody removes, suspends or demotes the ' +
  'last active owner (409 conflict); nobody deletes or suspends themselves (403); only an owner grants the owner role (403).';
const PROBLEMS = { 403: 'forbidden: the caller is not an owner or admin of the company, or a role rule refuses', 404: "No such user in the caller's company" };
const MUTATION_PROBLEMS = { ...PROBLEMS, 409: 'The last active owner of the company would be removed, suspended or demoted' };

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
      '(default created_at, ascending; name case-insensitively), prefixed with - for descending. A superadmin sees every company, or one with ' +
      `company_id (an unknown one answers 404; for anyone else another company's id answers 404). ${WHO}`,
    tag: 'Administration',
    status: 200,
    problems: { 403: PROBLEMS[403], 404: 'company_id of another company, or no such company (superadmin)' },
    field: 'adminUsers',
    args: {
      q: query('q', { description: 'Email or name contains (case-insensitive)' }),
      role: query('role', { enum: roles }),
      status: query('status', { enum: userStatuses }),
      sort: query('sort', { enum: ADMIN_USER_SORTS.flatMap((s) => [s, `-${s}`]), description: 'Sort key; - prefix for descending' }),
      ...pageArgs(),
      companyId: query('company_id', { description: 'Superadmins: only this company' }),
    },
    paginated: true,
  },
  {
    method: 'GET',
    path: '/admin/users/:user_id',
    operationId: 'getAdminUser',
    summary: 'One user',
    description: `The user with their company and count of active sessions. ${WHO}`,
    tag: 'Administration',
    status: 200,
    problems: PROBLEMS,
    field: 'adminUser',
    args: user,
  },
  {
    method: 'PATCH',
    path: '/admin/users/:user_id',
    operationId: 'updateAdminUser',
    summary: "Change a user's name, role or status",
    description:
      'UserPatchRequest: any of name (1 to 200 characters once trimmed, or null), role (owner, admin, member), status ' +
      '(active, suspended; suspending ends every session at once, activating clears the failed-login count). Unknown ' +
      `fields are refused (422). Only what differs is written; audited user.updated with the changed fields. ${RULES} ${WHO}`,
    tag: 'Administration',
    status: 200,
    problems: MUTATION_PROBLEMS,
    field: 'updateAdminUser',
    args: { ...user, input: body() },
    bodyHints: { title: 'UserPatchRequest', minProperties: 1 },
  },
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
    status: 204,
    problems: MUTATION_PROBLEMS,
    field: 'deleteAdminUser',
    args: user,
  },
  {
    method: 'POST',
    path: '/admin/users/:user_id/suspend',
    operationId: 'suspendUser',
    summary: 'Suspend a user',
    description:
      `SuspendRequest: reason (1 to ${SUSPEND_REASON_MAX} characters), kept in the audit entry user.suspended. Every ` +
      'session of the user ends at once; sign-in is refused (403 account_suspended) until unsuspended. ' +
      `${RULES} ${WHO}`,
    tag: 'Administration',
    status: 200,
    problems: MUTATION_PROBLEMS,
    field: 'suspendUser',
    args: { ...user, reason: member('reason') },
    bodyHints: { title: 'SuspendRequest' },
  },
  {
    method: 'POST',
    path: '/admin/users/:user_id/unsuspend',
    operationId: 'unsuspendUser',
    summary: 'Unsuspend a user',
    description:
      'Lets the user sign in again and clears the failed-login count of their address (as an unlock). Audited ' +
      `user.unsuspended. An admin cannot unsuspend an owner. ${WHO}`,
    tag: 'Administration',
    status: 200,
    problems: PROBLEMS,
    field: 'unsuspendUser',
    args: user,
  },
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
    status: 200,
    problems: { ...PROBLEMS, 409: 'The user is suspended' },
    field: 'sendUserPasswordReset',
    args: user,
    // The documented body also says the mail went out (the field answers only when that succeeded).
    answer: {
      body: (sent: { user_id: string; expires_at: string }) => ({ user_id: sent.user_id, sent: true, expires_at: sent.expires_at }),
      schema: (derived) => {
        const properties = derived.properties as Record<string, JsonSchema>;
        return {
          ...derived,
          required: ['user_id', 'sent', 'expires_at'],
          properties: { user_id: properties.user_id, sent: { type: 'boolean' }, expires_at: properties.expires_at },
        };
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
    status: 200,
    problems: PROBLEMS,
    field: 'forceLogoutUser',
    args: user,
  },
  {
    method: 'POST',
    path: '/admin/users/:user_id/disable-mfa',
    operationId: 'disableUserMfa',
    summary: "Turn off a user's MFA",
    description:
      "Removes the user's TOTP secret and recovery codes (for a lost device); the user is told by mail. Without MFA " +
      `on, 409 conflict. Audited user.mfa_disabled_by_admin. An admin cannot do this to an owner. ${WHO}`,
    tag: 'Administration',
    status: 200,
    problems: { ...PROBLEMS, 409: 'MFA is not enabled for the user' },
    field: 'disableUserMfa',
    args: user,
  },
  {
    method: 'GET',
    path: '/admin/users/:user_id/sessions',
    operationId: 'listAdminUserSessions',
    summary: "A user's active sessions",
    description:
      `The user's sessions that are neither revoked nor expired, newest first, paged (per_page defaults to ${SESSIONS_PER_PAGE}; ` +
      `a Link header gives first, prev, next and last). ${WHO}`,
    tag: 'Administration',
    status: 200,
    problems: PROBLEMS,
    field: 'adminUserSessions',
    args: { ...user, ...pageArgs() },
    paginated: true,
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
    status: 200,
    problems: PROBLEMS,
    field: 'adminUserUsage',
    args: { ...user, days: query('days') },
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
    status: 200,
    problems: { 403: 'forbidden: the caller is not an owner or admin of the company', 404: 'No such user in the caller\'s company' },
    field: 'unlockUser',
    args: user,
  },
];
