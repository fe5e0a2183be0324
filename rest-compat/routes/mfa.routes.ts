import type { RestRoute } from '../route';
import { dateTime, nullable } from '../schemas';

const totpCode = {
  type: 'string',
  minLength: 1,
  maxLength: 64,
  description: 'A 6-digit code from the authenticator app (or, at login and step-up, a recovery code)',
};

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
    auth: 'required',
    status: 200,
    response: {
      type: 'object',
      required: ['otpauth_uri', 'qr_code', 'secret', 'recovery_codes'],
      properties: {
        otpauth_uri: { type: 'string', description: 'otpauth://totp/Atrium:<email>?secret=…&issuer=Atrium' },
        qr_code: { type: 'string', description: 'data:image/png;base64,… of the URI' },
        secret: { type: 'string', description: 'The base32 secret, for apps that cannot scan' },
        recovery_codes: {
          type: 'array',
          minItems: 8,
          maxItems: 8,
          items: { type: 'string' },
          description: 'Single-use codes that replace a TOTP code at login or step-up',
        },
      },
    },
    graphql: {
      document: 'mutation SetupMfa { setupMfa { otpauthUri qrCode secret recoveryCodes } }',
      result: (data) => {
        const r = data.setupMfa as { otpauthUri: string; qrCode: string; secret: string; recoveryCodes: string[] };
        return { otpauth_uri: r.otpauthUri, qr_code: r.qrCode, secret: r.secret, recovery_codes: r.recoveryCodes };
      },
    },
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
    auth: 'required',
    rateLimit: 'auth',
    status: 200,
    request: {
      body: {
        type: 'object',
        required: ['totp_code'],
        additionalProperties: false,
        properties: { totp_code: totpCode },
      },
    },
    response: {
      type: 'object',
      required: ['mfa_enabled', 'enabled_at'],
      properties: { mfa_enabled: { type: 'boolean' }, enabled_at: nullable('string', { format: 'date-time' }) },
    },
    graphql: {
      document: 'mutation VerifyMfa($code: String!) { verifyMfa(code: $code) { enabled enabledAt } }',
      variables: (request) => ({ code: (request.body as { totp_code: string }).totp_code }),
      result: (data) => {
        const r = data.verifyMfa as { enabled: boolean; enabledAt: string | null };
        return { mfa_enabled: r.enabled, enabled_at: r.enabledAt };
      },
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
    auth: 'required',
    status: 204,
    graphql: { document: 'mutation DisableMfa { disableMfa }', result: () => undefined },
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
    auth: 'required',
    rateLimit: 'auth',
    status: 200,
    request: {
      body: {
        type: 'object',
        required: ['password'],
        additionalProperties: false,
        properties: {
          password: { type: 'string', minLength: 1, maxLength: 1024 },
          totp_code: totpCode,
        },
      },
    },
    response: {
      type: 'object',
      required: ['access_token', 'authenticated_at', 'step_up_expires_at'],
      properties: {
        access_token: { type: 'string', description: 'HS256 JWT for the same session, valid 15 minutes' },
        authenticated_at: dateTime,
        step_up_expires_at: { ...dateTime, description: 'Sensitive operations are allowed until then' },
      },
    },
    graphql: {
      document:
        'mutation StepUp($input: StepUpInput!) { stepUp(input: $input) { accessToken authenticatedAt stepUpExpiresAt } }',
      variables: (request) => {
        const body = request.body as { password: string; totp_code?: string };
        return { input: { password: body.password, totpCode: body.totp_code ?? null } };
      },
      result: (data) => {
        const r = data.stepUp as { accessToken: string; authenticatedAt: string; stepUpExpiresAt: string };
        return { access_token: r.accessToken, authenticated_at: r.authenticatedAt, step_up_expires_at: r.stepUpExpiresAt };
      },
    },
  },
];
