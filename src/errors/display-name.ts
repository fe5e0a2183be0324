import { AppError, type ValidationIssue } from './catalog';
import { textLength } from './text-length';

/**
 * What a display name may not hold: control characters (C0, DEL, C1), which
 * break lines and drive terminals where names are shown and logged, and the
 * bidirectional controls (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F,
 * U+061C), which reorder what follows them ("\u202Egnp.exe" shows as
 * "exe.png"), so a name could pass for another in a list of them.
 */
const HIDDEN_CHARACTERS = /[\p{Cc}\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/u;

/** The longest display name: a user's, a company's (the admin API and the CLI's create-owner alike), a key's. */
export const DISPLAY_NAME_MAX = 200;

/** The rule, as descriptions of the fields that take such a name state it. */
export const displayNameRule = (max: number) => `1 to ${max} characters, without control characters or bidirectional formatting characters (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C)`;

/** The issue of a name with something hidden in it, at `loc`; undefined for a name without. */
export function hiddenCharacterIssue(name: string, loc: (string | number)[]): ValidationIssue | undefined {
  return HIDDEN_CHARACTERS.test(name) ? { loc, msg: 'must not contain control characters or bidirectional formatting characters', type: 'string_hidden_character' } : undefined;
}

/** A user-given display name as stored: trimmed, 1 to `max` characters, nothing hidden in it (422 at `loc` otherwise). */
export function displayName(raw: string, loc: (string | number)[], max = DISPLAY_NAME_MAX): string {
  const name = raw.trim();
  if (!name || textLength(name) > max) throw AppError.validation([{ loc, msg: `must be 1 to ${max} characters`, type: 'string_length' }]);
  const hidden = hiddenCharacterIssue(name, loc);
  if (hidden) throw AppError.validation([hidden]);
  return name;
}
