import { body, path, query, type JsonSchema, type RestRoute } from '../route';
import { pageArgs } from '../pagination';
import { invitationStatuses } from '../../src/domains/identity';
import { SIGN_IN_SELECTION } from './auth.routes';

/**
 * The legacy POST /admin/users/invite is deprecated since 2026-11-22 and will
 * be removed on 2027-03-01 (99 days' notice, Versioning point 5); its
 * successor is POST /admin/invitations.
 */
export const LEGACY_INVITE_DEPRECATION = {
  deprecation: '@1795305600', // 2026-11-22T00:00:00Z
  sunset: 'Mon, 01 Mar 2027 00:00:00 GMT',
  link: '/admin/invitations',
};

const ADMIN_ONLY =
  "Owners and admins of the company and its API keys; a member gets 403. Only an owner may invite with role owner.";

const createProblems = {
  403: 'forbidden: a member, or an admin inviting with role owner',
  409: 'email_taken: a user of the company has this address; conflict: a pending invitation exists for it (resend that one)',
};

const createDescription =
  'Mails a single-use link PUBLIC_URL/app/accept-invitation?token=… to the address (only the SHA-256 of the token ' +
  'is stored); it expires after INVITATION_TTL_DAYS (default 7). An address that belongs to a user of the company is ' +
  '409 email_taken; one with a pending invitation in the company is 409 conflict (resend it instead). A user of another ' +
  'company is invited like anyone (accepting answers email_taken), so the answer tells nothing about other companies. ' +
  `${ADMIN_ONLY} Audited invitation.created.`;

/** A single invitation's address: the bulk rows check theirs per row, so only the single request bounds it below. */

/** Bulk rows are answered without the member that does not apply (invitation or error). */
interface BulkBody {
  results: { email: string; status: string; invitation: unknown; error: unknown }[];
  created: number;
  failed: number;
}

/** Administration of invitations, the legacy invite path, and the public accept step. */
export const invitationRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/admin/invitations',
    operationId: 'createInvitation',
    summary: 'Invite someone to the company',
    description: createDescription,
    tag: 'Administration',
    status: 201,
    problems: createProblems,
    field: 'createInvitation',
    args: { input: body() },
    bodyHints: { title: 'InvitationRequest' },
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
    status: 200,
    problems: { 403: 'forbidden: the caller is not an owner or admin of the company' },
    field: 'invitations',
    args: { status: query('status', { enum: invitationStatuses, description: 'Only invitations in this status' }), ...pageArgs() },
    paginated: true,
  },
  {
    method: 'POST',
    path: '/admin/invitations/bulk',
    operationId: 'createInvitations',
    summary: 'Invite up to 100 people at once',
    description:
      `1 to 100 rows; each is created (and mailed) or fails on its own, in its own transaction, ` +
      'so one failure loses nothing else. The answer lists one outcome per row, in order: status created with the ' +
      'invitation, or failed with error {code, detail} (the code a single POST /admin/invitations would have got). ' +
      `Answers 201 whenever the request itself is valid, even if every row failed. ${ADMIN_ONLY}`,
    tag: 'Administration',
    status: 201,
    problems: { 403: 'forbidden: the caller is not an owner or admin of the company' },
    field: 'createInvitations',
    args: { input: body() },
    bodyHints: { title: 'BulkInvitationRequest' },
    answer: {
      body: (result: BulkBody) => ({
        ...result,
        results: result.results.map(({ invitation, error, ...row }) => ({
          ...row,
          ...(invitation ? { invitation } : {}),
          ...(error ? { error } : {}),
        })),
      }),
      schema: (derived) => {
        const results = (derived.properties as Record<string, JsonSchema>).results!;
        const row = results.items as JsonSchema;
        const members = row.properties as Record<string, JsonSchema>;
        const present = (schema: JsonSchema) => ({ ...schema, type: 'object' });
        return {
          ...derived,
          properties: {
            ...(derived.properties as Record<string, JsonSchema>),
            results: {
              ...results,
              items: {
                ...row,
                required: ['email', 'status'],
                properties: { ...members, invitation: present(members.invitation!), error: present(members.error!) },
              },
            },
          },
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
    status: 200,
    problems: { 403: 'forbidden: a member, or an admin resending an owner invitation', 404: "No such invitation in the caller's company", 409: 'Not pending or expired' },
    field: 'resendInvitation',
    args: { id: path('invitation_id') },
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
    status: 200,
    problems: { 403: 'forbidden: the caller is not an owner or admin of the company', 404: "No such invitation in the caller's company", 409: 'Not pending' },
    field: 'revokeInvitation',
    args: { id: path('invitation_id') },
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
    deprecation: LEGACY_INVITE_DEPRECATION,
    status: 201,
    problems: createProblems,
    field: 'createInvitation',
    args: { input: body() },
    bodyHints: { title: 'InviteRequest' },
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
    status: 201,
    problems: { 400: 'invitation_invalid: the link is unknown, used, revoked or expired', 409: 'email_taken' },
    field: 'acceptInvitation',
    args: { input: body() },
    select: SIGN_IN_SELECTION,
  },
];
