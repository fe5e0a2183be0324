import { clipText } from './clip-text';

/**
 * An uploaded file's name as it is stored, shown and sent back: control
 * characters and path separators become `_`, at most 255 characters (a
 * surrogate pair kept whole), and
 * `fallback` when nothing is left.
 */
export function storedFileName(name: string, fallback: string): string {
  return clipText(name.replace(/[\p{Cc}/\\]/gu, '_'), 255) || fallback;
}
