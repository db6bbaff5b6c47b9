// Prefixed random identifiers (`msg_…`, `org_…`) for everything a client sees: they say what they name,
// reveal no counts, and cannot be guessed. The time-ordered head keeps b-tree inserts local and lets an
// id break ties in newest-first ordering.
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

// Random bytes are drawn from the system's generator a block at a time and each byte used once: a bulk import
// names two hundred thousand rows, and a call to the generator per id cost more than the rest of the id
// (Node's randomUUID pools its randomness the same way). Read from the block in place: a view of it per id was
// an allocation per id.
const RANDOM_BLOCK = 4096;
let randomBlock = Buffer.alloc(0);
let randomOffset = 0;

/** `count` characters of base 36, one fresh random byte each. */
function randomBase36(count: number): string {
  if (randomOffset + count > randomBlock.length) {
    randomBlock = randomBytes(RANDOM_BLOCK);
    randomOffset = 0;
  }
  let out = '';
  const end = randomOffset + count;
  for (let i = randomOffset; i < end; i++) out += ALPHABET[randomBlock[i]! % 36];
  randomOffset = end;
  return out;
}

/** `prefix_` + 9 chars of millisecond time (base 36, sortable until year 5188) + 16 random chars. */
export function newId(prefix: string, atMs: number = Date.now()): string {
  return `${prefix}_${atMs.toString(36).padStart(9, '0')}${randomBase36(16)}`;
}

/** A high-entropy URL-safe secret of `bytes` random bytes. */
export function randomSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}
