import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';

function scrypt(password: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scryptCb(password, salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

/**
 * The longest password any path takes: every request body that carries one
 * (login, step-up, invitation acceptance, reset) and the CLI's create-owner,
 * so an account is never created with a password it could not sign in with.
 */
export const MAX_PASSWORD_LENGTH = 1024;

const KEY_LENGTH = 32;
const R = 8;
const P = 1;

/**
 * scrypt (memory-hard, in node:crypto, no native add-on to build). The cost is
 * stored with the hash so it can be raised later without breaking old hashes.
 * Format: scrypt$N$r$p$salt$hash (base64url).
 */
export async function hashPassword(password: string, cost: number): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, KEY_LENGTH, { N: cost, r: R, p: P, maxmem: 256 * cost * R });
  return ['scrypt', cost, R, P, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, n, r, p, salt, hash] = parts;
  const N = Number(n);
  const expected = Buffer.from(hash!, 'base64url');
  const key = await scrypt(password, Buffer.from(salt!, 'base64url'), expected.length, {
    N,
    r: Number(r),
    p: Number(p),
    maxmem: 256 * N * Number(r),
  });
  return timingSafeEqual(key, expected);
}

/** Used when the email is unknown so a failed login takes as long either way. */
export async function dummyPasswordHash(cost: number): Promise<string> {
  return hashPassword(randomBytes(16).toString('hex'), cost);
}
