import type { JsonSchema, RestRoute } from '../route';
import { dateTime, nullable, userSummary, uuid } from '../schemas';

const tokenPair = {
  access_token: { type: 'string', description: 'HS256 JWT, valid 15 minutes' },
  refresh_token: { type: 'string', description: 'Valid 30 days; rotated on every refresh' },
};

export interface ViewerData {
  role: string;
  authMethod: string;
  company: { id: string; name: string; plan: { id: string; name: string; monthlyCredits: number } };
  user: null | {
    id: string;
    email: string;
    name: string | null;
    status: string;
    createdAt: string;
    lastLoginAt: string | null;
    mfaEnabled: boolean;
    deletionScheduledFor: string | null;
  };
  apiKey: null | { id: string; name: string; prefix: string; createdAt: string };
}

/**
 * GET and PATCH /me/profile answer the same body: a field of the profile goes
 * into these selections, profileResponse and profileBody once.
 */
export const PROFILE_USER_FIELDS = 'id email name status createdAt lastLoginAt mfaEnabled deletionScheduledFor';
export const PROFILE_COMPANY_FIELDS = 'company { id name plan { id name monthlyCredits } }';

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

export function profileBody(me: ViewerData) {
  const { user, apiKey, company } = me;
  return {
    id: user?.id ?? null,
    email: user?.email ?? null,
    name: user?.name ?? null,
    role: me.role.toLowerCase(),
    status: user?.status.toLowerCase() ?? null,
    auth_method: me.authMethod.toLowerCase(),
    company: {
      id: company.id,
      name: company.name,
      plan: { id: company.plan.id, name: company.plan.name, monthly_credits: company.plan.monthlyCredits },
    },
    created_at: user?.createdAt ?? null,
    last_login_at: user?.lastLoginAt ?? null,
    mfa_enabled: user?.mfaEnabled ?? null,
    deletion_scheduled_for: user?.deletionScheduledFor ?? null,
    api_key: apiKey ? { id: apiKey.id, name: apiKey.name, prefix: apiKey.prefix, created_at: apiKey.createdAt } : null,
  };
}

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
    auth: 'public',
    rateLimit: 'auth',
    status: 200,
    problems: { 403: 'account_suspended: the account is suspended' },
    request: {
      body: {
        type: 'object',
        required: ['email', 'password'],
        additionalProperties: false,
        properties: {
          email: { type: 'string', minLength: 3, maxLength: 320 },
          password: { type: 'string', minLength: 1, maxLength: 1024 },
          totp_code: { type: 'string', maxLength: 64 },
        },
      },
    },
    response: {
      type: 'object',
      required: ['access_token', 'refresh_token', 'user'],
      properties: { ...tokenPair, user: userSummary },
    },
    graphql: {
      document:
        'mutation Login($input: LoginInput!) { login(input: $input) { accessToken refreshToken user { id email role } } }',
      variables: (request) => {
        const body = request.body as { email: string; password: string; totp_code?: string };
        return { input: { email: body.email, password: body.password, totpCode: body.totp_code ?? null } };
      },
      result: (data) => {
        const r = data.login as { accessToken: string; refreshToken: string; user: { id: string; email: string; role: string } };
        return {
          access_token: r.accessToken,
          refresh_token: r.refreshToken,
          user: { id: r.user.id, email: r.user.email, role: r.user.role.toLowerCase() },
        };
      },
    },
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
    auth: 'public',
    rateLimit: 'auth',
    status: 200,
    request: {
      body: {
        type: 'object',
        required: ['refresh_token'],
        additionalProperties: false,
        properties: { refresh_token: { type: 'string', minLength: 1, maxLength: 512 } },
      },
    },
    response: { type: 'object', required: ['access_token', 'refresh_token'], properties: tokenPair },
    graphql: {
      document:
        'mutation Refresh($input: RefreshTokenInput!) { refreshToken(input: $input) { accessToken refreshToken } }',
      variables: (request) => ({ input: { refreshToken: (request.body as { refresh_token: string }).refresh_token } }),
      result: (data) => {
        const r = data.refreshToken as { accessToken: string; refreshToken: string };
        return { access_token: r.accessToken, refresh_token: r.refreshToken };
      },
    },
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
    auth: 'required',
    rateLimit: 'auth',
    status: 204,
    graphql: { document: 'mutation Logout { logout }', result: () => undefined },
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
    auth: 'required',
    status: 200,
    response: profileResponse,
    graphql: {
      document: `query Profile { me {
        role authMethod ${PROFILE_COMPANY_FIELDS}
        user { ${PROFILE_USER_FIELDS} }
        apiKey { id name prefix createdAt }
      } }`,
      result: (data) => profileBody(data.me as ViewerData),
    },
  },
];
