import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/better-sqlite';
import type { Orm } from '../../db/orm';
import type { IdentitySettings } from './config';
import { AppError, type ValidationIssue } from '../../errors/catalog';
import { DISPLAY_NAME_MAX, hiddenCharacterIssue } from '../../errors/display-name';
import { textLength } from '../../errors/text-length';
import { hashPassword, MAX_PASSWORD_LENGTH } from '../../auth/password';
import { requireCompanyAdmin } from '../../auth/policy';
import type { ApiKeyPrincipal, Principal, RequestMeta, UserPrincipal } from '../../auth/principal';
import { sha256Hex } from '../../auth/tokens';
import { checkPage } from '../../pagination';
import { currentEm, transaction } from '../../db/unit-of-work';
import { endMailLinks, type Mailer } from '../../mail/mailer';
import { invitation as invitationMail } from './mail';
import type { AuditService } from '../audit';
import type { Page } from '../../pagination';
import type { AuthService, LoginResult } from './auth.service';
import { MIN_PASSWORD_LENGTH, normalizeEmail } from './identity.service';
import type { SecurityPolicyEnforcer } from './security-policy.enforcer';
import { Invitation, invitationStatuses, type InvitationStatus } from './invitation.entity';
import { newOneTimeToken } from './one-time-tokens';
import { Company } from './company.entity';
import { roles, User, type Role } from './user.entity';

