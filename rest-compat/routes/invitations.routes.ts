import type { FastifyRequest } from 'fastify';
import type { JsonSchema, RestRoute } from '../route';
import { pageEnvelope, pageQuery, toPageBody } from '../pagination';
import { dateTime, nullable, userSummary, uuid } from '../schemas';
import { MAX_BULK_INVITATIONS } from '../../src/domains/identity';
import { invitationStatuses } from '../../src/domains/identity';

/** GET /admin/invitations page size when per_page is not given (the spec's default). */
const INVITATIONS_PER_PAGE = 20;

/**
 * The legacy POST /admin/users/invite is deprecated since 2026-11-22 and will
 * be removed on 2027-03-01 (99 days' notice, Versioning point 5); its
 * successor is POST /admin/invitations.
 */
export const LEGACY_INVITE_DEPRECATION = {
  deprecation: '@1795305600', // 2026-11-22T00:00:00Z
  sunset: 'Mon, 01 Mar 2027 00:00:00 GMT',
  link: '/v1/admin/invitations',
};

const ADMIN_ONLY =
  "Owners and admins of the company and its API keys; a member gets 403. Only an owner may invite with role owner.";

const INVITATION_FIELDS = 'id companyId email role status invitedById createdAt expiresAt acceptedAt';

interface InvitationData {
  id: string;
  companyId: string;
  email: string;
  role: string;
  status: string;
  invitedById: string | null;
  createdAt: string;
  expiresAt: string;
  acceptedAt: string | null;
}

const invitation: JsonSchema = {
  type: 'object',
  required: ['id', 'company_id', 'email', 'role', 'status', 'invited_by', 'created_at', 'expires_at', 'accepted_at'],
  properties: {
    id: uuid,
    company_id: uuid,
    email: { type: 'string' },
    role: { type: 'string', enum: ['owner', 'admin', 'member'] },
    status: { type: 'string', enum: [...invitationStatuses], description: 'A pending invitation past expires_at is expired' },
    invited_by: nullable('string', { format: 'uuid', description: 'The inviting user; null for an API key' }),
    created_at: dateTime,
    expires_at: dateTime,
    accepted_at: nullable('string', { format: 'date-time' }),
  },
};

const invitationBody = (i: InvitationData) => ({
  id: i.id,
  company_id: i.companyId,
  email: i.email,
  role: i.role,
  status: i.status,
  invited_by: i.invitedById,
  created_at: i.createdAt,
  expires_at: i.expiresAt,
  accepted_at: i.acceptedAt,
});

/** InvitationRequest and the legacy InviteRequest: the same body. */
const invitationRequest = (name: string): JsonSchema => ({
  title: name,
  type: 'object',
  required: ['email', 'role'],
  additionalProperties: false,
  properties: {
    email: { type: 'string', minLength: 3, maxLength: 320 },
    role: { type: 'string', enum: ['owner', 'admin', 'member'] },
  },
});

const idParams: JsonSchema = { type: 'object', required: ['invitation_id'], properties: { invitation_id: uuid } };
const idOf = (request: FastifyRequest) => ({ id: (request.params as { invitation_id: string }).invitation_id });

const listQuery = pageQuery(INVITATIONS_PER_PAGE);
listQuery.properties = {
  status: { type: 'string', enum: [...invitationStatuses], description: 'Only invitations in this status' },
  ...(listQuery.properties as Record<string, unknown>),
};

const createMapping = {
  document: `mutation CreateInvitation($input: InvitationInput!) { createInvitation(input: $input) { ${INVITATION_FIELDS} } }`,
  variables: (request: FastifyRequest) => {
    const body = request.body as { email: string; role: string };
    return { input: { email: body.email, role: body.role } };
  },
  result: (data: Record<string, unknown>) => invitationBody(data.createInvitation as InvitationData),
};

const createProblems = {
  403: 'A member, or an admin inviting with role owner',
  409: 'email_taken: a user has this address; conflict: a pending invitation exists for it (resend that one)',
};

const createDescription =
  'Mails a single-use link PUBLIC_URL/app/accept-invitation?token=… to the address (only the SHA-256 of the token ' +
  'is stored); it expires after INVITATION_TTL_DAYS (default 7). An address that belongs to a user is ' +
  '409 email_taken; one with a pending invitation in the company is 409 conflict (resend it instead). ' +
  `${ADMIN_ONLY} Audited invitation.created.`;

