import { domainToASCII, domainToUnicode } from 'node:url';
import type { Orm } from '../../db/orm';
import { searchKey } from '../../search-key';
import type { IdentitySettings } from './config';
import { AppError, type ValidationIssue } from '../../errors/catalog';
import { DISPLAY_NAME_MAX, hiddenCharacterIssue } from '../../errors/display-name';
import { textLength } from '../../errors/text-length';
import { hashPassword, MAX_PASSWORD_LENGTH } from '../../auth/password';
import type { Principal } from '../../auth/principal';
import { requireAuthenticated } from '../../auth/policy';
import type { AuditService } from '../audit';
import { Company } from './company.entity';
import { User, type Role, type UserStatus } from './user.entity';
import { toDate, type ReadStore } from '../../db/read-store';
import { VersionedCache, type ChangeSignal } from '../../db/change-signal';
import { currentEm, transaction } from '../../db/unit-of-work';
import type { LedgerService, PlanService } from '../billing';

export const MIN_PASSWORD_LENGTH = 12;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/**
 * An address as it is stored and looked up: trimmed, lower-cased and in
 * Unicode NFC, so "jöhn" typed precomposed (U+00F6) or decomposed (o +
 * U+0308) is one address everywhere (uniqueness, invitations, sign-in).
 */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase().normalize('NFC');
}

/**
 * An email domain as security policies store and compare it: in the form
 * normalizeEmail gives an address (a leading "@" dropped), so a domain typed
 * decomposed matches the addresses at it; and in Unicode, so its A-label
 * (xn--bcher-kva.example, as DNS and some admins write it) is the same
 * domain as the bücher.example of an address.
 */
export function normalizeEmailDomain(domain: string): string {
  const typed = normalizeEmail(domain).replace(/^@/, '');
  const ascii = domainToASCII(typed);
  return ascii ? domainToUnicode(ascii) : typed;
}

export interface CompanyView {
  id: string;
  name: string;
  planId: string;
  createdAt: Date;
}

export interface UserView {
  id: string;
  email: string;
  name: string | null;
  role: Role;
  status: UserStatus;
  createdAt: Date;
  lastLoginAt: Date | null;
  mfaEnabled: boolean;
  /** When a requested deletion of the account runs; null when none is scheduled. */
  deletionScheduledFor: Date | null;
  company: CompanyView;
}

export interface ApiKeyView {
  id: string;
  name: string;
  prefix: string;
  createdAt: Date;
}

/** What `me` answers: the caller, whether a user or a company API key. */
export interface Viewer {
  role: Role;
  authMethod: 'session' | 'api_key';
  company: CompanyView;
  user: UserView | null;
  apiKey: ApiKeyView | null;
}

interface ViewerRow {
  id: string;
  name: string | null;
  email: string | null;
  role: Role | null;
  status: UserStatus | null;
  prefix: string | null;
  created_at: number;
  last_login_at: number | null;
  mfa_enabled?: number | null;
  deletion_scheduled_for?: number | null;
  company_id: string;
  company_name: string;
  plan_id: string;
  company_created_at: number;
}

const VIEWER_COLUMNS = 'c.id as company_id, c.name as company_name, c.plan_id, c.created_at as company_created_at';

export class IdentityService {
  /** Built viewers by user or key id, until the next write to the database. */
  private readonly viewers: VersionedCache<Viewer | null>;
  /** Each company's plan id, until the next write to the database. */
  private readonly planIds: VersionedCache<string | null>;

  constructor(
    private readonly orm: Orm,
    private readonly reads: ReadStore,
    changes: ChangeSignal,
    private readonly config: IdentitySettings,
    private readonly audit: AuditService,
    private readonly billing: { ledger: LedgerService; plans: PlanService },
  ) {
    this.viewers = new VersionedCache(changes);
    this.planIds = new VersionedCache(changes);
  }

