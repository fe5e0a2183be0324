import { raw, type FilterQuery } from '@mikro-orm/core';
import type { SqlDialect } from '../../db/dialect';
import type { Orm } from '../../db/orm';
import { searchKey } from '../../search-key';
import { currentEm } from '../../db/unit-of-work';
import { AppError, type ValidationIssue } from '../../errors/catalog';
import { DISPLAY_NAME_MAX, hiddenCharacterIssue } from '../../errors/display-name';
import { textLength } from '../../errors/text-length';
import { isSuperadmin, requireAuthenticated, requireCompanyAdmin } from '../../auth/policy';
import type { ApiKeyPrincipal, Principal, RequestMeta, UserPrincipal } from '../../auth/principal';
import type { AuditService } from '../audit';
import type { Page } from '../../pagination';
import { AuditEvent } from '../audit';
import { Company } from './company.entity';
import { User, roles, userStatuses, type Role, type UserStatus } from './user.entity';
import { Session } from './session.entity';
import { Invitation } from './invitation.entity';
import { ApiKey } from './api-key.entity';
import type { PlanService } from '../billing';
import { liveSessionWhere, type SecurityPolicyEnforcer } from './security-policy.enforcer';

export const COMPANIES_PER_PAGE = 20;
export const COMPANY_AUDIT_PER_PAGE = 50;

export type CompanyAdmin = UserPrincipal | ApiKeyPrincipal;

/**
 * An owner or admin (or API key) of the company, or a superadmin of any
 * company. Any other company answers as if it did not exist.
 */
export function requireCompanyAccess(principal: Principal, companyId: string): CompanyAdmin {
  const caller = requireCompanyAdmin(principal);
  if (caller.companyId !== companyId && !isSuperadmin(caller)) {
    throw new AppError('not_found', 'No company with this id');
  }
  return caller;
}

export interface CompanyPatch {
  name?: string | null;
  planId?: string | null;
}

/** The action prefixes shown as security events on the overview. */
export const SECURITY_ACTION_PREFIXES = ['auth.', 'mfa.', 'session.', 'api_key.'] as const;
const RECENT_SECURITY_EVENTS = 10;

export interface CompanyOverview {
  companyId: string;
  users: { total: number; byStatus: Record<UserStatus, number>; byRole: Record<Role, number> };
  pendingInvitations: number;
  activeSessions: number;
  activeApiKeys: number;
  recentSecurityEvents: AuditEvent[];
}

/** Company administration: listing, reading, renaming (and re-planning), audit log and overview. */
export class CompanyAdminService {
  constructor(
    private readonly orm: Orm,
    private readonly dialect: SqlDialect,
    private readonly audit: AuditService,
    private readonly plans: PlanService,
    private readonly policies: SecurityPolicyEnforcer,
  ) {}

  /**
   * The one rule for a superadmin's `companyId` (`?company_id=`), on every
   * route and field that takes it: it names an existing company, or the
   * call is refused with 404. It is never ignored.
   */
  async existingCompanyId(companyId: string): Promise<string> {
    if (!(await currentEm(this.orm).count(Company, { id: companyId }))) throw new AppError('not_found', 'No such company');
    return companyId;
  }

  /**
   * The company an administration call of a company's settings (security
   * policy, connectors, the overview) is about: the caller's own for its
   * owners, admins and keys, or with `companyId` any existing company for a
   * superadmin. Members are 403. Another company named by an owner, admin or
   * key is 404, as every other company id a caller may not see (nothing
   * tells it exists); a missing one is 404 too.
   */
  async managedCompanyId(principal: Principal, companyId: string | null | undefined): Promise<string> {
    const caller = requireAuthenticated(principal);
    const superadmin = isSuperadmin(caller);
    // The role first, as on every other administration page: a member is 403 whichever company it names.
    if (!superadmin && caller.role !== 'admin' && caller.role !== 'owner') throw new AppError('forbidden', 'Admin role required');
    if (companyId && companyId !== caller.companyId) {
      if (!superadmin) throw new AppError('not_found', 'No such company');
      return this.existingCompanyId(companyId);
    }
    return caller.companyId;
  }

  /**
   * Superadmins see every company; anyone else only their own. `q`: name
   * contains, case-insensitive (folded keys, src/search-key.ts). By name,
   * case-insensitively: the folded name, then the name, then the id.
   */
  async list(principal: Principal, options: { q?: string | null; page: number; perPage: number }): Promise<Page<Company>> {
    const caller = requireCompanyAdmin(principal);
    const where: FilterQuery<Company> = isSuperadmin(caller) ? {} : { id: caller.companyId };
    const q = options.q?.trim();
    // A literal substring: % and _ in the query are plain characters.
    if (q) Object.assign(where, this.dialect.contains<Company>('name_key', searchKey(q)));
    const [items, total] = await currentEm(this.orm).findAndCount(Company, where, {
      orderBy: { nameKey: 'asc', name: 'asc', id: 'asc' },
      limit: options.perPage,
      offset: (options.page - 1) * options.perPage,
    });
    return { items, page: options.page, perPage: options.perPage, total };
  }

  async get(principal: Principal, companyId: string): Promise<Company> {
    requireCompanyAccess(principal, companyId);
    const company = await currentEm(this.orm).findOne(Company, { id: companyId });
    if (!company) throw new AppError('not_found', 'No company with this id');
    return company;
  }

