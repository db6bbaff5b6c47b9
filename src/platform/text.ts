// Text PostgreSQL can store and that is Unicode: no NUL character, no UTF-16 surrogate without its pair.
// The HTTP layer refuses such text in every JSON string and parameter; anything read from a file (a CSV
// import) is checked with the same rule.

// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is exactly what this looks for
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function isStorableText(text: string): boolean {
  return !UNSTORABLE.test(text);
}

/**
 * The path (e.g. `body.name`) of the first string in `value`, object keys included, that is not storable.
 * Walked with a stack of its own, not recursion: how deep a value nests is the sender's choice.
 */
export function findUnstorableText(value: unknown, path: string): string | undefined {
  const pending: [unknown, string][] = [[value, path]];
  while (pending.length > 0) {
    const [item, where] = pending.pop()!;
    if (typeof item === 'string') {
      if (!isStorableText(item)) return where;
      continue;
    }
    // Bytes are not text (a route that reads its body raw checks what it makes of them).
    if (!item || typeof item !== 'object' || Buffer.isBuffer(item)) continue;
    const entries = Object.entries(item);
    // Pushed in reverse so the first entry is looked at first: the path reported is the first in order.
    for (let index = entries.length - 1; index >= 0; index--) {
      const [key, child] = entries[index]!;
      if (!isStorableText(key)) return where;
      pending.push([child, `${where}.${key}`]);
    }
  }
  return undefined;
}