  /** The plan a company is on (null: no such company); from memory while the database is unchanged. */
  planIdOf(companyId: string): string | null {
    return this.planIds.get(companyId, () => this.reads.get<{ plan_id: string }>('select plan_id from companies where id = ?', companyId)?.plan_id ?? null);
  }

  /**
   * Creates a company and its first owner (CLI and first-start bootstrap).
   * A name another company already has (trimmed, case-insensitive) is a
   * 409 conflict naming that company's id, unless `allowDuplicateName`: two
   * companies called Acme are rarely meant, and make the name useless for
   * finding either (create-api-key --company).
   */
  async createCompanyWithOwner(input: {
    email: string;
    password: string;
    company: string;
    superadmin?: boolean;
    allowDuplicateName?: boolean;
  }): Promise<{ company: Company; user: User }> {
    const email = normalizeEmail(input.email);
    const issues: ValidationIssue[] = [];
    if (!EMAIL.test(email)) issues.push({ loc: ['email'], msg: 'not a valid email address', type: 'value_error.email' });
    if (textLength(input.password) < MIN_PASSWORD_LENGTH) {
      issues.push({ loc: ['password'], msg: `must be at least ${MIN_PASSWORD_LENGTH} characters`, type: 'string_too_short' });
    } else if (textLength(input.password) > MAX_PASSWORD_LENGTH) {
      // As every body that takes a password: a longer one could never sign in.
      issues.push({ loc: ['password'], msg: `must be at most ${MAX_PASSWORD_LENGTH} characters`, type: 'string_too_long' });
    }
    if (!input.company.trim()) {
      issues.push({ loc: ['company'], msg: 'must not be empty', type: 'string_too_short' });
    } else if (textLength(input.company.trim()) > DISPLAY_NAME_MAX) {
      // The admin API's limit for a company name: every answer and page shows it.
      issues.push({ loc: ['company'], msg: `must be 1 to ${DISPLAY_NAME_MAX} characters`, type: 'string_length' });
    }
    const hidden = hiddenCharacterIssue(input.company.trim(), ['company']);
    if (hidden) issues.push(hidden);
    if (issues.length) throw AppError.validation(issues);

    if (await currentEm(this.orm).count(User, { email })) throw new AppError('conflict', 'A user with this email already exists');
    const name = input.company.trim();
    if (!input.allowDuplicateName) await this.refuseTakenName(name);
    const passwordHash = await hashPassword(input.password, this.config.scryptCost);
    // The company, its owner, its audit entry and its credit account with the first month's credits commit together.
    return transaction(this.orm, async (em) => {
      // Again inside the write: another process may have taken the name while the password was hashed.
      if (!input.allowDuplicateName) await this.refuseTakenName(name);
      const company = em.create(Company, { name });
      const user = em.create(User, { company, email, passwordHash, role: 'owner', isSuperadmin: input.superadmin ?? false });
      await this.audit.record({
        action: 'company.created',
        companyId: company.id,
        actor: { actorType: 'system', actorId: null, actorLabel: 'cli' },
        targetType: 'user',
        targetId: user.id,
        data: { owner: email, superadmin: user.isSuperadmin },
      });
      await this.billing.ledger.openAccount(company.id, this.billing.plans.plan(company.planId)?.monthlyCredits ?? 0);
      return { company, user };
    });
  }

  /** The active owners of a company, for mail about its account (billing). */
  async ownersOf(companyId: string): Promise<{ email: string; name: string | null }[]> {
    const owners = await currentEm(this.orm).find(User, { company: companyId, role: 'owner', status: 'active' }, { orderBy: { createdAt: 'asc' } });
    return owners.map((u) => ({ email: u.email, name: u.name }));
  }

  /** Every company with its plan, oldest first (the monthly allocation). */
  async companyPlans(): Promise<{ id: string; name: string; planId: string; createdAt: Date }[]> {
    const companies = await currentEm(this.orm).find(Company, {}, { orderBy: { createdAt: 'asc', id: 'asc' } });
    return companies.map((c) => ({ id: c.id, name: c.name, planId: c.planId, createdAt: c.createdAt }));
  }