  /** Renames the company; only a superadmin may move it to another (existing) plan. Audited company.updated. */
  async update(principal: Principal, companyId: string, patch: CompanyPatch, meta: RequestMeta): Promise<Company> {
    const company = await this.get(principal, companyId);
    const issues: ValidationIssue[] = [];
    const name = patch.name == null ? undefined : patch.name.trim();
    if (name !== undefined && (!name || textLength(name) > DISPLAY_NAME_MAX)) {
      issues.push({ loc: ['body', 'name'], msg: `must be 1 to ${DISPLAY_NAME_MAX} characters`, type: 'string_length' });
    } else if (name !== undefined) {
      const hidden = hiddenCharacterIssue(name, ['body', 'name']);
      if (hidden) issues.push(hidden);
    }
    if (patch.planId != null && !isSuperadmin(principal)) {
      throw new AppError('forbidden', 'Only a platform superadmin may change the plan here; use the billing plan change');
    }
    if (patch.planId != null && !this.plans.exists(patch.planId)) {
      issues.push({ loc: ['body', 'plan_id'], msg: 'no such plan', type: 'value_error' });
    }
    if (issues.length) throw AppError.validation(issues);

    const changes: Record<string, { from: string; to: string }> = {};
    if (name !== undefined && name !== company.name) changes.name = { from: company.name, to: name };
    if (patch.planId != null && patch.planId !== company.planId) changes.planId = { from: company.planId, to: patch.planId };
    if (Object.keys(changes).length === 0) return company;
    if (changes.name) await this.refuseNameOfAnother(principal, company.id, changes.name.to);
    if (changes.name) company.name = changes.name.to;
    if (changes.planId) company.planId = changes.planId.to;
    // The change and its audit entry commit in one flush (the audit log's).
    await this.audit.record({
      action: 'company.updated',
      companyId: company.id,
      principal,
      meta,
      targetType: 'company',
      targetId: company.id,
      data: { changes },
    });
    return company;
  }

  /**
   * Company names are unique (ignoring case and surrounding spaces) unless an
   * operator allowed a duplicate at creation (`create-owner
   * --allow-duplicate-name`): a rename never takes another company's name.
   * Only a superadmin, who sees every company, is told which one has it.
   */
  private async refuseNameOfAnother(principal: Principal, companyId: string, name: string): Promise<void> {
    const taken = await currentEm(this.orm).find(Company, { nameKey: searchKey(name), id: { $ne: companyId } }, { fields: ['id'] });
    if (!taken.length) return;
    const superadmin = isSuperadmin(principal);
    throw new AppError('conflict', superadmin ? `Another company is named "${name}"` : 'Another company has this name; choose another', {
      extra: superadmin ? { duplicate_of: taken.map((c) => c.id) } : {},
    });
  }

  /** The company's audit log, newest first; `actor` is an actor id or label. */
  async auditLog(
    principal: Principal,
    companyId: string,
    options: { page: number; perPage: number; action?: string | null; actor?: string | null },
  ): Promise<Page<AuditEvent>> {
    await this.get(principal, companyId);
    return this.audit.list(companyId, {
      page: options.page,
      perPage: options.perPage,
      action: options.action || undefined,
      actor: options.actor || undefined,
    });
  }

  /** Counts of the caller's company (a superadmin: of `companyId`) for the administration dashboard. */
  async overview(principal: Principal, target?: string | null): Promise<CompanyOverview> {
    const companyId = await this.managedCompanyId(principal, target);
    const em = currentEm(this.orm);
    const now = new Date();
    const rows = await em
      .createQueryBuilder(User, 'u')
      .select(['u.status', 'u.role', raw('count(*) as n')])
      .where({ company: companyId })
      .groupBy(['u.status', 'u.role'])
      .execute<{ status: UserStatus; role: Role; n: number }[]>('all', false);
    const byStatus = Object.fromEntries(userStatuses.map((s) => [s, 0])) as Record<UserStatus, number>;
    const byRole = Object.fromEntries(roles.map((r) => [r, 0])) as Record<Role, number>;
    let total = 0;
    for (const row of rows) {
      const n = Number(row.n);
      total += n;
      byStatus[row.status] = (byStatus[row.status] ?? 0) + n;
      byRole[row.role] = (byRole[row.role] ?? 0) + n;
    }
    const pendingInvitations = await em.count(Invitation, { company: companyId, status: 'pending', expiresAt: { $gt: now } });
    const activeSessions = await em.count(Session, liveSessionWhere(await this.policies.policyOf(companyId), now.getTime()));
    const activeApiKeys = await em.count(ApiKey, { company: companyId, revokedAt: null });
    const recentSecurityEvents = await em.find(
      AuditEvent,
      { companyId, $or: SECURITY_ACTION_PREFIXES.map((prefix) => ({ action: { $like: `${prefix}%` } })) },
      { orderBy: { createdAt: 'desc', id: 'desc' }, limit: RECENT_SECURITY_EVENTS },
    );
    return { companyId, users: { total, byStatus, byRole }, pendingInvitations, activeSessions, activeApiKeys, recentSecurityEvents };
  }
}
