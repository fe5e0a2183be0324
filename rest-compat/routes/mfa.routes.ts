import { body, member, type RestRoute } from '../route';

export const mfaRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/me/mfa/setup',
    operationId: 'setupMfa',
    summary: 'Start TOTP enrolment',
    description:
      'Returns an otpauth:// URI (RFC 6238: SHA-1, 6 digits, 30 seconds), the same as a PNG QR code (data URI), ' +
      'the base32 secret and 8 recovery codes. They are shown this once; the secret is stored encrypted and the ' +
      'recovery codes only as hashes. MFA is not on until POST /me/mfa/verify confirms a current code. Calling it ' +
      'again before verifying replaces the secret and the codes; once MFA is on it answers 409 (disable first).',
    tag: 'Authentication',
    status: 200,
    problems: { 403: 'forbidden for an API key', 409: 'conflict: MFA is already on' },
    field: 'setupMfa',
  },
  {
    method: 'POST',
    path: '/me/mfa/verify',
    operationId: 'verifyMfa',
    summary: 'Confirm TOTP enrolment',
    description:
      'Turns MFA on when totp_code is a current code of the secret from POST /me/mfa/setup (one 30-second step of ' +
      'clock skew either way). A wrong code is 422; without a pending enrolment, or with MFA already on, 409.',
    tag: 'Authentication',
    status: 200,
    problems: { 403: 'forbidden for an API key', 409: 'conflict: no pending enrolment, or MFA already on', 422: 'validation_error: a wrong code' },
    field: 'verifyMfa',
    args: {
      code: member('totp_code', { description: 'A 6-digit code from the authenticator app' }),
    },
  },
  {
    method: 'POST',
    path: '/me/mfa/disable',
    operationId: 'disableMfa',
    summary: 'Turn MFA off',
    description:
      'Deletes the TOTP secret and every recovery code. Needs an authentication within the last 5 minutes ' +
      '(login or POST /auth/step-up), otherwise 403 step_up_required. 409 when MFA is not on.',
    tag: 'Authentication',
    extension: true,
    status: 204,
    problems: { 403: 'step_up_required, or forbidden for an API key', 409: 'conflict: MFA is not on' },
    field: 'disableMfa',
  },
  {
    method: 'POST',
    path: '/auth/step-up',
    operationId: 'stepUp',
    summary: 'Confirm the password again for sensitive operations',
    description:
      "Records a fresh authentication on the caller's session (password, plus totp_code when MFA is on: a TOTP " +
      'code or a recovery code) and returns a new access token whose auth_time claim is now. Disabling MFA, ' +
      'changing the email and requesting account deletion are allowed for 5 minutes after it. A wrong password ' +
      'is 401 invalid_credentials; a missing second factor 401 mfa_required, a wrong one 401 mfa_invalid; an API ' +
      'key, which has no session, 400.',
    tag: 'Authentication',
    status: 200,
    problems: {
      400: 'bad_request: an API key has no session to step up',
      401: 'invalid_credentials: a wrong password; mfa_required: no second factor; mfa_invalid: a wrong one',
    },
    field: 'stepUp',
    args: { input: body() },
  },
];
