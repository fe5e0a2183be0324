import type { UserDeletionHooks } from './user-deletion';
import type { EntityManager } from '@mikro-orm/better-sqlite';
import type { FilterQuery } from '@mikro-orm/core';
import type { SqlDialect } from '../../db/dialect';
import type { Orm } from '../../db/orm';
import { searchKey } from '../../search-key';
import type { EventBus } from '../../events/event-bus';
import { AppError, type ValidationIssue } from '../../errors/catalog';
import { hiddenCharacterIssue } from '../../errors/display-name';
import { textLength } from '../../errors/text-length';
import { requireAuthenticated, requireCompanyAdmin } from '../../auth/policy';
import type { ApiKeyPrincipal, Principal, RequestMeta, UserPrincipal } from '../../auth/principal';
import { currentEm, transaction, whenCommitted } from '../../db/unit-of-work';
import { checkPage } from '../../pagination';
import type { Mailer } from '../../mail/mailer';
import { mfaDisabledByAdmin } from './mail';
import type { AuditService } from '../audit';
import type { Page } from '../../pagination';
import { ApiKey } from './api-key.entity';
import { User, roles, userStatuses, type Role, type UserStatus } from './user.entity';
import type { SessionService, SessionView } from './session.service';
import type { PasswordResetService } from './password-reset.service';
import type { MfaService } from './mfa.service';
import type { LoginThrottleService } from './login-throttle.service';
import type { CompanyAdminService } from './company-admin.service';
import type { UsageByModel, UsageService } from '../billing';

/**
 * Administration of a company's users (GET/PATCH/DELETE /admin/users/…, the
 * suspend, unsuspend, reset-password, force-logout, disable-mfa, sessions and
 * usage actions; GraphQL `adminUsers`, `adminUser`, `updateAdminUser`, …).
 *
 * Who may:
 * - owners and admins of the company; a company API key counts as an admin;
 *   a member is refused (403 forbidden) before anything is looked up;
 * - a platform superadmin (users.is_superadmin) in any company, with the
 *   rights of an owner; everyone else only in their own company: a user of
 *   another company (or an unknown id) answers 404 not_found, never data.
 *
 * Role rules (each refused before anything changes):
 * 1. An admin (or API key) cannot change, suspend, delete, log out, reset the
 *    password of or disable MFA of an owner: 403 forbidden.
 * 2. Nobody removes (delete), suspends or demotes the last active owner of a
 *    company: 409 conflict. Checked and written in one transaction, and the
 *    owner leaving is first marked as such in it, so two concurrent requests
 *    cannot both take away "the other" owner.
 * 3. Nobody deletes or suspends themselves (DELETE, suspend, PATCH status
 *    suspended): 403 forbidden. (Leaving is self-service account deletion.)
 * 4. Only an owner (or a superadmin) grants the owner role: 403 forbidden.
 *
 * Effects: every mutation is audited (user.updated with the changed fields,
 * user.deleted, user.suspended with the reason, user.unsuspended,
 * user.password_reset_sent, user.force_logout, user.mfa_disabled_by_admin) in
 * the target's company, and publishes `user.changed` when the user changed, so
 * cached credentials and sockets react. Sessions end through the session
 * service (each publishes `session.revoked`). Deleting a user also revokes the
 * API keys the user created (`revoked_at` set, `api_key.revoked` published):
 * the spec says "sessions and keys of that user end at once". The audit trail
 * keeps the history (audit rows are never deleted; usage rows keep the id).
 */

export const ADMIN_USER_SORTS = ['created_at', 'email', 'name', 'role', 'status', 'last_login_at'] as const;
export type AdminUserSort = (typeof ADMIN_USER_SORTS)[number];
export const ADMIN_USERS_PER_PAGE = 20;
export const SUSPEND_REASON_MAX = 500;
export const MAX_NAME_LENGTH = 200;
export const USAGE_DAYS_DEFAULT = 30;
export const USAGE_DAYS_MAX = 365;

