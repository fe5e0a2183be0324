import { uuidv7 } from './ids';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * A client's X-Request-Id when it is safe to echo and log, otherwise a new
 * one: a UUIDv7, time-ordered, since services derive idempotency keys from it
 * (a credit hold's) and ordered keys land at the end of their indexes.
 */
export function requestIdFrom(header: string | string[] | undefined): string {
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : uuidv7();
}

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** A client's Idempotency-Key header: its value when it is 1 to 255 visible ASCII characters, else '' (the operation that needs it answers 422). */
export function idempotencyKeyFrom(header: string | string[]): string {
  return typeof header === 'string' && IDEMPOTENCY_KEY.test(header) ? header : '';
}
