import { defineErrors } from '../../errors/catalog';

export const identityErrors = defineErrors({
  redirect_uri_not_allowed: { status: 400, title: 'redirect_uri not allowed' },
  sso_state_invalid: { status: 400, title: 'Single sign-on state invalid' },
  password_reset_token_invalid: { status: 400, title: 'Password reset link invalid or expired' },
  email_change_token_invalid: { status: 400, title: 'Email confirmation link invalid or expired' },
  invitation_invalid: { status: 400, title: 'Invitation link invalid, used, revoked or expired' },
  invalid_credentials: { status: 401, title: 'Invalid credentials' },
  sso_failed: { status: 401, title: 'Single sign-on failed' },
  mfa_required: { status: 401, title: 'MFA code required' },
  mfa_invalid: { status: 401, title: 'MFA code invalid' },
  step_up_required: { status: 403, title: 'Recent authentication required' },
  mfa_enrollment_required: { status: 403, title: 'MFA enrolment required' },
  ip_not_allowed: { status: 403, title: 'IP address not allowed' },
  account_suspended: { status: 403, title: 'Account suspended' },
  sso_email_unverified: { status: 403, title: 'Email not verified by the identity provider' },
  sso_account_not_found: { status: 403, title: 'No account for this sign-in' },
  sso_provider_not_configured: { status: 404, title: 'Identity provider not configured' },
  email_taken: { status: 409, title: 'Email address already in use' },
  api_key_limit_reached: { status: 409, title: 'API key limit reached' },
  account_locked: { status: 429, title: 'Sign-in temporarily locked' },
  sso_provider_unavailable: { status: 502, title: 'Identity provider unavailable' },
});

declare module '../../errors/catalog' {
  interface ErrorCodes extends Record<keyof typeof identityErrors, ErrorEntry> {}
}