/** What each sort orders by (then the id); a name case-insensitively, by its folded key first. */
const SORT_PROPERTIES: Record<AdminUserSort, (keyof User)[]> = {
  created_at: ['createdAt'],
  email: ['email'],
  name: ['nameKey', 'name'],
  role: ['role'],
  status: ['status'],
  last_login_at: ['lastLoginAt'],
};

export interface AdminUserListOptions {
  q?: string | null;
  role?: string | null;
  status?: string | null;
  /** A sort key, `-` prefixed for descending; default created_at. */
  sort?: string | null;
  page: number;
  perPage: number;
  /** Superadmins only (others: their own company or 404); without it a superadmin sees every company. */
  companyId?: string | null;
}

export interface AdminUserPatch {
  name?: string | null;
  role?: string;
  status?: string;
}

export interface PasswordResetSent {
  userId: string;
  expiresAt: Date;
}

export interface ForceLogoutResult {
  userId: string;
  revokedSessions: number;
}

export interface UserUsage {
  userId: string;
  days: number;
  since: Date;
  items: UsageByModel[];
  totals: { credits: number; tokens: number; requests: number };
}

type Admin = UserPrincipal | ApiKeyPrincipal;

interface Acting {
  principal: Admin;
  superadmin: boolean;
  /** The caller's user id; null for an API key. */
  userId: string | null;
}

/** Who may administer users: a superadmin anywhere, else an owner or admin (API key) of the company. */
function requireUserAdmin(principal: Principal): Acting {
  const p = requireAuthenticated(principal);
  const superadmin = p.kind === 'user' && p.isSuperadmin;
  const admin = superadmin ? p : requireCompanyAdmin(p);
  return { principal: admin, superadmin, userId: admin.kind === 'user' ? admin.userId : null };
}

/** Owner-level rights in the target's company: its owner, or a superadmin. */
function actsAsOwner(actor: Acting, target: User): boolean {
  if (actor.superadmin) return true;
  return actor.principal.kind === 'user' && actor.principal.role === 'owner' && actor.principal.companyId === target.company.id;
}

function notFound(): AppError {
  return new AppError('not_found', 'No user with this id in your company');
}

export class UserAdminService {
  constructor(
    private readonly orm: Orm,
    private readonly dialect: SqlDialect,
    private readonly bus: EventBus,
    private readonly audit: AuditService,
    private readonly sessions: SessionService,
    private readonly passwordReset: PasswordResetService,
    private readonly mfa: MfaService,
    private readonly loginThrottle: LoginThrottleService,
    private readonly mailer: Mailer,
    private readonly usage: UsageService,
    private readonly companies: CompanyAdminService,
    private readonly deletionHooks: UserDeletionHooks,
  ) {}

  /** The users of the caller's company (a superadmin: of every company, or of `companyId`). */
  async list(principal: Principal, options: AdminUserListOptions): Promise<Page<User>> {
    const actor = requireUserAdmin(principal);
    const { page, perPage } = checkPage(options.page, options.perPage);
    const issues: ValidationIssue[] = [];
    if (options.role != null && !(roles as readonly string[]).includes(options.role)) {
      issues.push({ loc: ['query', 'role'], msg: `must be one of ${roles.join(', ')}`, type: 'enum' });
    }
    if (options.status != null && !(userStatuses as readonly string[]).includes(options.status)) {
      issues.push({ loc: ['query', 'status'], msg: `must be one of ${userStatuses.join(', ')}`, type: 'enum' });
    }
    const sort = parseSort(options.sort, issues);
    const q = options.q?.trim() ?? '';
    if (textLength(q) > 320) issues.push({ loc: ['query', 'q'], msg: 'must be at most 320 characters', type: 'string_too_long' });
    if (issues.length) throw AppError.validation(issues);

    let companyId: string | null = actor.principal.companyId;
    if (actor.superadmin) companyId = options.companyId ? await this.companies.existingCompanyId(options.companyId) : null;
    else if (options.companyId != null && options.companyId !== actor.principal.companyId) {
      throw new AppError('not_found', 'No such company');
    }

    const where: FilterQuery<User>[] = [];
    if (companyId) where.push({ company: companyId });
    if (options.role) where.push({ role: options.role as Role });
    if (options.status) where.push({ status: options.status as UserStatus });
    if (q) {
      // A literal substring (% and _ are plain characters) of the folded keys: case-insensitive beyond ASCII.
      const key = searchKey(q);
      where.push({ $or: [this.dialect.contains<User>('email_key', key), this.dialect.contains<User>('name_key', key)] });
    }
    const [items, total] = await currentEm(this.orm).findAndCount(
      User,
      { $and: where },
      {
        orderBy: [...SORT_PROPERTIES[sort.key].map((property) => ({ [property]: sort.direction })), { id: sort.direction }],
        limit: perPage,
        offset: (page - 1) * perPage,
      },
    );
    return { items, page, perPage, total };
  }

