/**
 * `true` only when A and B are the same union: a shared enum checks its
 * values against the domain's list with it (`const ok: Same<`${E}`, T> = true`),
 * so adding or removing a value on one side fails the build.
 */
export type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : never) : never;
