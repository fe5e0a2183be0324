import type { AppError } from '../errors/catalog';

/** A member role within a company; company API keys act as `admin`. */
export const roles = ['owner', 'admin', 'member'] as const;
export type Role = (typeof roles)[number];

/** Who is calling, resolved once per request and passed unchanged to resolvers. */
export type Principal = AnonymousPrincipal | UserPrincipal | ApiKeyPrincipal | ModuleKeyPrincipal;

export interface AnonymousPrincipal {
  kind: 'anonymous';
  /** Why a presented credential was refused (expired, revoked, malformed). */
  credentialError?: AppError;
}

export interface UserPrincipal {
  kind: 'user';
  userId: string;
  companyId: string;
  role: Role;
  email: string;
  sessionId: string;
  isSuperadmin: boolean;
}

export interface ApiKeyPrincipal {
  kind: 'api_key';
  keyId: string;
  companyId: string;
  /** Company keys act as an admin of their company, without a user. */
  role: 'admin';
  name: string;
  /** When the key was created (ms since the epoch): a company policy's maximum key age is judged from it, on sockets too. */
  createdAt: number;
}

/** What an AI-modules key may be used for; a key carries some of them (all six by default). */
export const moduleScopes = ['chat', 'rag', 'translate', 'research', 'agent', 'bulk'] as const;
export type ModuleScope = (typeof moduleScopes)[number];

/**
 * A user's AI-modules key (`sk_live_svc_…`): it acts as its user, within the
 * key's scopes, on the AI modules API only. Every other field and route
 * refuses it (requireAuthenticated, the policy layer).
 */
export interface ModuleKeyPrincipal {
  kind: 'module_key';
  keyId: string;
  userId: string;
  companyId: string;
  /** The user's role, read when the key is resolved. */
  role: Role;
  email: string;
  name: string;
  scopes: readonly ModuleScope[];
}

export const anonymous: AnonymousPrincipal = Object.freeze({ kind: 'anonymous' });

/** What the transport knows about the request, for audit and rate limits. */
export interface RequestMeta {
  requestId: string;
  ip: string;
  userAgent: string | null;
  /** The request's Idempotency-Key header ('' when malformed); operations that honour it say so. */
  idempotencyKey?: string;
}