  async get(principal: Principal, userId: string): Promise<User> {
    const actor = requireUserAdmin(principal);
    return this.target(currentEm(this.orm), actor, userId);
  }

  /** Changes name, role and status (rules 1 to 4); only what differs is written and audited. */
  async update(principal: Principal, userId: string, patch: AdminUserPatch, meta: RequestMeta): Promise<User> {
    const actor = requireUserAdmin(principal);
    // An empty patch is a client's mistake, not a change: refused on every transport alike.
    if (patch.name === undefined && patch.role === undefined && patch.status === undefined) {
      throw AppError.validation([{ loc: ['body'], msg: 'must NOT have fewer than 1 properties', type: 'minProperties' }]);
    }
    const issues: ValidationIssue[] = [];
    let name: string | null | undefined;
    if (patch.name !== undefined) {
      name = patch.name === null ? null : patch.name.trim();
      if (name !== null && (!name || textLength(name) > MAX_NAME_LENGTH)) {
        issues.push({ loc: ['body', 'name'], msg: `must be 1 to ${MAX_NAME_LENGTH} characters once trimmed, or null`, type: 'string_length' });
      } else if (name !== null) {
        const hidden = hiddenCharacterIssue(name, ['body', 'name']);
        if (hidden) issues.push(hidden);
      }
    }
    if (patch.role !== undefined && !(roles as readonly string[]).includes(patch.role)) {
      issues.push({ loc: ['body', 'role'], msg: `must be one of ${roles.join(', ')}`, type: 'enum' });
    }
    if (patch.status !== undefined && !(userStatuses as readonly string[]).includes(patch.status)) {
      issues.push({ loc: ['body', 'status'], msg: `must be one of ${userStatuses.join(', ')}`, type: 'enum' });
    }
    if (issues.length) throw AppError.validation(issues);
    const em = currentEm(this.orm);
    const target = await this.target(em, actor, userId);
    const role = patch.role as Role | undefined;
    const status = patch.status as UserStatus | undefined;
    const changes: Record<string, { from: unknown; to: unknown }> = {};
    if (name !== undefined && name !== target.name) changes.name = { from: target.name, to: name };
    if (role !== undefined && role !== target.role) changes.role = { from: target.role, to: role };
    if (status !== undefined && status !== target.status) changes.status = { from: target.status, to: status };
    if (!Object.keys(changes).length) return target;

    this.checkMayChange(actor, target);
    if (changes.role && role === 'owner' && !actsAsOwner(actor, target)) {
      throw new AppError('forbidden', 'Only an owner grants the owner role');
    }
    if (changes.status && status === 'suspended') this.checkNotSelf(actor, target, 'suspend');
    const removesOwner = target.role === 'owner' && (!!changes.role || status === 'suspended');
    const now = new Date();
    await transaction(this.orm, async (tx) => {
      if (removesOwner) await this.checkNotLastOwner(tx, target);
      await tx.nativeUpdate(
        User,
        { id: target.id },
        {
          // A native update runs no onUpdate: the search key is written here.
          ...(changes.name ? { name: name ?? null, nameKey: name == null ? null : searchKey(name) } : {}),
          ...(changes.role ? { role } : {}),
          ...(changes.status ? { status } : {}),
          updatedAt: now,
        },
      );
      let revokedSessions = 0;
      if (changes.status && status === 'suspended') {
        revokedSessions = (await this.sessions.revokeAllOfUser(target.id, 'user_suspended')).length;
      }
      whenCommitted(this.orm, () => this.bus.publish('user.changed', { userId: target.id, access: !!(changes.role || changes.status) }));
      await this.audit.record({
        action: 'user.updated',
        companyId: target.company.id,
        principal: actor.principal,
        meta,
        targetType: 'user',
        targetId: target.id,
        data: { fields: Object.keys(changes), changes, ...(changes.status?.to === 'suspended' ? { revokedSessions } : {}) },
      });
    });
    // The throttle keeps its own rows, outside the transaction (see LoginThrottleService).
    if (changes.status && status === 'active') await this.loginThrottle.reset(target.email);
    return this.reload(em, target.id);
  }

