import { AppError, type ValidationIssue } from './catalog';

/**
 * U+0000 (NUL) in input text is refused where input arrives (422): no name,
 * email, filter or token holds one, C-string code (SQLite's SQL text, logs,
 * terminals) cuts text at it, and a value stored with it reads differently in
 * each place. The GraphQL policy layer checks every root field's arguments;
 * the REST adapter checks the path, query and body of every route (raw routes
 * included) as part of their validation.
 */
export const NUL_ISSUE = { msg: 'must not contain the NUL character (U+0000)', type: 'string_nul_character' } as const;

/** Enough to show the caller where; a body full of them gets the first few. */
const MAX_REPORTED = 20;

/** A value met while walking, linked to its parent: the path is built only for what is reported. */
interface Step {
  value: unknown;
  key?: string | number;
  parent?: Step;
}

function pathOf(step: Step): (string | number)[] {
  const path: (string | number)[] = [];
  for (let at: Step | undefined = step; at?.parent; at = at.parent) path.push(at.key!);
  return path.reverse();
}

/**
 * The paths, from `value`, of every string (and object key) holding U+0000,
 * in objects and arrays at any depth; at most MAX_REPORTED of them.
 * Iterative and linear in the size of the value: a deeply nested body must
 * cost neither the stack nor a path copy per level.
 */
export function nulPaths(value: unknown): (string | number)[][] {
  const found: (string | number)[][] = [];
  const pending: Step[] = [{ value }];
  while (pending.length && found.length < MAX_REPORTED) {
    const step = pending.pop()!;
    const item = step.value;
    if (typeof item === 'string') {
      if (item.includes('\u0000')) found.push(pathOf(step));
      continue;
    }
    // Parsed JSON, query strings, route params and GraphQL inputs (whatever their prototype); not a Date or a Buffer.
    if (typeof item !== 'object' || item === null || item instanceof Date || ArrayBuffer.isView(item)) continue;
    if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) pending.push({ value: item[i], key: i, parent: step });
      continue;
    }
    const keys = Object.keys(item);
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i]!;
      const child: Step = { value: (item as Record<string, unknown>)[key], key, parent: step };
      if (key.includes('\u0000')) found.push(pathOf(child));
      pending.push(child);
    }
  }
  return found.slice(0, MAX_REPORTED);
}

/** The 422 for values holding U+0000, each at `prefix` + its path; undefined when there is none. */
export function nulRefusal(value: unknown, prefix: (string | number)[] = []): AppError | undefined {
  const paths = nulPaths(value);
  if (!paths.length) return undefined;
  const issues: ValidationIssue[] = paths.map((path) => ({ loc: [...prefix, ...path], ...NUL_ISSUE }));
  return AppError.validation(issues, 'Text must not contain the NUL character (U+0000)');
}
