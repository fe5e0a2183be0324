import { body, member, type RestRoute } from '../route';

/** The one answer to a reset request, whatever the address. */
export const PASSWORD_RESET_ACCEPTED = {
  message: 'If an active account has this email address, a password reset link is on its way to it.',
};

/**
 * Password reset by a single-use mailed link. Both paths are public, spend the
 * per-IP budget of /auth/* and are Atrium extensions (the spec shows none).
 */
export const passwordRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/auth/password-reset/request',
    operationId: 'requestPasswordReset',
    summary: 'Ask for a password reset link',
    description:
      'Always 202 with the same body, whether or not an account has this email, and in the same time: the mail is ' +
      'prepared after the answer. An active account gets a link to PUBLIC_URL/app/reset-password?token=… that works ' +
      'once and expires after 30 minutes (PASSWORD_RESET_TTL_MINUTES); a newer request replaces an unused older link. ' +
      'At most 5 mails per account and hour (PASSWORD_RESET_MAILS_PER_HOUR); further requests are answered alike.',
    tag: 'Authentication',
    extension: true,
    status: 202,
    field: 'requestPasswordReset',
    args: { email: member('email') },
    // The field only says "accepted"; the documented body is the same message for every address.
    answer: {
      body: () => PASSWORD_RESET_ACCEPTED,
      schema: () => ({ type: 'object', required: ['message'], properties: { message: { type: 'string' } } }),
    },
  },
  {
    method: 'POST',
    path: '/auth/password-reset/confirm',
    operationId: 'resetPassword',
    summary: 'Set a new password with a reset link',
    description:
      'Sets new_password (at least 12 characters, else 422) for the account of the token from the ' +
      'reset link. The token works once; every session of the account ends at once (access and refresh tokens, ' +
      'cookies, subscriptions) and its failed-login count is cleared. An unknown, expired or used token is ' +
      '400 password_reset_token_invalid.',
    tag: 'Authentication',
    extension: true,
    status: 204,
    problems: { 400: 'The reset link is invalid, expired or already used (password_reset_token_invalid)' },
    field: 'resetPassword',
    args: { input: body() },
  },
];