  /**
   * Deletes the user in one transaction with the last-owner check and the
   * audit entry: every session ends (session.revoked), the API keys the user
   * created are revoked (api_key.revoked), and the row goes (its sessions,
   * refresh tokens, recovery codes and identities with it).
   */
  async delete(principal: Principal, userId: string, meta: RequestMeta): Promise<void> {
    const actor = requireUserAdmin(principal);
    const em = currentEm(this.orm);
    const target = await this.target(em, actor, userId);
    this.checkMayChange(actor, target);
    this.checkNotSelf(actor, target, 'delete');
    await transaction(this.orm, async (tx) => {
      if (target.role === 'owner') await this.checkNotLastOwner(tx, target);
      const sessions = await this.sessions.revokeAllOfUser(target.id, 'user_deleted');
      const keys = await this.revokeKeysOf(tx, target.id);
      // Read before the cascade removes them: the user's jobs, to tell their subscribers they ended.
      const announce = await this.deletionHooks.run({ userId: target.id, companyId: target.company.id });
      await tx.nativeDelete(User, { id: target.id });
      whenCommitted(this.orm, () => this.bus.publish('user.changed', { userId: target.id, access: true }));
      whenCommitted(this.orm, announce);
      await this.audit.record({
        action: 'user.deleted',
        companyId: target.company.id,
        principal: actor.principal,
        meta,
        targetType: 'user',
        targetId: target.id,
        data: { email: target.email, role: target.role, revokedSessions: sessions.length, revokedApiKeys: keys },
      });
    });
    em.clear();
  }

  /** Suspends the user: sign-in is refused and every session ends at once. */
  async suspend(principal: Principal, userId: string, reason: string, meta: RequestMeta): Promise<User> {
    const actor = requireUserAdmin(principal);
    const trimmed = (reason ?? '').trim();
    if (!trimmed || textLength(trimmed) > SUSPEND_REASON_MAX) {
      throw AppError.validation([
        { loc: ['body', 'reason'], msg: `must be 1 to ${SUSPEND_REASON_MAX} characters once trimmed`, type: 'string_length' },
      ]);
    }
    const em = currentEm(this.orm);
    const target = await this.target(em, actor, userId);
    this.checkMayChange(actor, target);
    this.checkNotSelf(actor, target, 'suspend');
    const wasSuspended = target.status === 'suspended';
    await transaction(this.orm, async (tx) => {
      if (target.role === 'owner') await this.checkNotLastOwner(tx, target);
      await tx.nativeUpdate(User, { id: target.id }, { status: 'suspended', updatedAt: new Date() });
      const revoked = await this.sessions.revokeAllOfUser(target.id, 'user_suspended');
      whenCommitted(this.orm, () => this.bus.publish('user.changed', { userId: target.id, access: true }));
      await this.audit.record({
        action: 'user.suspended',
        companyId: target.company.id,
        principal: actor.principal,
        meta,
        targetType: 'user',
        targetId: target.id,
        data: { reason: trimmed, wasSuspended, revokedSessions: revoked.length },
      });
    });
    return this.reload(em, target.id);
  }

