import { randomUUID } from 'node:crypto';

/** A UUID as ids are written: 36 characters, any case (stored lower-case); no `urn:uuid:` prefix. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

let lastMs = 0;
let counter = 0;
/** The id's first 15 characters ("tttttttt-tttt-7"), built once per millisecond. */
let prefix: string | undefined;
const HEX3 = Array.from({ length: 0x1000 }, (_, i) => i.toString(16).padStart(3, '0'));

/**
 * A UUIDv7 (RFC 9562): 48-bit Unix milliseconds, then a 12-bit counter that
 * keeps ids from one process strictly increasing within a millisecond, then
 * random bits. Sorting by id therefore sorts by creation, ties included.
 */
export function uuidv7(now = Date.now()): string {
  if (now > lastMs) {
    lastMs = now;
    counter = 0;
    prefix = undefined;
  } else if (++counter > 0xfff) {
    // More than 4096 ids in one millisecond: borrow the next millisecond.
    lastMs += 1;
    counter = 0;
    prefix = undefined;
  }
  if (prefix === undefined) {
    const time = lastMs.toString(16).padStart(12, '0');
    prefix = `${time.slice(0, 8)}-${time.slice(8)}-7`;
  }
  // randomUUID draws from a cached entropy pool (~20x cheaper than randomBytes per id); its variant and
  // random tail are kept. Strings, not a Buffer, and the time part once per millisecond: every request
  // and every ledger write takes an id (0.8 µs against 1.4 µs a call when each was built whole).
  return prefix + HEX3[counter]! + randomUUID().slice(18);
}
