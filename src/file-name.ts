/**
 * An uploaded file's name as it is stored, shown and sent back: control
 * characters and path separators become `_`, at most 255 characters, and
 * `fallback` when nothing is left.
 */
export function storedFileName(name: string, fallback: string): string {
  return name.replace(/[\p{Cc}/\\]/gu, '_').slice(0, 255) || fallback;
}