  /** Lets the user sign in again; the failed-login count of the address is cleared too. */
  async unsuspend(principal: Principal, userId: string, meta: RequestMeta): Promise<User> {
    const actor = requireUserAdmin(principal);
    const em = currentEm(this.orm);
    const target = await this.target(em, actor, userId);
    this.checkMayChange(actor, target);
    const wasSuspended = target.status === 'suspended';
    await transaction(this.orm, async (tx) => {
      if (wasSuspended) {
        await tx.nativeUpdate(User, { id: target.id }, { status: 'active', updatedAt: new Date() });
        whenCommitted(this.orm, () => this.bus.publish('user.changed', { userId: target.id, access: true }));
      }
      await this.audit.record({
        action: 'user.unsuspended',
        companyId: target.company.id,
        principal: actor.principal,
        meta,
        targetType: 'user',
        targetId: target.id,
        data: { wasSuspended },
      });
    });
    await this.loginThrottle.reset(target.email);
    return this.reload(em, target.id);
  }

  /** Mails the user a password reset link (as the public flow; earlier links stop working). */
  async resetPassword(principal: Principal, userId: string, meta: RequestMeta): Promise<PasswordResetSent> {
    const actor = requireUserAdmin(principal);
    const target = await this.target(currentEm(this.orm), actor, userId);
    this.checkMayChange(actor, target);
    if (target.status !== 'active') throw new AppError('conflict', 'The user is suspended; unsuspend them first');
    const receipt = await transaction(this.orm, async () => {
      const sent = await this.passwordReset.sendResetFor(target.id, meta);
      await this.audit.record({
        action: 'user.password_reset_sent',
        companyId: target.company.id,
        principal: actor.principal,
        meta,
        targetType: 'user',
        targetId: target.id,
        data: { mailId: sent.mailId, expiresAt: sent.expiresAt.toISOString() },
      });
      return sent;
    });
    return { userId: target.id, expiresAt: receipt.expiresAt };
  }

  /** Ends every session of the user at once (access tokens, refresh tokens, cookies, sockets). */
  async forceLogout(principal: Principal, userId: string, meta: RequestMeta): Promise<ForceLogoutResult> {
    const actor = requireUserAdmin(principal);
    const target = await this.target(currentEm(this.orm), actor, userId);
    this.checkMayChange(actor, target);
    return transaction(this.orm, async () => {
      const revoked = await this.sessions.revokeAllOfUser(target.id, 'forced_logout');
      await this.audit.record({
        action: 'user.force_logout',
        companyId: target.company.id,
        principal: actor.principal,
        meta,
        targetType: 'user',
        targetId: target.id,
        data: { revokedSessions: revoked.length },
      });
      return { userId: target.id, revokedSessions: revoked.length };
    });
  }

  /** Turns the user's MFA off (secret and recovery codes removed) and tells them by mail. */
  async disableMfa(principal: Principal, userId: string, meta: RequestMeta): Promise<User> {
    const actor = requireUserAdmin(principal);
    const em = currentEm(this.orm);
    const target = await this.target(em, actor, userId, true);
    this.checkMayChange(actor, target);
    if (!target.mfaEnabled && !target.mfaPendingSecret) throw new AppError('conflict', 'MFA is not enabled for this user');
    const wasEnabled = target.mfaEnabled;
    await transaction(this.orm, async () => {
      await this.mfa.removeFactor(target.id);
      whenCommitted(this.orm, () => this.bus.publish('user.changed', { userId: target.id, access: true }));
      const mail = await this.mailer.enqueue(
        target.email,
        mfaDisabledByAdmin({ name: target.name, companyName: target.company.name }),
        { meta: { userId: target.id, companyId: target.company.id, requestId: meta.requestId, purpose: 'mfa_disabled_by_admin' } },
      );
      await this.audit.record({
        action: 'user.mfa_disabled_by_admin',
        companyId: target.company.id,
        principal: actor.principal,
        meta,
        targetType: 'user',
        targetId: target.id,
        data: { wasEnabled, mailId: mail.id },
      });
    });
    return this.reload(em, target.id);
  }

  /** The user's active sessions, newest first. */
  async sessionsOf(principal: Principal, userId: string, options: { page: number; perPage: number }): Promise<Page<SessionView>> {
    const actor = requireUserAdmin(principal);
    const { page, perPage } = checkPage(options.page, options.perPage);
    const em = currentEm(this.orm);
    const target = await this.target(em, actor, userId);
    const current = actor.principal.kind === 'user' ? actor.principal.sessionId : null;
    return this.sessions.activeSessionsOfUser(target.id, target.company.id, current, { page, perPage });
  }

