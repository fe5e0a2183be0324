import type { FastifyRequest } from 'fastify';
import type { RestRoute, JsonSchema } from '../route';
import {
  actingCompanyId,
  actingCompanyOf,
  actingCompanyQuery,
  dateTime,
  nullable,
  uuid,
} from '../schemas';
import { pageEnvelope, pageQuery, toPageBody } from '../pagination';
import {
  API_KEY_MAX_AGE_BOUNDS,
  COMPANY_SESSIONS_PER_PAGE,
  IDLE_TIMEOUT_BOUNDS,
  POLICY_FIELDS,
  POLICY_MAX_PASSWORD_LENGTH,
  POLICY_MIN_PASSWORD_LENGTH,
  type SecurityPolicyPatch,
} from '../../src/domains/identity';

const WHO =
  'Owners and admins of the company and its API keys; a member gets 403. A superadmin may name any company with company_id; ' +
  'anyone else naming another company gets 403.';

const stringList = (description: string): JsonSchema => ({ type: 'array', maxItems: 100, items: { type: 'string' }, description });

const policyProperties: Record<string, JsonSchema> = {
  mfa_required: {
    type: 'boolean',
    description:
      'Users must enrol in TOTP MFA. A user without MFA can still sign in, but every other request than ' +
      'POST /me/mfa/setup, POST /me/mfa/verify, GET and PATCH /me/profile and POST /auth/logout (and the ' +
      'matching GraphQL fields) answers 403 mfa_enrollment_required until enrolment is verified.',
  },
  min_password_length: {
    type: 'integer',
    minimum: POLICY_MIN_PASSWORD_LENGTH,
    maximum: POLICY_MAX_PASSWORD_LENGTH,
    description: `Minimum length of new passwords (password reset; invitation acceptance), ${POLICY_MIN_PASSWORD_LENGTH} to ${POLICY_MAX_PASSWORD_LENGTH}. Existing passwords still sign in.`,
  },
  session_idle_timeout_minutes: nullable('integer', {
    minimum: IDLE_TIMEOUT_BOUNDS.min,
    maximum: IDLE_TIMEOUT_BOUNDS.max,
    description:
      `A session unused for this many minutes ends (${IDLE_TIMEOUT_BOUNDS.min} to ${IDLE_TIMEOUT_BOUNDS.max}; null: never): ` +
      'its tokens answer 401 token_invalid and it is revoked. Activity is recorded to the minute.',
  }),
  allowed_sso_providers: {
    type: 'array',
    items: { type: 'string', enum: ['google', 'microsoft'] },
    description: 'Providers the company\'s users may sign in with; others are refused (403). Default both.',
  },
  sso_signup_email_domains: stringList('Email domains allowed to sign up by single sign-on through an invitation (403 otherwise); empty: any'),
  ip_allowlist: stringList(
    'IPv4 and IPv6 addresses or CIDRs the company\'s users and API keys may call from (403 ip_not_allowed otherwise); empty: any. ' +
      'Must include the address of the request that sets it.',
  ),
  api_key_max_age_days: nullable('integer', {
    minimum: API_KEY_MAX_AGE_BOUNDS.min,
    maximum: API_KEY_MAX_AGE_BOUNDS.max,
    description: 'Company API keys older than this many days answer 401 token_invalid; null: no limit',
  }),
};

const policyResponse: JsonSchema = {
  type: 'object',
  required: ['company_id', ...Object.keys(policyProperties), 'updated_at', 'updated_by'],
  properties: {
    company_id: uuid,
    ...policyProperties,
    updated_at: nullable('string', { format: 'date-time', description: 'Null while the defaults were never changed' }),
    updated_by: nullable('string', { description: 'The user or API key that made the last change' }),
  },
};

const policyBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'PolicyPatchRequest: the fields to change; fields left out keep their value. Unknown fields are refused (422).',
  properties: policyProperties,
};

const POLICY_SELECTION =
  'companyId mfaRequired minPasswordLength sessionIdleTimeoutMinutes allowedSsoProviders ssoSignupEmailDomains ipAllowlist apiKeyMaxAgeDays updatedAt updatedBy';

interface PolicyData {
  companyId: string;
  mfaRequired: boolean;
  minPasswordLength: number;
  sessionIdleTimeoutMinutes: number | null;
  allowedSsoProviders: string[];
  ssoSignupEmailDomains: string[];
  ipAllowlist: string[];
  apiKeyMaxAgeDays: number | null;
  updatedAt: string | null;
  updatedBy: string | null;
}

function policyBodyOf(p: PolicyData) {
  return {
    company_id: p.companyId,
    mfa_required: p.mfaRequired,
    min_password_length: p.minPasswordLength,
    session_idle_timeout_minutes: p.sessionIdleTimeoutMinutes,
    allowed_sso_providers: p.allowedSsoProviders,
    sso_signup_email_domains: p.ssoSignupEmailDomains,
    ip_allowlist: p.ipAllowlist,
    api_key_max_age_days: p.apiKeyMaxAgeDays,
    updated_at: p.updatedAt,
    updated_by: p.updatedBy,
  };
}


