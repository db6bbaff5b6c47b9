// Prefixed random identifiers (`msg_…`, `org_…`) for everything a client sees: they say what they name,
// reveal no counts, and cannot be guessed. The time-ordered head keeps b-tree inserts local and lets an
// id break ties in newest-first ordering.
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

function base36(bytes: Buffer): string {
  let out = '';
  for (const byte of bytes) out += ALPHABET[byte % 36];
  return out;
}

// Random bytes are drawn from the system's generator a block at a time and each byte used once: a bulk import
// names two hundred thousand rows, and a call to the generator per id cost more than the rest of the id
// (Node's randomUUID pools its randomness the same way).
const RANDOM_BLOCK = 4096;
let randomBlock = Buffer.alloc(0);
let randomOffset = 0;

function freshRandomBytes(count: number): Buffer {
  if (randomOffset + count > randomBlock.length) {
    randomBlock = randomBytes(RANDOM_BLOCK);
    randomOffset = 0;
  }
  randomOffset += count;
  return randomBlock.subarray(randomOffset - count, randomOffset);
}

/** `prefix_` + 9 chars of millisecond time (base 36, sortable until year 5188) + 16 random chars. */
export function newId(prefix: string, atMs: number = Date.now()): string {
  return `${prefix}_${atMs.toString(36).padStart(9, '0')}${base36(freshRandomBytes(16))}`;
}

/** A high-entropy URL-safe secret of `bytes` random bytes. */
export function randomSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}
