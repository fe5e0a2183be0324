import type { Orm } from '../../db/orm';
import { AppError } from '../../errors/catalog';
import { displayName } from '../../errors/display-name';
import { newCompanyApiKey, sha256Hex } from '../../auth/tokens';
import type { Principal, RequestMeta } from '../../auth/principal';
import type { AuditService } from '../audit';
import { ApiKey } from './api-key.entity';
import { Company } from './company.entity';
import { currentEm } from '../../db/unit-of-work';

/** Characters of a key kept in clear so lists can tell keys apart. */
const DISPLAY_PREFIX_LENGTH = 12;

export class ApiKeyService {
  constructor(
    private readonly orm: Orm,
    private readonly audit: AuditService,
  ) {}

  /** The plaintext key is returned here and never again; only its hash is stored. */
  async createCompanyKey(input: {
    companyId: string;
    name: string;
    principal?: Principal;
    meta?: RequestMeta;
  }): Promise<{ apiKey: ApiKey; plaintext: string }> {
    const name = displayName(input.name, ['body', 'name']);
    const em = currentEm(this.orm);
    const company = await em.findOne(Company, { id: input.companyId });
    if (!company) throw new AppError('not_found', 'No such company');
    const plaintext = newCompanyApiKey();
    const createdBy = input.principal?.kind === 'user' ? input.principal.userId : null;
    const apiKey = em.create(ApiKey, {
      company,
      name,
      prefix: plaintext.slice(0, DISPLAY_PREFIX_LENGTH),
      keyHash: sha256Hex(plaintext),
      createdBy,
    });
    // The change and its audit entry commit in one flush (the audit log's).
    await this.audit.record({
      action: 'api_key.created',
      companyId: company.id,
      ...(input.principal ? { principal: input.principal } : { actor: { actorType: 'system', actorId: null, actorLabel: 'cli' } }),
      meta: input.meta,
      targetType: 'api_key',
      targetId: apiKey.id,
      data: { name, prefix: apiKey.prefix },
    });
    return { apiKey, plaintext };
  }
}
