/**
 * Text made safe to open in a spreadsheet: text that a spreadsheet would run
 * as a formula (= + - @, or a leading tab or carriage return) is prefixed
 * with an apostrophe (OWASP's CSV-injection advice). Every file Atrium writes
 * for a spreadsheet (a bulk result, the usage export) uses it.
 */
export function guardCell(text: string): string {
  return /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
}

/** A cell of a CSV file as read ("-3", "+1.5e3"): a number a spreadsheet reads as such, not a formula. */
export const PLAIN_NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
