/**
 * At most `max` UTF-16 units of `text`, one fewer where the cut would split
 * a surrogate pair: half of one is no character, and UTF-8 (the database,
 * every answer) would keep it as U+FFFD while the caller was shown the half.
 */
export function clipText(text: string, max: number): string {
  if (text.length <= max) return text;
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}