/** Where the mailed link points: the web app, which posts the token to /invitations/accept. */
export const ACCEPT_INVITATION_PATH = '/app/accept-invitation';
/** Rows one bulk request may carry. */
export const MAX_BULK_INVITATIONS = 100;
/** The mailer's own address rule, so an accepted address can always be mailed. */
const ADDRESS = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+\.[^\s@<>()[\]\\,;:"]+$/;

type Admin = UserPrincipal | ApiKeyPrincipal;

/** An invitation as callers see it: `status` is `expired` for a pending row past `expiresAt`. */
export interface InvitationView {
  id: string;
  companyId: string;
  email: string;
  role: Role;
  status: InvitationStatus;
  invitedById: string | null;
  createdAt: Date;
  expiresAt: Date;
  acceptedAt: Date | null;
}

export interface BulkInvitationOutcome {
  email: string;
  status: 'created' | 'failed';
  invitation: InvitationView | null;
  error: { code: string; detail: string } | null;
}

export interface BulkInvitationResult {
  results: BulkInvitationOutcome[];
  created: number;
  failed: number;
}

/** The mails carrying an invitation's link (`secretRef` of the mail). */
const invitationMailRef = (invitationId: string): string => `invitation:${invitationId}`;

/** The invitation's link stopped working (accepted, revoked, replaced by a resend): so do the mails that carried it. */
export function endInvitationLinks(em: EntityManager, invitationId: string): Promise<number> {
  return endMailLinks(em, invitationMailRef(invitationId));
}

/**
 * Invitations to join a company (table `invitations`, shared with single
 * sign-on, which accepts pending ones on a first provider sign-in).
 *
 * - Owners and admins of the company and its API keys manage them; a member
 *   gets 403. Only an owner (or a superadmin) may invite, or re-send an
 *   invitation, with role owner. A superadmin may resend and revoke any
 *   company's invitation by id; another company's id is 404 for everyone else.
 *   Create, bulk and list act on the caller's own company.
 * - An address that belongs to a user of the company is `409 email_taken`; an
 *   address with a pending, unexpired invitation in the company is `409
 *   conflict` (resend it instead). A user of another company is invited like
 *   anyone (its acceptance answers email_taken to the invitee): answering
 *   otherwise would tell any company's admins which addresses have an account
 *   elsewhere on the server. Each invitation mails a single-use link
 *   `PUBLIC_URL/app/accept-invitation?token=…`; only the SHA-256 of the token
 *   is stored. It expires after `INVITATION_TTL_DAYS`.
 * - Resend (pending or expired ones) issues a new token and expiry; the old
 *   link stops working. Revoke works on pending ones only.
 * - Accept (public; the token is the proof) creates the user in the
 *   invitation's company with its role and a password, and signs them in.
 * - Audited: invitation.created, invitation.resent, invitation.revoked,
 *   invitation.accepted (and user.created_via_invitation).
 */
export class InvitationService {
  constructor(
    private readonly orm: Orm,
    private readonly config: IdentitySettings,
    private readonly audit: AuditService,
    private readonly mailer: Mailer,
    private readonly auth: AuthService,
    private readonly securityPolicy: SecurityPolicyEnforcer,
  ) {}

  /** Invites one address into the caller's company; mails the link. */
  async invite(principal: Principal, input: { email: string; role: string }, meta: RequestMeta, via?: string): Promise<InvitationView> {
    const caller = requireCompanyAdmin(principal);
    const { email, role } = checkInvitationInput(input, ['body']);
    return this.create(caller, principal, email, role, meta, via);
  }

  /**
   * Invites up to MAX_BULK_INVITATIONS addresses; each row succeeds or fails
   * on its own (its own transaction), in the order given.
   */
  async inviteBulk(principal: Principal, rows: { email: string; role: string }[], meta: RequestMeta): Promise<BulkInvitationResult> {
    const caller = requireCompanyAdmin(principal);
    if (rows.length < 1 || rows.length > MAX_BULK_INVITATIONS) {
      throw AppError.validation([
        { loc: ['body', 'invitations'], msg: `must hold 1 to ${MAX_BULK_INVITATIONS} invitations`, type: 'array_length' },
      ]);
    }
    const results: BulkInvitationOutcome[] = [];
    for (const [index, row] of rows.entries()) {
      try {
        const { email, role } = checkInvitationInput(row, ['body', 'invitations', index]);
        const invitation = await this.create(caller, principal, email, role, meta, 'bulk');
        results.push({ email: invitation.email, status: 'created', invitation, error: null });
      } catch (error) {
        if (!(error instanceof AppError) || error.status >= 500) throw error;
        const issues = (error.extra.errors as ValidationIssue[] | undefined) ?? [];
        const detail = issues.length ? issues.map((i) => `${i.loc.at(-1)}: ${i.msg}`).join('; ') : error.message;
        results.push({ email: String(row.email ?? ''), status: 'failed', invitation: null, error: { code: error.code, detail } });
      }
    }
    const created = results.filter((r) => r.status === 'created').length;
    return { results, created, failed: results.length - created };
  }

  /** The caller's company's invitations, newest first, optionally by (effective) status. */
  async list(principal: Principal, options: { status?: string | null; page: number; perPage: number }): Promise<Page<InvitationView>> {
    const caller = requireCompanyAdmin(principal);
    const { page, perPage } = checkPage(options.page, options.perPage);
    const now = new Date();
    let where: Record<string, unknown> = { company: caller.companyId };
    if (options.status != null) {
      if (!(invitationStatuses as readonly string[]).includes(options.status)) {
        throw AppError.validation([
          { loc: ['query', 'status'], msg: `must be one of ${invitationStatuses.join(', ')}`, type: 'enum' },
        ]);
      }
      const status = options.status as InvitationStatus;
      if (status === 'pending') where = { ...where, status: 'pending', expiresAt: { $gt: now } };
      else if (status === 'expired') where = { ...where, $or: [{ status: 'expired' }, { status: 'pending', expiresAt: { $lte: now } }] };
      else where = { ...where, status };
    }
    const [rows, total] = await currentEm(this.orm).findAndCount(Invitation, where, {
      orderBy: { createdAt: 'desc', id: 'desc' },
      limit: perPage,
      offset: (page - 1) * perPage,
    });
    return { items: rows.map((row) => view(row, now)), page, perPage, total };
  }

  /** A new link (and expiry) for a pending or expired invitation; the previous link stops working. */
  async resend(principal: Principal, invitationId: string, meta: RequestMeta): Promise<InvitationView> {
    const caller = requireCompanyAdmin(principal);
    const em = currentEm(this.orm);
    const invitation = await this.findVisible(em, caller, invitationId);
    const now = new Date();
    const status = effectiveStatus(invitation, now);
    if (status !== 'pending' && status !== 'expired') {
      throw new AppError('conflict', `This invitation is ${status}; only pending or expired invitations can be resent`);
    }
    assertMayGrant(caller, invitation.role);
    if (await em.count(User, { email: invitation.email, company: invitation.company.id })) {
      throw new AppError('email_taken', 'A user of this company has this email address already');
    }
    return transaction(this.orm, async (tx) => {
      await expireLapsed(tx, invitation.company.id, invitation.email, now);
      if (status === 'expired' && (await tx.count(Invitation, {
        company: invitation.company.id, email: invitation.email, status: 'pending', id: { $ne: invitation.id },
      }))) {
        throw new AppError('conflict', 'A newer pending invitation exists for this email address; resend that one');
      }
      const token = newOneTimeToken();
      const expiresAt = this.expiry(now);
      // Conditional on the state read: a concurrent accept or revoke wins, and this resend fails.
      const updated = await tx
        .nativeUpdate(
          Invitation,
          { id: invitation.id, status: { $in: ['pending', 'expired'] }, tokenHash: invitation.tokenHash },
          { tokenHash: sha256Hex(token), status: 'pending', expiresAt },
        )
        .catch(pendingTaken);
      if (updated !== 1) throw new AppError('conflict', 'This invitation changed meanwhile; reload and try again');
      await endInvitationLinks(tx, invitation.id);
      const fresh = await tx.findOneOrFail(Invitation, { id: invitation.id }, { refresh: true });
      await this.mail(tx, fresh, caller, token);
      await this.audit.record({
        action: 'invitation.resent',
        companyId: fresh.company.id,
        principal,
        meta,
        targetType: 'invitation',
        targetId: fresh.id,
        data: { email: fresh.email, role: fresh.role, expiresAt: expiresAt.toISOString(), previousStatus: status },
      });
      return view(fresh, new Date());
    });
  }

  /** Revokes a pending invitation: its link stops working. */
  async revoke(principal: Principal, invitationId: string, meta: RequestMeta): Promise<InvitationView> {
    const caller = requireCompanyAdmin(principal);
    const em = currentEm(this.orm);
    const invitation = await this.findVisible(em, caller, invitationId);
    const now = new Date();
    const status = effectiveStatus(invitation, now);
    if (status !== 'pending') {
      throw new AppError('conflict', `This invitation is ${status}; only pending invitations can be revoked`);
    }
    return transaction(this.orm, async (tx) => {
      const updated = await tx.nativeUpdate(
        Invitation,
        { id: invitation.id, status: 'pending', expiresAt: { $gt: now } },
        { status: 'revoked' },
      );
      if (updated !== 1) throw new AppError('conflict', 'This invitation was accepted or expired meanwhile');
      await endInvitationLinks(tx, invitation.id);
      const fresh = await tx.findOneOrFail(Invitation, { id: invitation.id }, { refresh: true });
      await this.audit.record({
        action: 'invitation.revoked',
        companyId: fresh.company.id,
        principal,
        meta,
        targetType: 'invitation',
        targetId: fresh.id,
        data: { email: fresh.email, role: fresh.role },
      });
      return view(fresh, now);
    });
  }

  /**
   * Public: creates the invited user with a password and signs them in. A
   * bad, used, revoked or expired token is `400 invitation_invalid`.
   */
  async accept(input: { token: string; password: string; name?: string | null }, meta: RequestMeta): Promise<LoginResult> {
    const issues: ValidationIssue[] = [];
    const passwordLength = textLength(input.password);
    if (passwordLength < MIN_PASSWORD_LENGTH) {
      issues.push({ loc: ['body', 'password'], msg: `must be at least ${MIN_PASSWORD_LENGTH} characters`, type: 'string_too_short' });
    } else if (passwordLength > MAX_PASSWORD_LENGTH) {
      issues.push({ loc: ['body', 'password'], msg: `must be at most ${MAX_PASSWORD_LENGTH} characters`, type: 'string_too_long' });
    }
    const name = input.name == null ? null : input.name.trim();
    if (name !== null && (!name || textLength(name) > DISPLAY_NAME_MAX)) {
      issues.push({ loc: ['body', 'name'], msg: `must be 1 to ${DISPLAY_NAME_MAX} characters`, type: 'string_length' });
    } else if (name !== null) {
      const hidden = hiddenCharacterIssue(name, ['body', 'name']);
      if (hidden) issues.push(hidden);
    }
    if (issues.length) throw AppError.validation(issues);

    const em = currentEm(this.orm);
    const invalid = () => new AppError('invitation_invalid', 'This invitation link is invalid, was already used, was revoked or has expired');
    if (!input.token) throw invalid();
    const tokenHash = sha256Hex(input.token);
    const invitation = await em.findOne(Invitation, { tokenHash }, { refresh: true });
    if (!invitation || effectiveStatus(invitation, new Date()) !== 'pending') throw invalid();
    // The inviting company's allow-list holds before anything is claimed; its policy may ask for longer passwords than the global minimum.
    await this.securityPolicy.checkIp(invitation.company.id, meta.ip);
    await this.securityPolicy.checkPasswordLength(invitation.company.id, input.password, ['body', 'password']);
    if (await em.count(User, { email: invitation.email })) {
      throw new AppError('email_taken', 'A user with this email address exists already; sign in instead');
    }

    const passwordHash = await hashPassword(input.password, this.config.scryptCost);
    const now = new Date();
    const userId = await transaction(this.orm, async (tx) => {
      // Claim the invitation first: of two concurrent accepts (or an SSO sign-up), one wins.
      const claimed = await tx.nativeUpdate(
        Invitation,
        { id: invitation.id, tokenHash, status: 'pending', expiresAt: { $gt: now } },
        { status: 'accepted', acceptedAt: now },
      );
      if (claimed !== 1) throw invalid();
      await endInvitationLinks(tx, invitation.id);
      if (await tx.count(User, { email: invitation.email })) {
        throw new AppError('email_taken', 'A user with this email address exists already; sign in instead');
      }
      const user = tx.create(User, {
        company: tx.getReference(Company, invitation.company.id),
        email: invitation.email,
        name,
        passwordHash,
        role: invitation.role,
      });
      await tx.flush();
      const companyId = invitation.company.id;
      const actor = { actorType: 'user' as const, actorId: user.id, actorLabel: invitation.email };
      await this.audit.record({
        action: 'user.created_via_invitation',
        companyId,
        actor,
        meta,
        targetType: 'user',
        targetId: user.id,
        data: { role: invitation.role, invitationId: invitation.id },
      });
      await this.audit.record({
        action: 'invitation.accepted',
        companyId,
        actor,
        meta,
        targetType: 'invitation',
        targetId: invitation.id,
        data: { email: invitation.email, role: invitation.role, via: 'password', userId: user.id },
      });
      return user.id;
    });
    const user = await em.findOneOrFail(User, { id: userId }, { refresh: true, populate: ['company'] });
    return this.auth.startSession(user, meta, 'password');
  }

  private async create(caller: Admin, principal: Principal, email: string, role: Role, meta: RequestMeta, via?: string): Promise<InvitationView> {
    assertMayGrant(caller, role);
    const token = newOneTimeToken();
    const now = new Date();
    // Its own transaction (the row, its mail, its audit entry): a bulk row that fails leaves the others untouched.
    return transaction(this.orm, async (tx) => {
      if (await tx.count(User, { email, company: caller.companyId })) throw new AppError('email_taken', 'A user of this company has this email address already');
      await expireLapsed(tx, caller.companyId, email, now);
      if (await tx.count(Invitation, { company: caller.companyId, email, status: 'pending' })) {
        throw new AppError('conflict', 'A pending invitation exists for this email address; resend it instead');
      }
      const row = tx.create(Invitation, {
        company: tx.getReference(Company, caller.companyId),
        email,
        role,
        tokenHash: sha256Hex(token),
        expiresAt: this.expiry(now),
        invitedBy: caller.kind === 'user' ? tx.getReference(User, caller.userId) : null,
        createdAt: now,
      });
      await tx.flush().catch(pendingTaken);
      await this.mail(tx, row, caller, token);
      await this.audit.record({
        action: 'invitation.created',
        companyId: caller.companyId,
        principal,
        meta,
        targetType: 'invitation',
        targetId: row.id,
        data: { email, role, expiresAt: row.expiresAt.toISOString(), ...(via ? { via } : {}) },
      });
      return view(row, now);
    });
  }

  private expiry(now: Date): Date {
    return new Date(now.getTime() + this.config.invitationTtlDays * 24 * 3600 * 1000);
  }

  /** Mails the link with the plaintext token (in the transaction that stores the row). */
  private async mail(em: EntityManager, invitation: Invitation, caller: Admin, token: string): Promise<void> {
    const company = await em.findOneOrFail(Company, { id: invitation.company.id });
    const link = `${this.config.publicUrl}${ACCEPT_INVITATION_PATH}?token=${encodeURIComponent(token)}`;
    const inviterName = caller.kind === 'user' ? caller.email : null;
    await this.mailer.enqueue(
      invitation.email,
      invitationMail({ companyName: company.name, inviterName, role: invitation.role, link, expiresInDays: this.config.invitationTtlDays }),
      { meta: { companyId: company.id, invitationId: invitation.id }, secretRef: invitationMailRef(invitation.id) },
    );
  }

  /** The invitation, if the caller may manage it; 404 otherwise (another company's ids included). */
  private async findVisible(em: EntityManager, caller: Admin, invitationId: string): Promise<Invitation> {
    const invitation = await em.findOne(Invitation, { id: invitationId.toLowerCase() }, { refresh: true });
    const superadmin = caller.kind === 'user' && caller.isSuperadmin;
    if (!invitation || (invitation.company.id !== caller.companyId && !superadmin)) {
      throw new AppError('not_found', 'No invitation with this id in your company');
    }
    return invitation;
  }
}

/**
 * Marks the company's pending invitations for the address whose link has
 * expired as expired: the unique index allows one pending row per company
 * and address, and a lapsed one must not stand in the way of a new one.
 */
async function expireLapsed(em: EntityManager, companyId: string, email: string, now: Date): Promise<void> {
  await em.nativeUpdate(Invitation, { company: companyId, email, status: 'pending', expiresAt: { $lte: now } }, { status: 'expired' });
}

/** The unique index refused a second pending invitation (another process got in first): a conflict, as checked. */
function pendingTaken(error: unknown): never {
  if (error instanceof UniqueConstraintViolationException) {
    throw new AppError('conflict', 'A pending invitation exists for this email address; resend it instead');
  }
  throw error;
}

/** A pending row past its expiry is expired, whether or not a sweep marked it. */
export function effectiveStatus(invitation: Invitation, now = new Date()): InvitationStatus {
  return invitation.status === 'pending' && invitation.expiresAt <= now ? 'expired' : invitation.status;
}

function view(invitation: Invitation, now: Date): InvitationView {
  return {
    id: invitation.id,
    companyId: invitation.company.id,
    email: invitation.email,
    role: invitation.role,
    status: effectiveStatus(invitation, now),
    invitedById: invitation.invitedBy?.id ?? null,
    createdAt: invitation.createdAt,
    expiresAt: invitation.expiresAt,
    acceptedAt: invitation.acceptedAt,
  };
}

/** Only an owner (or a superadmin) may hand out the owner role. */
function assertMayGrant(caller: Admin, role: Role): void {
  if (role === 'owner' && caller.role !== 'owner' && !(caller.kind === 'user' && caller.isSuperadmin)) {
    throw new AppError('forbidden', 'Only an owner may invite with the owner role');
  }
}

function checkInvitationInput(input: { email: string; role: string }, at: (string | number)[]): { email: string; role: Role } {
  const issues: ValidationIssue[] = [];
  const email = normalizeEmail(typeof input.email === 'string' ? input.email : '');
  if (textLength(email) > 320 || !ADDRESS.test(email)) issues.push({ loc: [...at, 'email'], msg: 'not a valid email address', type: 'value_error.email' });
  const role = typeof input.role === 'string' ? input.role.toLowerCase() : '';
  if (!(roles as readonly string[]).includes(role)) issues.push({ loc: [...at, 'role'], msg: `must be one of ${roles.join(', ')}`, type: 'enum' });
  if (issues.length) throw AppError.validation(issues);
  return { email, role: role as Role };
}
