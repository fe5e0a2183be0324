import { AppError } from '../errors/catalog';
import type { ApiKeyPrincipal, ModuleKeyPrincipal, ModuleScope, Principal, UserPrincipal } from './principal';

/**
 * Authorization decisions. Transports call these; they never look at URLs.
 */
export function requireAuthenticated(principal: Principal): UserPrincipal | ApiKeyPrincipal {
  if (principal.kind === 'anonymous') {
    throw principal.credentialError ?? new AppError('unauthenticated', 'A Bearer credential is required');
  }
  if (principal.kind === 'module_key') throw moduleKeyOutsideModules();
  return principal;
}

/** An AI-modules key presented anywhere but the AI modules API. */
export function moduleKeyOutsideModules(): AppError {
  return new AppError('token_invalid', 'An AI-modules key (sk_live_svc_…) works only on the AI modules API; use an access token or a company key');
}

/** Who an AI module runs for: a signed-in user (the frontend apps) or a user's AI-modules key. */
export interface ModuleCaller {
  userId: string;
  companyId: string;
  email: string;
  /** The module key, when the caller used one. */
  keyId: string | null;
}

/**
 * The one check of who may run an AI module: a user's AI-modules key that
 * carries `scope` (403 insufficient_scope naming it otherwise), or a
 * signed-in user. Company keys act for no user and are refused.
 */
export function requireModuleCaller(principal: Principal, scope: ModuleScope): ModuleCaller {
  if (principal.kind === 'module_key') {
    if (!principal.scopes.includes(scope)) {
      throw new AppError('insufficient_scope', `This API key lacks the "${scope}" scope`, { extra: { required_scope: scope } });
    }
    return { userId: principal.userId, companyId: principal.companyId, email: principal.email, keyId: principal.keyId };
  }
  if (principal.kind === 'user') return { userId: principal.userId, companyId: principal.companyId, email: principal.email, keyId: null };
  if (principal.kind === 'api_key') {
    throw new AppError('token_invalid', 'The AI modules run for a user: use an AI-modules key (sk_live_svc_…) or sign in; company keys are refused');
  }
  throw principal.credentialError ?? new AppError('unauthenticated', 'A Bearer credential is required');
}

/**
 * Who starts and reads long-running AI work (research, bulk jobs): an
 * AI-modules key with the scope, a signed-in user, or a company API key
 * (the platform API; it acts for no user). `admin` callers see every job of
 * their company; the others see their own.
 */
export interface JobCaller {
  companyId: string;
  userId: string | null;
  /** The API key (company or AI-modules) the caller used, if any. */
  keyId: string | null;
  admin: boolean;
}

export function requireJobCaller(principal: Principal, scope: ModuleScope): JobCaller {
  if (principal.kind === 'api_key') return { companyId: principal.companyId, userId: null, keyId: principal.keyId, admin: true };
  const caller = requireModuleCaller(principal, scope);
  // A module key acts for its user alone, whatever the user's role.
  const admin = principal.kind === 'user' && (principal.role === 'owner' || principal.role === 'admin');
  return { companyId: caller.companyId, userId: caller.userId, keyId: caller.keyId, admin };
}

/** Whether a job caller may see (and cancel) work owned by `owner`: same company, and an admin or its own. */
export function canSeeJob(caller: JobCaller, owner: { companyId: string; userId: string | null }): boolean {
  if (caller.companyId !== owner.companyId) return false;
  if (caller.admin) return true;
  return owner.userId !== null && owner.userId === caller.userId;
}

/** A module key's principal, or 401: the AI modules API takes nothing else. */
export function requireModuleKey(principal: Principal): ModuleKeyPrincipal {
  if (principal.kind === 'module_key') return principal;
  if (principal.kind === 'anonymous' && principal.credentialError) throw principal.credentialError;
  throw new AppError('unauthenticated', 'The AI modules API takes an AI-modules key: "Authorization: Bearer sk_live_svc_…"');
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
    case 'module_key':
      // A module key acts as its user.
      return { actorType: 'user', actorId: principal.userId, actorLabel: principal.email };
    default:
      return { actorType: 'anonymous', actorId: null, actorLabel: null };
  }
}