  /** The user's usage over the last `days` days, by model (most credits first), with totals. */
  async usageOf(principal: Principal, userId: string, days: number): Promise<UserUsage> {
    const actor = requireUserAdmin(principal);
    if (!Number.isInteger(days) || days < 1 || days > USAGE_DAYS_MAX) {
      throw AppError.validation([{ loc: ['query', 'days'], msg: `must be an integer from 1 to ${USAGE_DAYS_MAX}`, type: 'range' }]);
    }
    const em = currentEm(this.orm);
    const target = await this.target(em, actor, userId);
    const since = new Date(Date.now() - days * 86_400_000);
    const { items, totals } = await this.usage.ofUser(target.company.id, target.id, since);
    return { userId: target.id, days, since, items, totals };
  }

  /** Active sessions per user, as their session lists count them (the admin list's DataLoader). */
  activeSessionCounts(userIds: readonly string[]): Promise<number[]> {
    return this.sessions.activeSessionCounts(userIds);
  }

  /** The target user, if the caller may see them; 404 otherwise (another company's, or unknown). */
  private async target(em: EntityManager, actor: Acting, userId: string, withCompany = false): Promise<User> {
    const user = await em.findOne(User, { id: userId }, { refresh: true, ...(withCompany ? { populate: ['company'] as const } : {}) });
    if (!user || (!actor.superadmin && user.company.id !== actor.principal.companyId)) throw notFound();
    return user;
  }

  private async reload(em: EntityManager, userId: string): Promise<User> {
    const user = await em.findOne(User, { id: userId }, { refresh: true });
    if (!user) throw notFound();
    return user;
  }

  /** Rule 1: an admin (or API key) cannot act on an owner. */
  private checkMayChange(actor: Acting, target: User): void {
    if (target.role === 'owner' && !actsAsOwner(actor, target)) {
      throw new AppError('forbidden', 'An admin cannot change, suspend or delete an owner');
    }
  }

  /** Rule 3: nobody deletes or suspends themselves. */
  private checkNotSelf(actor: Acting, target: User, what: 'delete' | 'suspend'): void {
    if (actor.userId === target.id) throw new AppError('forbidden', `You cannot ${what} yourself`);
  }

  /** Rule 2: another active owner must remain. Call inside the transaction that writes. */
  private async checkNotLastOwner(tx: EntityManager, target: User): Promise<void> {
    const others = await tx.count(User, { company: target.company.id, role: 'owner', status: 'active', id: { $ne: target.id } });
    if (others === 0) throw new AppError('conflict', 'This is the last owner of the company; make another user owner first');
  }

  /** Revokes the API keys the user created and announces each; returns their ids. */
  private async revokeKeysOf(em: EntityManager, userId: string): Promise<string[]> {
    const rows: { id: string; key_hash: string }[] = await em
      .createQueryBuilder(ApiKey)
      .update({ revokedAt: new Date() })
      .where({ createdBy: userId, revokedAt: null })
      .returning(['id', 'key_hash'] as never)
      .execute('all', false);
    whenCommitted(this.orm, () => rows.forEach((row) => this.bus.publish('api_key.revoked', { keyId: row.id, keyHash: row.key_hash })));
    return rows.map((r) => r.id);
  }
}

function parseSort(value: string | null | undefined, issues: ValidationIssue[]): { key: AdminUserSort; direction: 'asc' | 'desc' } {
  const text = value ?? 'created_at';
  const descending = text.startsWith('-');
  const key = descending ? text.slice(1) : text;
  if (!(ADMIN_USER_SORTS as readonly string[]).includes(key)) {
    issues.push({
      loc: ['query', 'sort'],
      msg: `must be one of ${ADMIN_USER_SORTS.join(', ')}, optionally prefixed with - for descending`,
      type: 'enum',
    });
    return { key: 'created_at', direction: 'asc' };
  }
  return { key: key as AdminUserSort, direction: descending ? 'desc' : 'asc' };
}
