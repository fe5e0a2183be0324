import type { Orm } from '../../db/orm';
import { AppError } from '../../errors/catalog';
import { Session } from './session.entity';
import { requireAuthenticated } from '../../auth/policy';
import type { Principal, UserPrincipal } from '../../auth/principal';

/** Sensitive operations need an authentication (login or step-up) this recent. */
export const STEP_UP_MAX_AGE_SECONDS = 5 * 60;

/** The pure decision: throws `step_up_required` (403) unless `authenticatedAt` is recent enough. */
export function assertRecentAuthentication(authenticatedAt: Date, now: number = Date.now()): void {
  if (now - authenticatedAt.getTime() <= STEP_UP_MAX_AGE_SECONDS * 1000) return;
  throw new AppError(
    'step_up_required',
    `This operation needs an authentication within the last ${STEP_UP_MAX_AGE_SECONDS / 60} minutes: ` +
      'confirm your password (and MFA code) with POST /auth/step-up or the stepUp mutation (a single sign-on account: ' +
      'GET /auth/{provider}/start?intent=step_up), then retry',
    { extra: { max_age_seconds: STEP_UP_MAX_AGE_SECONDS } },
  );
}

/**
 * The policy for sensitive account operations (disabling MFA, changing the
 * email, requesting account deletion): the caller is a signed-in user whose
 * session was authenticated (login or step-up) within the last 5 minutes.
 *
 * The session's `authenticated_at` is read from the database on every call,
 * never from the credential cache, so a step-up counts at once and an old
 * session cannot pass on a cached value. API keys have no session: 403.
 *
 * Call it first in the service method: `const user = await requireRecentAuthentication(this.orm, principal);`
 * (or `services.stepUp.requireRecentAuthentication(principal)`).
 */
export async function requireRecentAuthentication(orm: Orm, principal: Principal, now: number = Date.now()): Promise<UserPrincipal> {
  const caller = requireAuthenticated(principal);
  if (caller.kind !== 'user') {
    throw new AppError('forbidden', 'This operation needs a signed-in user who has recently confirmed their password; an API key cannot');
  }
  // A fresh fork: the request's identity map may hold the session as it was when the credential was resolved.
  const session = await orm.em.fork().findOne(Session, { id: caller.sessionId }, { fields: ['authenticatedAt', 'revokedAt'] });
  if (!session || session.revokedAt) throw new AppError('token_invalid', 'The session of this access token has ended');
  assertRecentAuthentication(session.authenticatedAt, now);
  return caller;
}
