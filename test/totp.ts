import { createHmac } from 'node:crypto';
import type { FastifyInstance } from 'fastify';

/**
 * An RFC 6238 generator written for the tests with node:crypto alone,
 * independent of the library the server uses (HMAC-SHA1, 6 digits, 30 s).
 */
export const PERIOD = 30;

export function base32Decode(text: string): Buffer {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const char of text.replace(/=+$/, '').toUpperCase()) {
    const index = alphabet.indexOf(char);
    if (index < 0) throw new Error(`not base32: ${char}`);
    value = ((value << 5) | index) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** HOTP (RFC 4226) over a raw key. */
export function hotp(key: Buffer, counter: number, digits = 6): string {
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac('sha1', key).update(message).digest();
  const offset = mac[mac.length - 1]! & 0x0f;
  const binary = (mac.readUInt32BE(offset) & 0x7fffffff) % 10 ** digits;
  return String(binary).padStart(digits, '0');
}

/** The TOTP code of a base32 secret at `epochSeconds`. */
export function totp(secret: string, epochSeconds = Date.now() / 1000): string {
  return hotp(base32Decode(secret), Math.floor(epochSeconds / PERIOD));
}

/** The code `steps` time steps away from now (-1 previous, +1 next). */
export function codeAt(secret: string, steps: number): string {
  return totp(secret, Date.now() / 1000 + steps * PERIOD);
}

/** A 6-digit code that is not valid anywhere near now. */
export function wrongCode(secret: string): string {
  const near = new Set([-2, -1, 0, 1, 2].map((s) => codeAt(secret, s)));
  for (let n = 123456; ; n++) {
    const candidate = String(n).padStart(6, '0');
    if (!near.has(candidate)) return candidate;
  }
}

/** Waits until at least `margin` seconds remain in the current time step, so "now" does not move under a test. */
export async function awayFromStepBoundary(margin = 4): Promise<void> {
  const into = (Date.now() / 1000) % PERIOD;
  if (into > PERIOD - margin) await new Promise((resolve) => setTimeout(resolve, (PERIOD - into + 0.25) * 1000));
}

/** Runs SQL on a fresh unit of work, outside any request. */
export async function sql<T = Record<string, unknown>>(app: FastifyInstance, query: string, params: unknown[] = []): Promise<T[]> {
  return (await app.kernel.orm.em.fork().getConnection().execute(query, params)) as T[];
}

/**
 * Forgets the last accepted time step, so a test can spend the current step
 * again (the server allows only current ±1, and each acceptance spends one).
 */
export async function resetReplayGuard(app: FastifyInstance, userId: string): Promise<void> {
  await sql(app, 'update users set mfa_last_step = 0 where id = ?', [userId]);
}
