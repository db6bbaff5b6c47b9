// Text PostgreSQL can store and that is Unicode: no NUL character, no UTF-16 surrogate without its pair.
// The HTTP layer refuses such text in every JSON string and parameter; anything read from a file (a CSV
// import) is checked with the same rule.

declare global {
  interface String {
    /** ES2024 (in every Node this runs on, 20 and later); TypeScript's ES2022 library does not declare it. */
    isWellFormed(): boolean;
  }
}

/** No NUL and no lone surrogate: both checks native, where a regular expression per string was not. */
function isStorableText(text: string): boolean {
  return !text.includes('\u0000') && text.isWellFormed();
}

/**
 * The path (e.g. `body.name`) of the first string in `value`, object keys included, that is not storable.
 * Walked with a stack of its own, not recursion: how deep a value nests is the sender's choice. A value's path
 * is made only for an object (its children's prefix) or for the string found, not for every string visited:
 * every JSON body and every imported row passes through here.
 */
export function findUnstorableText(value: unknown, path: string): string | undefined {
  // Each entry: the value, the path of its parent, and its key there (undefined for the value itself).
  const pending: [unknown, string, string | undefined][] = [[value, path, undefined]];
  while (pending.length > 0) {
    const [item, parent, key] = pending.pop()!;
    if (typeof item === 'string') {
      if (!isStorableText(item)) return key === undefined ? parent : `${parent}.${key}`;
      continue;
    }
    // Bytes are not text (a route that reads its body raw checks what it makes of them).
    if (!item || typeof item !== 'object' || Buffer.isBuffer(item)) continue;
    const where = key === undefined ? parent : `${parent}.${key}`;
    const keys = Object.keys(item);
    // Pushed in reverse so the first entry is looked at first: the path reported is the first in order.
    for (let index = keys.length - 1; index >= 0; index--) {
      const childKey = keys[index]!;
      if (!isStorableText(childKey)) return where;
      pending.push([(item as Record<string, unknown>)[childKey], where, childKey]);
    }
  }
  return undefined;
}
