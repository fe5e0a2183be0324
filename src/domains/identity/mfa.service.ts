import { createHash, randomBytes } from 'node:crypto';
import { generateSecret, generateURI, verify as verifyTotp } from 'otplib';
import QRCode from 'qrcode';
import type { Orm } from '../../db/orm';
import { AppError } from '../../errors/catalog';
import type { SecretBox } from '../../crypto/secret-box';
import { requireUser } from '../../auth/policy';
import { requireRecentAuthentication } from './recent-authentication';
import type { Principal, RequestMeta } from '../../auth/principal';
import { currentEm, transaction } from '../../db/unit-of-work';
import type { AuditService } from '../audit';
import { MfaRecoveryCode } from './mfa-recovery-code.entity';
import { User } from './user.entity';

/** The issuer authenticator apps show next to the account. */
export const MFA_ISSUER = 'Atrium';
export const RECOVERY_CODE_COUNT = 8;

/** RFC 6238 as every authenticator app implements it. */
const PERIOD_SECONDS = 30;
const DIGITS = 6;
/** One time step of clock skew each way. */
const SKEW_STEPS = 1;
/** Random bytes of a TOTP secret (160 bits, RFC 4226's recommendation). */
const SECRET_BYTES = 20;
/** Random bytes of a recovery code: 120 bits, written as 24 base32 characters. */
const RECOVERY_CODE_BYTES = 15;
/** Wrong codes per user before further tries are refused for the rest of the window. */
const MAX_FAILURES = 10;
const FAILURE_WINDOW_MS = 5 * 60_000;

const TOTP_FORMAT = /^\d{6}$/;
const RECOVERY_FORMAT = /^[A-Z2-7]{24}$/;
const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** The secret box context of a user's TOTP secret: a sealed secret moved to another user fails to open. */
export const mfaSecretContext = (userId: string) => `mfa:${userId}`;

export interface MfaSetup {
  /** otpauth://totp/Atrium:<email>?secret=…&issuer=Atrium */
  otpauthUri: string;
  /** The URI as a PNG QR code, a data: URI. */
  qrCode: string;
  /** The base32 secret, for typing into an app that cannot scan. */
  secret: string;
  /** Shown this once; only their hashes are stored. */
  recoveryCodes: string[];
}

export interface MfaStatus {
  enabled: boolean;
  enabledAt: Date | null;
}

/** Where a second factor is checked, for the audit trail (`sso_*`: after a single sign-on, POST /auth/sso/mfa). */
export type SecondFactorContext = 'login' | 'step_up' | 'sso_login' | 'sso_step_up';

/**
 * TOTP second factor: enrolment (setup, then verify), the check at login and
 * step-up, recovery codes, and disabling (which needs a recent step-up).
 */
export class MfaService {
  private readonly failures = new Map<string, { count: number; resetAt: number }>();

  constructor(
    private readonly orm: Orm,
    private readonly audit: AuditService,
    private readonly box: SecretBox,
  ) {}

  /**
   * Starts enrolment: a new secret (kept pending, sealed) and 8 new recovery
   * codes. MFA stays off until `enable` confirms a code. Refused while MFA is
   * on: replacing an active factor goes through disabling it, which needs step-up.
   */
  async setup(principal: Principal, meta: RequestMeta): Promise<MfaSetup> {
    const caller = requireUser(principal);
    const em = currentEm(this.orm);
    const user = await em.findOne(User, { id: caller.userId }, { refresh: true });
    if (!user) throw new AppError('token_invalid', 'The user of this token no longer exists');
    if (user.mfaEnabled) {
      throw new AppError('conflict', 'MFA is already enabled; disable it first (that needs a recent step-up) to enrol again');
    }
    const secret = generateSecret({ length: SECRET_BYTES });
    const sealed = this.box.seal(secret, mfaSecretContext(user.id));
    const recoveryCodes = newRecoveryCodes();
    await transaction(this.orm, async (tx) => {
      const updated = await tx.nativeUpdate(User, { id: user.id, mfaEnabled: false }, { mfaPendingSecret: sealed, mfaLastStep: 0 });
      if (updated !== 1) throw new AppError('conflict', 'MFA was enabled meanwhile');
      await tx.nativeDelete(MfaRecoveryCode, { user: user.id });
      for (const code of recoveryCodes) {
        tx.create(MfaRecoveryCode, { user: tx.getReference(User, user.id), codeHash: recoveryCodeHash(user.id, code) });
      }
      await this.audit.record({
        action: 'mfa.setup_started',
        companyId: caller.companyId,
        principal,
        meta,
        targetType: 'user',
        targetId: user.id,
      });
    });
    const otpauthUri = generateURI({ issuer: MFA_ISSUER, label: user.email, secret, algorithm: 'sha1', digits: DIGITS, period: PERIOD_SECONDS });
    const qrCode = await QRCode.toDataURL(otpauthUri, { errorCorrectionLevel: 'M', margin: 2 });
    return { otpauthUri, qrCode, secret, recoveryCodes };
  }

