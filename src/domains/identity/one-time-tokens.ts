import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/better-sqlite';
import { sha256Hex } from '../../auth/tokens';
import { endMailLinks } from '../../mail/mailer';
import { OneTimeToken, type OneTimeTokenPurpose } from './one-time-token.entity';
import { User } from './user.entity';

/**
 * Single-use tokens mailed to users (table `one_time_tokens`): password reset
 * here, and any other flow that mails a link (email change, account deletion).
 *
 * ```ts
 * const { token, expiresAt } = await issueOneTimeToken(em, { userId, purpose: 'email_change', ttlSeconds: 3600, data: { newEmail } });
 * // mail a link with `token`; later:
 * const row = await consumeOneTimeToken(em, 'email_change', presented); // null: unknown, expired or already used
 * ```
 */

/** 32 random bytes, base64url (43 characters). */
export function newOneTimeToken(): string {
  return randomBytes(32).toString('base64url');
}

export interface IssuedToken {
  /** The plaintext token; only its SHA-256 is stored. Put it in the mailed link, nowhere else. */
  token: string;
  expiresAt: Date;
  id: string;
}

/**
 * Stores a new token of `purpose` for the user. With `replace` (the default),
 * earlier unused tokens of the same purpose stop working at once.
 */
export async function issueOneTimeToken(
  em: EntityManager,
  input: { userId: string; purpose: OneTimeTokenPurpose; ttlSeconds: number; data?: Record<string, unknown>; replace?: boolean },
): Promise<IssuedToken> {
  const now = new Date();
  if (input.replace !== false) await invalidateOneTimeTokens(em, input.userId, input.purpose, now);
  const token = newOneTimeToken();
  const expiresAt = new Date(now.getTime() + input.ttlSeconds * 1000);
  const row = em.create(OneTimeToken, {
    user: em.getReference(User, input.userId),
    purpose: input.purpose,
    tokenHash: sha256Hex(token),
    expiresAt,
    data: input.data ?? null,
    createdAt: now,
  });
  await em.flush();
  return { token, expiresAt, id: row.id };
}

/** The mails carrying the user's links of `purpose` (`secretRef` of the mail): they end with the link. */
export const oneTimeTokenMailRef = (purpose: OneTimeTokenPurpose, userId: string): string => `${purpose}:${userId}`;

/** Makes every unused, unexpired token of `purpose` of the user expire now, and the mails carrying them with it; returns how many. */
export async function invalidateOneTimeTokens(em: EntityManager, userId: string, purpose: OneTimeTokenPurpose, now = new Date()): Promise<number> {
  await endMailLinks(em, oneTimeTokenMailRef(purpose, userId), now);
  return em.nativeUpdate(OneTimeToken, { user: userId, purpose, usedAt: null, expiresAt: { $gt: now } }, { expiresAt: now });
}

/**
 * The token's row, without spending it, if it is of `purpose`, unused and
 * unexpired; otherwise null. Spend it with `consumeOneTimeToken`.
 */
export async function peekOneTimeToken(em: EntityManager, purpose: OneTimeTokenPurpose, token: string): Promise<OneTimeToken | null> {
  if (!token) return null;
  return em.findOne(
    OneTimeToken,
    { tokenHash: sha256Hex(token), purpose, usedAt: null, expiresAt: { $gt: new Date() } },
    { refresh: true },
  );
}

/**
 * Spends the token in one conditional UPDATE (of concurrent uses exactly one
 * wins) and returns its row, or null when it is unknown, of another purpose,
 * expired or already used.
 */
export async function consumeOneTimeToken(em: EntityManager, purpose: OneTimeTokenPurpose, token: string): Promise<OneTimeToken | null> {
  if (!token) return null;
  const tokenHash = sha256Hex(token);
  const now = new Date();
  const won = await em.nativeUpdate(OneTimeToken, { tokenHash, purpose, usedAt: null, expiresAt: { $gt: now } }, { usedAt: now });
  if (won !== 1) return null;
  const row = await em.findOne(OneTimeToken, { tokenHash }, { refresh: true });
  // Spent: the mail that carried it keeps no live link.
  if (row) await endMailLinks(em, oneTimeTokenMailRef(purpose, row.user.id), now);
  return row;
}

/** Deletes tokens that expired more than `olderThanSeconds` ago (housekeeping). */
export async function sweepOneTimeTokens(em: EntityManager, olderThanSeconds = 7 * 24 * 3600): Promise<number> {
  return em.nativeDelete(OneTimeToken, { expiresAt: { $lt: new Date(Date.now() - olderThanSeconds * 1000) } });
}