/** Only the fields the body carries (PUT and PATCH are both partial). */
function patchOf(request: FastifyRequest): SecurityPolicyPatch {
  const body = request.body as Record<string, unknown>;
  const input: Record<string, unknown> = {};
  for (const [camel, snake] of Object.entries(POLICY_FIELDS)) {
    if (Object.prototype.hasOwnProperty.call(body, snake)) input[camel] = body[snake];
  }
  return input as SecurityPolicyPatch;
}

function updateRoute(method: 'PUT' | 'PATCH'): RestRoute {
  return {
    method,
    path: '/admin/security/policy',
    operationId: method === 'PUT' ? 'putSecurityPolicy' : 'patchSecurityPolicy',
    summary: method === 'PUT' ? 'Change the security policy' : 'Change the security policy (alias of PUT)',
    description:
      'Sets the fields given in the body; fields left out keep their value (PUT and PATCH behave alike). ' +
      'Invalid fields answer 422 with their loc (a list entry by its index). The new policy applies to ' +
      `the next request of every user and key of the company. Audited security_policy.updated with the changes. ${WHO}`,
    tag: 'Administration',
    auth: 'required',
    status: 200,
    request: { body: policyBody, querystring: actingCompanyQuery },
    response: policyResponse,
    problems: { 403: 'The caller is not an owner or admin of the company', 404: 'No such company (superadmin)' },
    graphql: {
      document: `mutation UpdateSecurityPolicy($input: SecurityPolicyInput!, $companyId: ID) {
        updateSecurityPolicy(input: $input, companyId: $companyId) { ${POLICY_SELECTION} } }`,
      variables: (request) => ({ input: patchOf(request), companyId: actingCompanyOf(request) }),
      result: (data) => policyBodyOf(data.updateSecurityPolicy as PolicyData),
    },
  };
}

interface SessionData {
  id: string;
  userId: string;
  email: string;
  device: string | null;
  userAgent: string | null;
  ip: string | null;
  createdAt: string;
  lastSeenAt: string;
}

const sessionItem: JsonSchema = {
  type: 'object',
  required: ['id', 'user_id', 'email', 'device', 'user_agent', 'ip', 'created_at', 'last_seen_at'],
  properties: {
    id: uuid,
    user_id: uuid,
    email: { type: 'string' },
    device: nullable('string', { description: 'Browser and OS family read from the user agent; null when unknown' }),
    user_agent: nullable('string'),
    ip: nullable('string', { description: 'Client IP address at sign-in' }),
    created_at: dateTime,
    last_seen_at: { ...dateTime, description: 'Last request seen (updated at most about once a minute)' },
  },
};

const sessionsQuery = pageQuery(COMPANY_SESSIONS_PER_PAGE);

/** A company's security policy and its active sessions. */
export const adminSecurityRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/admin/security/policy',
    operationId: 'getSecurityPolicy',
    summary: 'The company security policy',
    description: `The policy of the caller's company; the defaults until it is first changed (updated_at null). ${WHO}`,
    tag: 'Administration',
    auth: 'required',
    status: 200,
    request: { querystring: actingCompanyQuery },
    response: policyResponse,
    problems: { 403: 'The caller is not an owner or admin of the company', 404: 'No such company (superadmin)' },
    graphql: {
      document: `query SecurityPolicy($companyId: ID) { securityPolicy(companyId: $companyId) { ${POLICY_SELECTION} } }`,
      variables: (request) => ({ companyId: actingCompanyOf(request) }),
      result: (data) => policyBodyOf(data.securityPolicy as PolicyData),
    },
  },
  updateRoute('PUT'),
  updateRoute('PATCH'),
  {
    method: 'GET',
    path: '/admin/security/sessions',
    operationId: 'listCompanySessions',
    summary: "The company's active sessions",
    description:
      'Every session of a user of the company that is neither revoked, expired nor idle past the policy, newest first, ' +
      `paged (per_page defaults to ${COMPANY_SESSIONS_PER_PAGE}; a Link header gives first, prev, next and last). ${WHO}`,
    tag: 'Administration',
    paginated: true,
    auth: 'required',
    status: 200,
    request: {
      querystring: {
        ...sessionsQuery,
        properties: { ...(sessionsQuery.properties as Record<string, JsonSchema>), company_id: actingCompanyId },
      },
    },
    response: pageEnvelope(sessionItem),
    problems: { 403: 'The caller is not an owner or admin of the company', 404: 'No such company (superadmin)' },
    graphql: {
      document: `query CompanySessions($page: Int!, $perPage: Int!, $companyId: ID) {
        companySessions(page: $page, perPage: $perPage, companyId: $companyId) {
          items { id userId email device userAgent ip createdAt lastSeenAt } page perPage total
        } }`,
      variables: (request) => {
        const q = request.query as { page: number; per_page: number; company_id?: string };
        return { page: q.page, perPage: q.per_page, companyId: q.company_id ?? null };
      },
      result: (data) =>
        toPageBody(data.companySessions as { items: SessionData[]; page: number; perPage: number; total: number }, (s) => ({
          id: s.id,
          user_id: s.userId,
          email: s.email,
          device: s.device,
          user_agent: s.userAgent,
          ip: s.ip,
          created_at: s.createdAt,
          last_seen_at: s.lastSeenAt,
        })),
    },
  },
];