  /**
   * Puts a company on a plan (billing decides when: a subscription change,
   * an on-premise plan change). Joins the caller's transaction. Null when
   * there is no such company.
   */
  async setPlan(companyId: string, planId: string): Promise<{ from: string; to: string } | null> {
    const em = currentEm(this.orm);
    const company = await em.findOne(Company, { id: companyId });
    if (!company) return null;
    const from = company.planId;
    company.planId = planId;
    await em.flush();
    return { from, to: planId };
  }

  async userCount(): Promise<number> {
    return currentEm(this.orm).count(User, {});
  }

  /**
   * The companies called `name`, trimmed and case-insensitively, oldest
   * first. Names are unique unless an operator allowed a duplicate, so this
   * may find more than one.
   */
  async findCompaniesByName(name: string): Promise<Company[]> {
    const wanted = name.trim();
    if (!wanted) return [];
    // Names are stored trimmed; their folded keys are equal when the names differ only in case.
    return currentEm(this.orm).find(Company, { nameKey: searchKey(wanted) }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  }

  private async refuseTakenName(name: string): Promise<void> {
    const taken = await this.findCompaniesByName(name);
    if (!taken.length) return;
    throw new AppError('conflict', `A company named "${taken[0]!.name}" already exists (id ${taken.map((c) => c.id).join(', ')})`, {
      extra: { duplicate_of: taken.map((c) => c.id) },
    });
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

  /** On every profile read: one prepared statement, cached until the next write; synchronous. */
  viewer(principal: Principal): Viewer {
    const caller = requireAuthenticated(principal);
    if (caller.kind === 'user') {
      const viewer = this.viewers.get(`u:${caller.userId}`, () => this.loadUserViewer(caller.userId));
      if (!viewer) throw new AppError('token_invalid', 'The user of this token no longer exists');
      return viewer;
    }
    const viewer = this.viewers.get(`k:${caller.keyId}`, () => this.loadKeyViewer(caller.keyId));
    if (!viewer) throw new AppError('token_invalid', 'The API key no longer exists');
    return viewer;
  }

  private loadUserViewer(userId: string): Viewer | null {
    const row = this.reads.get<ViewerRow>(
      `select u.id, u.email, u.name, u.role, u.status, u.created_at, u.last_login_at, u.mfa_enabled, u.deletion_scheduled_for, ${VIEWER_COLUMNS}
       from users u join companies c on c.id = u.company_id where u.id = ?`,
      userId,
    );
    if (!row) return null;
    const company = companyView(row);
    const user: UserView = {
      id: row.id,
      email: row.email!,
      name: row.name,
      role: row.role!,
      status: row.status!,
      createdAt: new Date(row.created_at),
      lastLoginAt: toDate(row.last_login_at),
      mfaEnabled: !!row.mfa_enabled,
      deletionScheduledFor: toDate(row.deletion_scheduled_for ?? null),
      company,
    };
    return { role: user.role, authMethod: 'session', company, user, apiKey: null };
  }

  private loadKeyViewer(keyId: string): Viewer | null {
    const row = this.reads.get<ViewerRow>(
      `select k.id, k.name, k.prefix, k.created_at, ${VIEWER_COLUMNS}
       from api_keys k join companies c on c.id = k.company_id where k.id = ? and k.revoked_at is null`,
      keyId,
    );
    if (!row) return null;
    const apiKey: ApiKeyView = { id: row.id, name: row.name!, prefix: row.prefix!, createdAt: new Date(row.created_at) };
    return { role: 'admin', authMethod: 'api_key', company: companyView(row), user: null, apiKey };
  }
}

function companyView(row: ViewerRow): CompanyView {
  return { id: row.company_id, name: row.company_name, planId: row.plan_id, createdAt: new Date(row.company_created_at) };
}
