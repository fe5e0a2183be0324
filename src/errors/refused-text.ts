import { AppError, type ValidationIssue } from './catalog';

/**
 * Text the server could not keep as it was sent is refused where input
 * arrives (422), in every string and object key of a request:
 * - U+0000 (NUL): no name, email, filter or token holds one, C-string code
 *   (SQLite's SQL text, logs, terminals) cuts text at it, and a value stored
 *   with it reads differently in each place;
 * - a lone UTF-16 surrogate (a JSON escape such as \ud800 unpaired): no
 *   character at all, so UTF-8 (the database, every answer) cannot hold it,
 *   and it would be stored as U+FFFD while the write's answer echoed it.
 * The GraphQL policy layer checks every root field's arguments; the REST
 * adapter checks the path, query and body of every route (raw routes
 * included) as part of their validation.
 */
export const NUL_ISSUE = { msg: 'must not contain the NUL character (U+0000)', type: 'string_nul_character' } as const;
export const SURROGATE_ISSUE = { msg: 'must be valid Unicode: holds a lone surrogate (an unpaired \\ud800 to \\udfff)', type: 'string_unicode' } as const;

export type TextIssue = typeof NUL_ISSUE | typeof SURROGATE_ISSUE;

/** Why the server cannot keep `text` as sent, or undefined when it can. */
function textIssue(text: string): TextIssue | undefined {
  if (text.includes('\u0000')) return NUL_ISSUE;
  return text.isWellFormed() ? undefined : SURROGATE_ISSUE;
}

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
 * The paths, from `value`, of every string (and object key) the server could
 * not keep as sent, with why, in objects and arrays at any depth; at most
 * MAX_REPORTED of them.
 * Iterative and linear in the size of the value: a deeply nested body must
 * cost neither the stack nor a path copy per level.
 */
export function refusedText(value: unknown): { path: (string | number)[]; issue: TextIssue }[] {
  const found: { path: (string | number)[]; issue: TextIssue }[] = [];
  const pending: Step[] = [{ value }];
  while (pending.length && found.length < MAX_REPORTED) {
    const step = pending.pop()!;
    const item = step.value;
    if (typeof item === 'string') {
      const issue = textIssue(item);
      if (issue) found.push({ path: pathOf(step), issue });
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
      const issue = textIssue(key);
      if (issue) found.push({ path: pathOf(child), issue });
      pending.push(child);
    }
  }
  return found.slice(0, MAX_REPORTED);
}

/** The 422 for text the server cannot keep, each at `prefix` + its path; undefined when there is none. */
export function textRefusal(value: unknown, prefix: (string | number)[] = []): AppError | undefined {
  const found = refusedText(value);
  if (!found.length) return undefined;
  const issues: ValidationIssue[] = found.map(({ path, issue }) => ({ loc: [...prefix, ...path], ...issue }));
  return AppError.validation(issues, 'Text must be valid Unicode without the NUL character (U+0000)');
}
