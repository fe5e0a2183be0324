import type { RestRoute } from '../route';
import { MIN_PASSWORD_LENGTH } from '../../src/domains/identity';

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
    auth: 'public',
    rateLimit: 'auth',
    status: 202,
    request: {
      body: {
        type: 'object',
        required: ['email'],
        additionalProperties: false,
        properties: { email: { type: 'string', minLength: 3, maxLength: 320 } },
      },
    },
    response: { type: 'object', required: ['message'], properties: { message: { type: 'string' } } },
    graphql: {
      document: 'mutation RequestPasswordReset($email: String!) { requestPasswordReset(email: $email) }',
      variables: (request) => ({ email: (request.body as { email: string }).email }),
      result: () => PASSWORD_RESET_ACCEPTED,
    },
  },
  {
    method: 'POST',
    path: '/auth/password-reset/confirm',
    operationId: 'resetPassword',
    summary: 'Set a new password with a reset link',
    description:
      `Sets new_password (at least ${MIN_PASSWORD_LENGTH} characters, else 422) for the account of the token from the ` +
      'reset link. The token works once; every session of the account ends at once (access and refresh tokens, ' +
      'cookies, subscriptions) and its failed-login count is cleared. An unknown, expired or used token is ' +
      '400 password_reset_token_invalid.',
    tag: 'Authentication',
    extension: true,
    auth: 'public',
    rateLimit: 'auth',
    status: 204,
    request: {
      body: {
        type: 'object',
        required: ['token', 'new_password'],
        additionalProperties: false,
        properties: {
          token: { type: 'string', minLength: 1, maxLength: 512 },
          new_password: { type: 'string', minLength: MIN_PASSWORD_LENGTH, maxLength: 1024 },
        },
      },
    },
    problems: { 400: 'The reset link is invalid, expired or already used (password_reset_token_invalid)' },
    graphql: {
      document: 'mutation ResetPassword($input: ResetPasswordInput!) { resetPassword(input: $input) }',
      variables: (request) => {
        const body = request.body as { token: string; new_password: string };
        return { input: { token: body.token, newPassword: body.new_password } };
      },
      result: () => undefined,
    },
  },
];
