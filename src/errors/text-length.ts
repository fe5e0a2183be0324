/**
 * The length of `text` as JSON Schema's minLength and maxLength count it,
 * and so as the published OpenAPI document and its validation (Ajv) do: in
 * Unicode code points, a surrogate pair one character. String.length counts
 * UTF-16 units, so a service checking `.length` against a documented limit
 * would refuse an emoji-rich text the schema accepts.
 */
export function textLength(text: string): number {
  let length = text.length;
  for (let i = 0; i < text.length - 1; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      length--;
      i++;
    }
  }
  return length;
}
