// Text PostgreSQL can store and that is Unicode: no NUL character, no UTF-16 surrogate without its pair.
// The HTTP layer refuses such text in every JSON string and parameter; anything read from a file (a CSV
// import) is checked with the same rule.

// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is exactly what this looks for
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function isStorableText(text: string): boolean {
  return !UNSTORABLE.test(text);
}

/** The path (e.g. `body.name`) of the first string in `value`, object keys included, that is not storable. */
export function findUnstorableText(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return isStorableText(value) ? undefined : path;
  // Bytes are not text (a route that reads its body raw checks what it makes of them).
  if (!value || typeof value !== 'object' || Buffer.isBuffer(value)) return undefined;
  for (const [key, item] of Object.entries(value)) {
    if (!isStorableText(key)) return path;
    const found = findUnstorableText(item, `${path}.${key}`);
    if (found) return found;
  }
  return undefined;
}
