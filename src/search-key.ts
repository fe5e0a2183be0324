/**
 * A text as case-insensitive search compares it: compatibility-normalised
 * (NFKC: "ﬁ" is "fi", full-width letters are ASCII) and case-folded the way
 * Unicode's full case folding does, which JavaScript has no call for:
 * upper- then lower-casing folds "ß" and "SS" alike, and final "ς" is "σ".
 * SQLite's lower() and LIKE fold ASCII only ("É" stays "É"), so the key is
 * computed here, stored beside the text it folds (written with it), and
 * searched with the query's own key: the database compares plain strings.
 */
export function searchKey(text: string): string {
  return text.normalize('NFKC').toUpperCase().toLowerCase().replace(/ς/g, 'σ').normalize('NFKC');
}
