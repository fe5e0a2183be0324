/**
 * Chinese, Japanese and Korean text in the full-text index. FTS5's unicode61
 * tokenizer splits only at spaces and punctuation, so a run of CJK
 * characters (a whole Japanese sentence) would be one token, found only by
 * the identical run. Each CJK character is indexed as a token of its own
 * instead (what unicode61 separates at is a zero-width space, U+200B, put
 * between it and the letters beside it), and a query's CJK run matches as
 * its pairs of neighbouring characters, each a phrase: a word of two or more
 * characters is found wherever it stands, and a question ranks the passages
 * sharing most of its pairs first, without a dictionary to agree between the
 * index and the query. Text without CJK is indexed and queried exactly as
 * before.
 */

/** A CJK letter or digit (Han, kana, Hangul, and the marks they share such as ー and 々). */
const CJK = '(?:(?=[\\p{L}\\p{N}])[\\p{scx=Han}\\p{scx=Hiragana}\\p{scx=Katakana}\\p{scx=Hangul}])';
const WORD = '[\\p{L}\\p{N}]';
const SEPARATOR = '\u200B';

const BOUNDARY = new RegExp(`(?<=${CJK})(?=${WORD})|(?<=${WORD})(?=${CJK})`, 'gu');
const INSERTED = new RegExp(`(?<=${CJK})${SEPARATOR}(?=${WORD})|(?<=${WORD})${SEPARATOR}(?=${CJK})`, 'gu');
const PARTS = new RegExp(`${CJK}+|(?:(?!${CJK})${WORD})+`, 'gu');
const IS_CJK = new RegExp(`^${CJK}`, 'u');

/** A passage as it is indexed: each CJK character a token of its own. */
export function indexedText(text: string): string {
  return text.replace(BOUNDARY, SEPARATOR);
}

/** A passage as it was extracted, from its indexed form. */
export function shownText(indexed: string): string {
  return indexed.replace(INSERTED, '');
}

/**
 * The search terms of a query, lower-cased, in order, each once: its words
 * outside CJK (of two characters or more), and for each CJK run its pairs of
 * neighbouring characters (as "a b", a phrase of two tokens), or the
 * character itself when the run is one.
 */
export function queryTerms(query: string): { words: string[]; pairs: string[] } {
  const words: string[] = [];
  const pairs: string[] = [];
  for (const word of query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    for (const part of word.match(PARTS) ?? []) {
      if (!IS_CJK.test(part)) {
        words.push(part);
        continue;
      }
      const chars = [...part];
      if (chars.length === 1) pairs.push(chars[0]!);
      for (let i = 0; i + 1 < chars.length; i++) pairs.push(`${chars[i]} ${chars[i + 1]}`);
    }
  }
  return { words, pairs };
}
