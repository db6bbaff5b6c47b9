// Text PostgreSQL can store and that is Unicode: no NUL character, no UTF-16 surrogate without its pair.
// The HTTP layer refuses such text in every JSON string and parameter; anything read from a file (a CSV
// import) is checked with the same rule.

// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is exactly what this looks for
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function isStorableText(text: string): boolean {
  return !UNSTORABLE.test(text);
}
