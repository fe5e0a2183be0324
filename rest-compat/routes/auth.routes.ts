import { body, type JsonSchema, type RestRoute } from '../route';
import { nullable, uuid, dateTime } from '../schemas';

/** The viewer as the derived body has it: snake_case, enum values lower-case. */
interface ViewerBody {
  role: string;
  auth_method: string;
  company: { id: string; name: string; plan: { id: string; name: string; monthly_credits: number } };
  user: null | {
    id: string;
    email: string;
    name: string | null;
    status: string;
    created_at: string;
    last_login_at: string | null;
    mfa_enabled: boolean;
    deletion_scheduled_for: string | null;
  };
  api_key: null | { id: string; name: string; prefix: string; created_at: string };
}

/** The documented profile flattens the viewer: the user's fields at the top, the key beside them. */
export const PROFILE_SELECTION =
  'role authMethod company { id name plan { id name monthlyCredits } } ' +
  'user { id email name status createdAt lastLoginAt mfaEnabled deletionScheduledFor } apiKey { id name prefix createdAt }';

export const profileResponse: JsonSchema = {
  type: 'object',
  required: ['id', 'email', 'name', 'role', 'auth_method', 'company', 'created_at', 'last_login_at', 'mfa_enabled', 'api_key'],
  properties: {
    id: nullable('string', { format: 'uuid' }),
    email: nullable('string'),
    name: nullable('string'),
    role: { type: 'string', enum: ['owner', 'admin', 'member'] },
    status: nullable('string'),
    auth_method: { type: 'string', enum: ['session', 'api_key'] },
    company: {
      type: 'object',
      required: ['id', 'name', 'plan'],
      properties: {
        id: uuid,
        name: { type: 'string' },
        plan: {
          type: 'object',
          required: ['id', 'name', 'monthly_credits'],
          properties: { id: { type: 'string' }, name: { type: 'string' }, monthly_credits: { type: 'integer' } },
        },
      },
    },
    created_at: nullable('string', { format: 'date-time' }),
    last_login_at: nullable('string', { format: 'date-time' }),
    mfa_enabled: nullable('boolean', { description: 'Whether login needs a TOTP code; null for an API key' }),
    deletion_scheduled_for: nullable('string', {
      format: 'date-time',
      description: 'When the requested deletion of the account runs unless cancelled (DELETE /me/deletion); null when none is scheduled or for an API key',
    }),
    api_key: {
      type: ['object', 'null'],
      required: ['id', 'name', 'prefix', 'created_at'],
      properties: { id: uuid, name: { type: 'string' }, prefix: { type: 'string' }, created_at: dateTime },
    },
  },
};

export function profileBody(me: ViewerBody) {
  const { user, api_key: apiKey, company } = me;
  return {
    id: user?.id ?? null,
    email: user?.email ?? null,
    name: user?.name ?? null,
    role: me.role,
    status: user?.status ?? null,
    auth_method: me.auth_method,
    company,
    created_at: user?.created_at ?? null,
    last_login_at: user?.last_login_at ?? null,
    mfa_enabled: user?.mfa_enabled ?? null,
    deletion_scheduled_for: user?.deletion_scheduled_for ?? null,
    api_key: apiKey,
  };
}

/** Sign-in answers: the token pair and who signed in (the documented body shows the user's id, email and role only). */
export const SIGN_IN_SELECTION = 'accessToken refreshToken user { id email role }';

export const authRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/auth/login',
    operationId: 'login',
    summary: 'Sign in with email and password',
    description:
      'Returns a token pair and the user. A wrong email and a wrong password get the same answer. ' +
      'totp_code is required only when MFA is enabled for the account: without it the answer is 401 mfa_required, ' +
      'with a wrong or already used code 401 mfa_invalid (only ever after a correct password). A recovery code is ' +
      'accepted in place of a TOTP code, once. A suspended account is refused with 403 account_suspended, only ever ' +
      'after a correct password (and second factor).',
    tag: 'Authentication',
    status: 200,
    problems: {
      401: 'invalid_credentials: a wrong email or password; mfa_required: MFA is on and totp_code is missing; mfa_invalid: a wrong or used code',
      403: 'account_suspended: the account is suspended',
    },
    field: 'login',
    args: { input: body() },
    select: SIGN_IN_SELECTION,
  },
  {
    method: 'POST',
    path: '/auth/refresh',
    operationId: 'refreshToken',
    summary: 'Rotate a refresh token',
    description:
      'Issues a new token pair; the presented refresh token stops working at once. Of concurrent ' +
      'refreshes with one token exactly one succeeds; the others get 401 token_invalid.',
    tag: 'Authentication',
    status: 200,
    problems: { 401: 'token_invalid: the refresh token is unknown, expired, revoked or already rotated' },
    field: 'refreshToken',
    args: { input: body() },
  },
  {
    method: 'POST',
    path: '/auth/logout',
    operationId: 'logout',
    summary: 'Sign out',
    description:
      "Ends the caller's session: its refresh token and access tokens stop working at once, and the " +
      'service_token cookie is cleared. Other sessions stay valid.',
    tag: 'Authentication',
    status: 204,
    problems: { 400: 'bad_request: an API key has no session to log out of' },
    field: 'logout',
  },
  {
    method: 'GET',
    path: '/me/profile',
    operationId: 'getProfile',
    summary: "The caller's profile",
    description:
      'For a user: who they are and their company. For a company API key (no user context): the key ' +
      'and its company, with the effective role admin; the user fields are null.',
    tag: 'Authentication',
    status: 200,
    field: 'me',
    select: PROFILE_SELECTION,
    answer: { body: profileBody, schema: () => profileResponse },
  },
];
