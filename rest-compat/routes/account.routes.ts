import { member, type RestRoute } from '../route';

/**
 * Email change and account deletion. The spec names these operations (they
 * need an authentication within 5 minutes, else 403 step_up_required) but
 * shows no paths: these are ours. Each runs the GraphQL mutation of the same
 * name (subgraphs/identity/account.resolver.ts).
 */

const STEP_UP =
  'Needs an authentication within the last 5 minutes (login or POST /auth/step-up), otherwise 403 step_up_required; ' +
  'a company API key has no session and is refused with 403 forbidden.';

export const accountRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/me/email',
    operationId: 'requestEmailChange',
    summary: 'Ask to change your email address',
    description:
      'Keeps new_email as a pending change and mails a confirmation link (PUBLIC_URL/app/confirm-email?token=…, valid ' +
      'EMAIL_CHANGE_TOKEN_TTL_MINUTES, default 24 hours, single use) to the new address, and a notice to the current one. ' +
      'The account keeps its current email until POST /me/email/confirm. A newer request replaces a pending one (its link ' +
      'stops working). An address another account uses is 409 email_taken (the caller is signed in, has just confirmed ' +
      'their password, the attempt is audited and the auth rate limit applies); the current address or a malformed one ' +
      `is 422. ${STEP_UP}`,
    tag: 'Authentication',
    extension: true,
    status: 202,
    problems: { 403: 'step_up_required, or forbidden for an API key', 409: 'email_taken: another account uses this address' },
    field: 'requestEmailChange',
    args: { newEmail: member('new_email') },
  },
  {
    method: 'DELETE',
    path: '/me/email',
    operationId: 'cancelEmailChange',
    summary: 'Cancel a pending email change',
    description:
      'Voids the pending email change of the caller, if any: its confirmation link stops working. No step-up needed. ' +
      'Answers 204 whether or not a change was pending. A company API key is refused with 403 forbidden.',
    tag: 'Authentication',
    extension: true,
    status: 204,
    problems: { 403: 'forbidden for an API key' },
    field: 'cancelEmailChange',
  },
  {
    method: 'POST',
    path: '/me/email/confirm',
    operationId: 'confirmEmailChange',
    summary: 'Confirm an email change',
    description:
      'Sets the account email to the address the token was mailed to. Needs no credential: the token from the link ' +
      'is the proof (opened from the mailbox, possibly on another device). It works once, until it expires. An unknown, ' +
      'used, replaced or expired token is 400 email_change_token_invalid; when another account has taken the address ' +
      'meanwhile, 409 email_taken (the link stays usable). Sessions stay signed in; sign-in uses the new address from ' +
      'now on, and the change is audited as user.email_changed. Spends the auth rate-limit budget.',
    tag: 'Authentication',
    extension: true,
    status: 204,
    problems: {
      400: 'email_change_token_invalid: unknown, used, replaced or expired',
      403: 'forbidden: the account is suspended',
      409: 'email_taken: another account uses the address now',
    },
    field: 'confirmEmailChange',
    args: { token: member('token', { description: 'The token parameter of the link' }) },
  },
  {
    method: 'POST',
    path: '/me/deletion',
    operationId: 'requestAccountDeletion',
    summary: 'Ask for your account to be deleted',
    description:
      'Schedules the deletion of the caller\'s account ACCOUNT_DELETION_GRACE_DAYS (default 14) days from now, shows it ' +
      'as deletion_scheduled_for in GET /me/profile and mails a notice with a link to cancel. Until then DELETE ' +
      '/me/deletion cancels it; afterwards the account, its sessions and sign-in methods are deleted (the audit log keeps ' +
      'the event). Asking again while scheduled answers the same date. The only owner of a company that has other users ' +
      'is refused with 409 conflict (make someone else an owner first); an owner alone in their company may leave, the ' +
      `company stays. ${STEP_UP}`,
    tag: 'Authentication',
    extension: true,
    status: 202,
    problems: { 403: 'step_up_required, or forbidden for an API key', 409: 'conflict: the only owner of a company with other users' },
    field: 'requestAccountDeletion',
  },
  {
    method: 'DELETE',
    path: '/me/deletion',
    operationId: 'cancelAccountDeletion',
    summary: 'Cancel the deletion of your account',
    description:
      'Cancels the scheduled deletion of the caller\'s account and mails a confirmation. No step-up needed. 409 conflict ' +
      'when no deletion is scheduled. A company API key is refused with 403 forbidden.',
    tag: 'Authentication',
    extension: true,
    status: 204,
    problems: { 403: 'forbidden for an API key', 409: 'conflict: no deletion is scheduled' },
    field: 'cancelAccountDeletion',
  },
];
