import type { Orm } from '../../db/orm';
import { currentEm } from '../../db/unit-of-work';
import { AppError } from '../../errors/catalog';
import { isSuperadmin, requireCompanyAdmin } from '../../auth/policy';
import type { Principal, RequestMeta } from '../../auth/principal';
import type { EventBus } from '../../events/event-bus';
import type { AuditService } from '../audit';
import type { Page } from '../../pagination';
import { ApiKey } from './api-key.entity';
import type { ApiKeyService } from './api-key.service';


export const API_KEYS_PER_PAGE = 20;

/** Active (not revoked) keys a company may hold at once. */
export const MAX_ACTIVE_API_KEYS = 50;

/**
 * Administration of a company's API keys: list, create (plaintext shown
 * once), revoke. Owners, admins and the company's keys; a superadmin may
 * revoke a key of any company by id.
 */
export class ApiKeyAdminService {
  constructor(
    private readonly orm: Orm,
    private readonly audit: AuditService,
    private readonly bus: EventBus,
    private readonly apiKeys: ApiKeyService,
  ) {}

  /** The caller's company's active keys, newest first: its company keys and its users' AI-modules keys. */
  async list(principal: Principal, options: { page: number; perPage: number }): Promise<Page<ApiKey>> {
    const { companyId } = requireCompanyAdmin(principal);
    const [items, total] = await currentEm(this.orm).findAndCount(
      ApiKey,
      { company: companyId, revokedAt: null },
      { orderBy: { createdAt: 'desc', id: 'desc' }, limit: options.perPage, offset: (options.page - 1) * options.perPage },
    );
    return { items, page: options.page, perPage: options.perPage, total };
  }

  async create(principal: Principal, name: string, meta: RequestMeta): Promise<{ apiKey: ApiKey; plaintext: string }> {
    const { companyId } = requireCompanyAdmin(principal);
    // Users' AI-modules keys have their own limit per account.
    const active = await currentEm(this.orm).count(ApiKey, { company: companyId, revokedAt: null, user: null });
    if (active >= MAX_ACTIVE_API_KEYS) {
      throw new AppError('api_key_limit_reached', `A company may hold at most ${MAX_ACTIVE_API_KEYS} active API keys; revoke one first`);
    }
    return this.apiKeys.createCompanyKey({ companyId, name: name ?? '', principal, meta });
  }

  /** Revokes at once: the credential cache drops the key and its open subscriptions are closed. */
  async revoke(principal: Principal, keyId: string, meta: RequestMeta): Promise<void> {
    const caller = requireCompanyAdmin(principal);
    const em = currentEm(this.orm);
    const key = await em.findOne(ApiKey, { id: keyId, revokedAt: null });
    if (!key || (key.company.id !== caller.companyId && !isSuperadmin(caller))) {
      throw new AppError('not_found', 'No active API key with this id in your company');
    }
    key.revokedAt = new Date();
    // The change and its audit entry commit in one flush (the audit log's).
    await this.audit.record({
      action: 'api_key.revoked',
      companyId: key.company.id,
      principal,
      meta,
      targetType: 'api_key',
      targetId: key.id,
      data: { name: key.name, prefix: key.prefix },
    });
    this.bus.publish('api_key.revoked', { keyId: key.id, keyHash: key.keyHash });
  }
}
