import { AppError } from '../errors/catalog';
import type { ApiKeyPrincipal, Principal, UserPrincipal } from './principal';

/**
 * Authorization decisions. Transports call these; they never look at URLs.
 */
export function requireAuthenticated(principal: Principal): UserPrincipal | ApiKeyPrincipal {
  if (principal.kind === 'anonymous') {
    throw principal.credentialError ?? new AppError('unauthenticated', 'A Bearer credential is required');
  }
  return principal;
}

export function requireUser(principal: Principal): UserPrincipal {
  const p = requireAuthenticated(principal);
  if (p.kind !== 'user') throw new AppError('forbidden', 'This operation needs a signed-in user, not an API key');
  return p;
}

/** Owners and admins of the company; company API keys count as admin. */
export function requireCompanyAdmin(principal: Principal): UserPrincipal | ApiKeyPrincipal {
  const p = requireAuthenticated(principal);
  if (p.role !== 'admin' && p.role !== 'owner') throw new AppError('forbidden', 'Admin role required');
  return p;
}

/** A platform operator: acts in every company with an owner's rights. */
export const isSuperadmin = (p: Principal): boolean => p.kind === 'user' && p.isSuperadmin;

export function actorOf(principal: Principal): { actorType: 'user' | 'api_key' | 'anonymous'; actorId: string | null; actorLabel: string | null } {
  switch (principal.kind) {
    case 'user':
      return { actorType: 'user', actorId: principal.userId, actorLabel: principal.email };
    case 'api_key':
      return { actorType: 'api_key', actorId: principal.keyId, actorLabel: principal.name };
    default:
      return { actorType: 'anonymous', actorId: null, actorLabel: null };
  }
}