  /** Confirms enrolment with a current code from the app; from then on every login needs a second factor. */
  async enable(principal: Principal, code: string, meta: RequestMeta): Promise<MfaStatus> {
    const caller = requireUser(principal);
    const em = currentEm(this.orm);
    const user = await em.findOne(User, { id: caller.userId }, { refresh: true });
    if (!user) throw new AppError('token_invalid', 'The user of this token no longer exists');
    if (user.mfaEnabled) throw new AppError('conflict', 'MFA is already enabled');
    const pending = user.mfaPendingSecret;
    if (!pending) throw new AppError('conflict', 'There is no MFA enrolment to confirm; start with POST /me/mfa/setup');
    const totp = code.replace(/\s/g, '');
    if (!TOTP_FORMAT.test(totp)) throw invalidEnrolmentCode('must be the 6-digit code the authenticator app shows');
    this.checkThrottle(user.id);
    const step = await this.matchTotp(this.box.openString(pending, mfaSecretContext(user.id)), totp, user.mfaLastStep);
    if (step === null) {
      await this.failed(user, meta, { context: 'enrol', method: 'totp' });
      throw invalidEnrolmentCode('does not match; check that the device clock is right and enter the current code');
    }
    const now = new Date();
    // One conditional UPDATE: the pending secret becomes active only if nothing changed since it was read.
    await transaction(this.orm, async (tx) => {
      const won = await tx.nativeUpdate(
        User,
        { id: user.id, mfaEnabled: false, mfaPendingSecret: pending, mfaLastStep: { $lt: step } },
        { mfaEnabled: true, mfaEnabledAt: now, mfaSecret: pending, mfaPendingSecret: null, mfaLastStep: step, updatedAt: now },
      );
      if (won !== 1) throw new AppError('conflict', 'The MFA enrolment changed meanwhile; start again with POST /me/mfa/setup');
      const remaining = await tx.count(MfaRecoveryCode, { user: user.id, usedAt: null });
      await this.audit.record({
        action: 'mfa.enabled',
        companyId: caller.companyId,
        principal,
        meta,
        targetType: 'user',
        targetId: user.id,
        data: { recoveryCodes: remaining },
      });
    });
    return { enabled: true, enabledAt: now };
  }

  /**
   * Turns MFA off: removes the secret (active and pending) and every recovery
   * code. Needs an authentication within the last 5 minutes (step-up).
   */
  async disable(principal: Principal, meta: RequestMeta): Promise<void> {
    const caller = await requireRecentAuthentication(this.orm, principal);
    const em = currentEm(this.orm);
    const user = await em.findOne(User, { id: caller.userId }, { refresh: true });
    if (!user || (!user.mfaEnabled && !user.mfaPendingSecret)) throw new AppError('conflict', 'MFA is not enabled');
    const wasEnabled = user.mfaEnabled;
    await transaction(this.orm, async () => {
      await this.removeFactor(caller.userId);
      await this.audit.record({
        action: 'mfa.disabled',
        companyId: caller.companyId,
        principal,
        meta,
        targetType: 'user',
        targetId: caller.userId,
        data: { wasEnabled },
      });
    });
  }

  /**
   * Removes a user's factor: the secret (active and pending) and every
   * recovery code, in one transaction (the caller's, if any). No checks:
   * `disable` (step-up) and the administrators' disable-mfa authorize first.
   */
  async removeFactor(userId: string): Promise<void> {
    const now = new Date();
    await transaction(this.orm, async (tx) => {
      await tx.nativeUpdate(
        User,
        { id: userId },
        { mfaEnabled: false, mfaEnabledAt: null, mfaSecret: null, mfaPendingSecret: null, mfaLastStep: 0, updatedAt: now },
      );
      await tx.nativeDelete(MfaRecoveryCode, { user: userId });
    });
  }

  /**
   * The second factor of a user who has just proved their password (login,
   * step-up). Nothing to do when MFA is off. Otherwise `code` must be a current
   * TOTP code not used before, or an unused recovery code: missing is
   * `mfa_required`, wrong is `mfa_invalid` (both 401).
   */
  async checkSecondFactor(user: User, code: string | null | undefined, meta: RequestMeta, context: SecondFactorContext): Promise<void> {
    if (!user.mfaEnabled) return;
    const presented = (code ?? '').replace(/[\s-]/g, '').toUpperCase();
    if (!presented) {
      throw new AppError('mfa_required', 'This account has MFA enabled: send a code from the authenticator app or a recovery code (totp_code; totpCode over GraphQL)');
    }
    this.checkThrottle(user.id);
    let method: 'totp' | 'recovery_code' | 'unknown' = 'unknown';
    let ok = false;
    if (TOTP_FORMAT.test(presented)) {
      method = 'totp';
      ok = await this.useTotp(user, presented);
    } else if (RECOVERY_FORMAT.test(presented)) {
      method = 'recovery_code';
      ok = await this.useRecoveryCode(user, presented, meta, context);
    }
    if (!ok) {
      await this.failed(user, meta, { context, method });
      throw new AppError('mfa_invalid', 'The MFA code is wrong, expired or already used');
    }
  }

