import type { Orm } from '../../db/orm';
import type { Config } from '../../config';
import { AppError, type ValidationIssue } from '../../errors/catalog';
import { hashPassword } from '../../auth/password';
import type { Principal } from '../../auth/principal';
import { requireAuthenticated } from '../../auth/policy';
import type { AuditService } from '../audit/audit.service';
import { Company } from './company.entity';
import { ApiKey } from './api-key.entity';
import { User, type Role } from './user.entity';
import { currentEm } from '../../db/unit-of-work';

export const MIN_PASSWORD_LENGTH = 12;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** What `me` answers: the caller, whether a user or a company API key. */
export interface Viewer {
  role: Role;
  authMethod: 'session' | 'api_key';
  company: Company;
  user: User | null;
  apiKey: ApiKey | null;
}

export class IdentityService {
  constructor(
    private readonly orm: Orm,
    private readonly config: Config,
    private readonly audit: AuditService,
  ) {}

  /** Creates a company and its first owner (CLI and first-start bootstrap). */
  async createCompanyWithOwner(input: {
    email: string;
    password: string;
    company: string;
    superadmin?: boolean;
  }): Promise<{ company: Company; user: User }> {
    const email = normalizeEmail(input.email);
    const issues: ValidationIssue[] = [];
    if (!EMAIL.test(email)) issues.push({ loc: ['email'], msg: 'not a valid email address', type: 'value_error.email' });
    if (input.password.length < MIN_PASSWORD_LENGTH) {
      issues.push({ loc: ['password'], msg: `must be at least ${MIN_PASSWORD_LENGTH} characters`, type: 'string_too_short' });
    }
    if (!input.company.trim()) issues.push({ loc: ['company'], msg: 'must not be empty', type: 'string_too_short' });
    if (issues.length) throw AppError.validation(issues);

    const em = currentEm(this.orm);
    if (await em.count(User, { email })) throw new AppError('conflict', 'A user with this email already exists');
    const passwordHash = await hashPassword(input.password, this.config.scryptCost);
    const company = em.create(Company, { name: input.company.trim() });
    const user = em.create(User, { company, email, passwordHash, role: 'owner', isSuperadmin: input.superadmin ?? false });
    await em.flush();
    await this.audit.record({
      action: 'company.created',
      companyId: company.id,
      actor: { actorType: 'system', actorId: null, actorLabel: 'cli' },
      targetType: 'user',
      targetId: user.id,
      data: { owner: email, superadmin: user.isSuperadmin },
    });
    return { company, user };
  }

  async userCount(): Promise<number> {
    return currentEm(this.orm).count(User, {});
  }

  async findCompanyByName(name: string): Promise<Company | null> {
    return currentEm(this.orm).findOne(Company, { name });
  }

  async companiesByIds(ids: readonly string[]): Promise<(Company | null)[]> {
    const found = await currentEm(this.orm).find(Company, { id: { $in: [...ids] } });
    const byId = new Map(found.map((c) => [c.id, c]));
    return ids.map((id) => byId.get(id) ?? null);
  }

  async usersByIds(ids: readonly string[]): Promise<(User | null)[]> {
    const found = await currentEm(this.orm).find(User, { id: { $in: [...ids] } });
    const byId = new Map(found.map((u) => [u.id, u]));
    return ids.map((id) => byId.get(id) ?? null);
  }

  async viewer(principal: Principal): Promise<Viewer> {
    const caller = requireAuthenticated(principal);
    const em = currentEm(this.orm);
    if (caller.kind === 'user') {
      const user = await em.findOne(User, { id: caller.userId }, { populate: ['company'] });
      if (!user) throw new AppError('token_invalid', 'The user of this token no longer exists');
      return { role: user.role, authMethod: 'session', company: user.company, user, apiKey: null };
    }
    const apiKey = await em.findOne(ApiKey, { id: caller.keyId }, { populate: ['company'] });
    if (!apiKey) throw new AppError('token_invalid', 'The API key no longer exists');
    return { role: 'admin', authMethod: 'api_key', company: apiKey.company, user: null, apiKey };
  }

}