/** Administration of invitations, the legacy invite path, and the public accept step. */
export const invitationRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/admin/invitations',
    operationId: 'createInvitation',
    summary: 'Invite someone to the company',
    description: createDescription,
    tag: 'Administration',
    auth: 'required',
    status: 201,
    request: { body: invitationRequest('InvitationRequest') },
    response: invitation,
    problems: createProblems,
    graphql: createMapping,
  },
  {
    method: 'GET',
    path: '/admin/invitations',
    operationId: 'listInvitations',
    summary: "List the company's invitations",
    description:
      'Newest first, in the page envelope with a Link header. status filters by pending, accepted, revoked or ' +
      `expired (a pending invitation past expires_at counts as expired). ${ADMIN_ONLY}`,
    tag: 'Administration',
    paginated: true,
    auth: 'required',
    status: 200,
    request: { querystring: listQuery },
    response: pageEnvelope(invitation),
    problems: { 403: 'The caller is not an owner or admin of the company' },
    graphql: {
      document: `query Invitations($status: String, $page: Int!, $perPage: Int!) {
        invitations(status: $status, page: $page, perPage: $perPage) { items { ${INVITATION_FIELDS} } page perPage total }
      }`,
      variables: (request) => {
        const q = request.query as { status?: string; page: number; per_page: number };
        return { status: q.status ?? null, page: q.page, perPage: q.per_page };
      },
      result: (data) =>
        toPageBody(data.invitations as { items: InvitationData[]; page: number; perPage: number; total: number }, invitationBody),
    },
  },
  {
    method: 'POST',
    path: '/admin/invitations/bulk',
    operationId: 'createInvitations',
    summary: 'Invite up to 100 people at once',
    description:
      `1 to ${MAX_BULK_INVITATIONS} rows; each is created (and mailed) or fails on its own, in its own transaction, ` +
      'so one failure loses nothing else. The answer lists one outcome per row, in order: status created with the ' +
      'invitation, or failed with error {code, detail} (the code a single POST /admin/invitations would have got). ' +
      `Answers 201 whenever the request itself is valid, even if every row failed. ${ADMIN_ONLY}`,
    tag: 'Administration',
    auth: 'required',
    status: 201,
    request: {
      body: {
        title: 'BulkInvitationRequest',
        type: 'object',
        required: ['invitations'],
        additionalProperties: false,
        properties: {
          invitations: {
            type: 'array',
            minItems: 1,
            maxItems: MAX_BULK_INVITATIONS,
            items: {
              type: 'object',
              required: ['email', 'role'],
              additionalProperties: false,
              // The address is checked per row, so a bad one fails only its row.
              properties: { email: { type: 'string', maxLength: 320 }, role: { type: 'string', enum: ['owner', 'admin', 'member'] } },
            },
          },
        },
      },
    },
    response: {
      type: 'object',
      required: ['results', 'created', 'failed'],
      properties: {
        results: {
          type: 'array',
          items: {
            type: 'object',
            required: ['email', 'status'],
            properties: {
              email: { type: 'string' },
              status: { type: 'string', enum: ['created', 'failed'] },
              invitation,
              error: {
                type: 'object',
                required: ['code', 'detail'],
                properties: { code: { type: 'string' }, detail: { type: 'string' } },
              },
            },
          },
        },
        created: { type: 'integer' },
        failed: { type: 'integer' },
      },
    },
    problems: { 403: 'The caller is not an owner or admin of the company' },
    graphql: {
      document: `mutation CreateInvitations($input: BulkInvitationInput!) { createInvitations(input: $input) {
        results { email status invitation { ${INVITATION_FIELDS} } error { code detail } } created failed
      } }`,
      variables: (request) => ({ input: { invitations: (request.body as { invitations: { email: string; role: string }[] }).invitations } }),
      result: (data) => {
        const r = data.createInvitations as {
          results: { email: string; status: string; invitation: InvitationData | null; error: { code: string; detail: string } | null }[];
          created: number;
          failed: number;
        };
        return {
          results: r.results.map((row) => ({
            email: row.email,
            status: row.status,
            ...(row.invitation ? { invitation: invitationBody(row.invitation) } : {}),
            ...(row.error ? { error: row.error } : {}),
          })),
          created: r.created,
          failed: r.failed,
        };
      },
    },
  },
  {
    method: 'POST',
    path: '/admin/invitations/:invitation_id/resend',
    operationId: 'resendInvitation',
    summary: 'Send an invitation again',
    description:
      'For a pending or expired invitation: mails a new link with a new expiry; the previous link stops working. ' +
      `An accepted or revoked one is 409 conflict. Another company's invitation is 404. ${ADMIN_ONLY} Audited invitation.resent.`,
    tag: 'Administration',
    auth: 'required',
    status: 200,
    request: { params: idParams },
    response: invitation,
    problems: { 403: 'A member, or an admin resending an owner invitation', 404: "No such invitation in the caller's company", 409: 'Not pending or expired' },
    graphql: {
      document: `mutation ResendInvitation($id: ID!) { resendInvitation(id: $id) { ${INVITATION_FIELDS} } }`,
      variables: idOf,
      result: (data) => invitationBody(data.resendInvitation as InvitationData),
    },
  },
  {
    method: 'POST',
    path: '/admin/invitations/:invitation_id/revoke',
    operationId: 'revokeInvitation',
    summary: 'Revoke a pending invitation',
    description:
      'Its link stops working at once. Only a pending invitation can be revoked (else 409 conflict). Another ' +
      "company's invitation is 404. Owners and admins of the company and its API keys. Audited invitation.revoked.",
    tag: 'Administration',
    auth: 'required',
    status: 200,
    request: { params: idParams },
    response: invitation,
    problems: { 403: 'The caller is not an owner or admin of the company', 404: "No such invitation in the caller's company", 409: 'Not pending' },
    graphql: {
      document: `mutation RevokeInvitation($id: ID!) { revokeInvitation(id: $id) { ${INVITATION_FIELDS} } }`,
      variables: idOf,
      result: (data) => invitationBody(data.revokeInvitation as InvitationData),
    },
  },
  {
    method: 'POST',
    path: '/admin/users/invite',
    operationId: 'inviteUserLegacy',
    summary: 'Invite someone (legacy; use POST /admin/invitations)',
    description:
      `Deprecated: the same as POST /admin/invitations, answered with Deprecation, Sunset (${LEGACY_INVITE_DEPRECATION.sunset}) ` +
      `and Link rel="successor-version" headers; removed after the sunset date. ${createDescription}`,
    tag: 'Administration',
    auth: 'required',
    deprecation: LEGACY_INVITE_DEPRECATION,
    status: 201,
    request: { body: invitationRequest('InviteRequest') },
    response: invitation,
    problems: createProblems,
    graphql: createMapping,
  },
  {
    method: 'POST',
    path: '/invitations/accept',
    operationId: 'acceptInvitation',
    summary: 'Accept an invitation and create your account',
    description:
      'Public (the token from the mailed link is the proof). Creates the user in the invitation\'s company with its ' +
      'role and the given password (at least 12 characters), marks the invitation accepted and answers a token pair ' +
      'like login. A bad, used, revoked or expired token is 400 invitation_invalid; an address that meanwhile ' +
      'belongs to a user is 409 email_taken. Audited invitation.accepted.',
    tag: 'Authentication',
    extension: true,
    auth: 'public',
    rateLimit: 'auth',
    status: 201,
    request: {
      body: {
        type: 'object',
        required: ['token', 'password'],
        additionalProperties: false,
        properties: {
          token: { type: 'string', minLength: 1, maxLength: 512 },
          password: { type: 'string', minLength: 1, maxLength: 1024 },
          name: nullable('string', { maxLength: 200 }),
        },
      },
    },
    response: {
      type: 'object',
      required: ['access_token', 'refresh_token', 'user'],
      properties: {
        access_token: { type: 'string', description: 'HS256 JWT, valid 15 minutes' },
        refresh_token: { type: 'string', description: 'Valid 30 days; rotated on every refresh' },
        user: userSummary,
      },
    },
    problems: { 400: 'invitation_invalid: the link is unknown, used, revoked or expired', 409: 'email_taken' },
    graphql: {
      document: `mutation AcceptInvitation($input: AcceptInvitationInput!) {
        acceptInvitation(input: $input) { accessToken refreshToken user { id email role } }
      }`,
      variables: (request) => {
        const body = request.body as { token: string; password: string; name?: string | null };
        return { input: { token: body.token, password: body.password, name: body.name ?? null } };
      },
      result: (data) => {
        const r = data.acceptInvitation as { accessToken: string; refreshToken: string; user: { id: string; email: string; role: string } };
        return {
          access_token: r.accessToken,
          refresh_token: r.refreshToken,
          user: { id: r.user.id, email: r.user.email, role: r.user.role.toLowerCase() },
        };
      },
    },
  },
];
