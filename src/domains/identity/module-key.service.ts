import type { Orm } from '../../db/orm';
import { currentEm, transaction, whenCommitted } from '../../db/unit-of-work';
import { AppError } from '../../errors/catalog';
import { displayName } from '../../errors/display-name';
import { newModuleKey, sha256Hex } from '../../auth/tokens';
import { requireUser } from '../../auth/policy';
import { moduleScopes, type ModuleScope, type Principal, type RequestMeta } from '../../auth/principal';
import type { EventBus } from '../../events/event-bus';
import type { AuditService } from '../audit';
import { ApiKey } from './api-key.entity';
import { parseScopes } from './auth.service';
import { User } from './user.entity';

/** Active AI-modules keys one account may hold (ai-modules-api.md, Limits). */
export const MAX_MODULE_KEYS_PER_USER = 10;
/** Characters of a key kept in clear (`sk_live_svc_` and four more) so lists can tell keys apart. */
const DISPLAY_PREFIX_LENGTH = 16;

export interface ModuleKeyView {
  id: string;
  name: string;
  prefix: string;
  scopes: ModuleScope[];
  createdAt: Date;
  lastUsedAt: Date | null;
}

export const moduleKeyView = (key: ApiKey): ModuleKeyView => ({
  id: key.id,
  name: key.name,
  prefix: key.prefix,
  scopes: parseScopes(key.scopes),
  createdAt: key.createdAt,
  lastUsedAt: key.lastUsedAt,
});

/**
 * A user's own AI-modules keys, managed with the user's access token (the
 * dashboard), never with a key: create (the plaintext once), list, revoke.
 * A company's admins list and revoke them with the company's keys
 * (ApiKeyAdminService).
 */
export class ModuleKeyService {
  constructor(
    private readonly orm: Orm,
    private readonly audit: AuditService,
    private readonly bus: EventBus,
  ) {}

  async create(principal: Principal, input: { name: string; scopes?: readonly string[] | null }, meta: RequestMeta): Promise<{ key: ModuleKeyView; plaintext: string }> {
    const caller = requireUser(principal);
    const name = displayName(input.name, ['body', 'name']);
    const scopes = checkScopes(input.scopes);
    const plaintext = newModuleKey();
    return transaction(this.orm, async () => {
      const em = currentEm(this.orm);
      // Counted inside the write transaction: two concurrent creates cannot both take the tenth slot.
      const active = await em.count(ApiKey, { user: caller.userId, revokedAt: null });
      if (active >= MAX_MODULE_KEYS_PER_USER) {
        throw new AppError('api_key_limit_reached', `An account may hold at most ${MAX_MODULE_KEYS_PER_USER} active API keys; revoke one first`);
      }
      const user = em.getReference(User, caller.userId);
      const key = em.create(ApiKey, {
        company: caller.companyId,
        user,
        createdBy: user,
        name,
        prefix: plaintext.slice(0, DISPLAY_PREFIX_LENGTH),
        keyHash: sha256Hex(plaintext),
        scopes: scopes.join(','),
      });
      await this.audit.record({
        action: 'module_key.created',
        companyId: caller.companyId,
        principal,
        meta,
        targetType: 'api_key',
        targetId: key.id,
        data: { name, prefix: key.prefix, scopes },
      });
      return { key: moduleKeyView(key), plaintext };
    });
  }

  /** The caller's active keys, newest first: prefixes only. */
  async list(principal: Principal): Promise<ModuleKeyView[]> {
    const caller = requireUser(principal);
    const keys = await currentEm(this.orm).find(ApiKey, { user: caller.userId, revokedAt: null }, { orderBy: { createdAt: 'desc', id: 'desc' } });
    return keys.map(moduleKeyView);
  }

  /** Revokes one of the caller's keys at once; another user's key, or an unknown one, is 404. */
  async revoke(principal: Principal, keyId: string, meta: RequestMeta): Promise<void> {
    const caller = requireUser(principal);
    const em = currentEm(this.orm);
    const key = await em.findOne(ApiKey, { id: keyId, user: caller.userId, revokedAt: null });
    if (!key) throw new AppError('not_found', 'You have no active API key with this id');
    key.revokedAt = new Date();
    await this.audit.record({
      action: 'module_key.revoked',
      companyId: caller.companyId,
      principal,
      meta,
      targetType: 'api_key',
      targetId: key.id,
      data: { name: key.name, prefix: key.prefix },
    });
    whenCommitted(this.orm, () => this.bus.publish('api_key.revoked', { keyId: key.id, keyHash: key.keyHash }));
  }
}

/** The requested scopes (all six when none are named), or 422 naming the unknown one. */
function checkScopes(requested: readonly string[] | null | undefined): ModuleScope[] {
  if (requested === undefined || requested === null) return [...moduleScopes];
  if (!requested.length) {
    throw AppError.validation([{ loc: ['body', 'scopes'], msg: `name at least one of ${moduleScopes.join(', ')}`, type: 'too_short' }]);
  }
  requested.forEach((scope, i) => {
    if (!(moduleScopes as readonly string[]).includes(scope)) {
      throw AppError.validation([{ loc: ['body', 'scopes', i], msg: `must be one of ${moduleScopes.join(', ')}`, type: 'enum' }]);
    }
  });
  return moduleScopes.filter((scope) => requested.includes(scope));
}
