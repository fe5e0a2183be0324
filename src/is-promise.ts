/**
 * Whether a value that may be answered synchronously is a promise. The hot
 * paths (credential, admission, REST reads, the policy wrapper) answer
 * synchronously when memory can tell, and await only what is a promise.
 */
export function isPromise<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as Promise<T> | null)?.then === 'function';
}