  /** Verifies a TOTP code and spends its time step in one conditional UPDATE. */
  private async useTotp(user: User, code: string): Promise<boolean> {
    if (!user.mfaSecret) return false;
    const sealed = user.mfaSecret;
    const secret = this.box.openString(sealed, mfaSecretContext(user.id));
    const step = await this.matchTotp(secret, code, user.mfaLastStep);
    if (step === null) return false;
    const em = currentEm(this.orm);
    const won = await em.nativeUpdate(User, { id: user.id, mfaEnabled: true, mfaLastStep: { $lt: step } }, { mfaLastStep: step });
    if (won !== 1) return false;
    // Key rotation: a secret sealed under an older key is sealed again under the current one.
    if (this.box.needsReseal(sealed)) {
      await em.nativeUpdate(User, { id: user.id, mfaSecret: sealed }, { mfaSecret: this.box.seal(secret, mfaSecretContext(user.id)) });
    }
    return true;
  }

  /** Spends a recovery code in one conditional UPDATE: of concurrent uses exactly one wins. */
  private async useRecoveryCode(user: User, code: string, meta: RequestMeta, context: SecondFactorContext): Promise<boolean> {
    return transaction(this.orm, async (tx) => {
      const won = await tx.nativeUpdate(
        MfaRecoveryCode,
        { user: user.id, codeHash: recoveryCodeHash(user.id, code), usedAt: null },
        { usedAt: new Date() },
      );
      if (won !== 1) return false;
      const remaining = await tx.count(MfaRecoveryCode, { user: user.id, usedAt: null });
      await this.audit.record({
        action: 'mfa.recovery_code_used',
        companyId: user.company.id,
        actor: { actorType: 'user', actorId: user.id, actorLabel: user.email },
        meta,
        targetType: 'user',
        targetId: user.id,
        data: { context, remaining },
      });
      return true;
    });
  }

  /** The time step `code` belongs to (current one, or one step either side) after `lastStep`, or null. */
  private async matchTotp(secret: string, code: string, lastStep: number): Promise<number | null> {
    const epoch = Math.floor(Date.now() / 1000);
    const maxStep = Math.floor(epoch / PERIOD_SECONDS) + SKEW_STEPS;
    if (lastStep >= maxStep) return null;
    try {
      const result = await verifyTotp({
        secret,
        token: code,
        epoch,
        period: PERIOD_SECONDS,
        digits: DIGITS,
        algorithm: 'sha1',
        epochTolerance: SKEW_STEPS * PERIOD_SECONDS,
        afterTimeStep: lastStep,
      });
      return result.valid && 'timeStep' in result ? result.timeStep : null;
    } catch {
      return null;
    }
  }

  /** Refuses further codes for a user after too many wrong ones (per process, fixed window). */
  private checkThrottle(userId: string): void {
    const now = Date.now();
    const entry = this.failures.get(userId);
    if (!entry || entry.resetAt <= now || entry.count < MAX_FAILURES) return;
    const retryAfter = Math.max(1, Math.ceil((entry.resetAt - now) / 1000));
    throw new AppError('rate_limited', `Too many wrong MFA codes for this account; try again in ${retryAfter} seconds`, {
      headers: { 'retry-after': String(retryAfter) },
      extra: { retry_after_seconds: retryAfter },
    });
  }

  private async failed(user: User, meta: RequestMeta, data: { context: string; method: string }): Promise<void> {
    const now = Date.now();
    const entry = this.failures.get(user.id);
    if (!entry || entry.resetAt <= now) {
      if (this.failures.size > 10_000) {
        for (const [id, e] of this.failures) if (e.resetAt <= now) this.failures.delete(id);
      }
      this.failures.set(user.id, { count: 1, resetAt: now + FAILURE_WINDOW_MS });
    } else {
      entry.count++;
    }
    await this.audit.record({
      action: 'auth.mfa_failed',
      companyId: user.company.id,
      actor: { actorType: 'user', actorId: user.id, actorLabel: user.email },
      meta,
      targetType: 'user',
      targetId: user.id,
      data,
    });
  }
}

function invalidEnrolmentCode(msg: string): AppError {
  return AppError.validation([{ loc: ['body', 'totp_code'], msg, type: 'value_error.totp' }], 'The MFA code was not accepted');
}

/** 24 base32 characters (120 random bits) in groups of four: ABCD-EFGH-…; case, spaces and dashes do not matter. */
function newRecoveryCodes(): string[] {
  const codes = new Set<string>();
  while (codes.size < RECOVERY_CODE_COUNT) codes.add(base32(randomBytes(RECOVERY_CODE_BYTES)).match(/.{4}/g)!.join('-'));
  return [...codes];
}

/** SHA-256 of the normalized code, bound to its user (the code carries 120 random bits, so no slow hash is needed). */
function recoveryCodeHash(userId: string, code: string): string {
  const normalized = code.replace(/[\s-]/g, '').toUpperCase();
  return createHash('sha256').update(`mfa-recovery:${userId}:${normalized}`).digest('hex');
}

function base32(bytes: Buffer): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = ((value << 8) | byte) & 0xffff;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}
