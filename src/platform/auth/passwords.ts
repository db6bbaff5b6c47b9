// Passwords are hashed with argon2id (OWASP's first choice) and only ever compared through verify(),
// which is constant-time over the hash.
import { hash, verify } from '@node-rs/argon2';

export const PASSWORD_MIN_LENGTH = 8;
export const PASSWORD_MAX_LENGTH = 256;

// @node-rs/argon2 defaults to argon2id with m=19 MiB, t=2, p=1: OWASP's recommended minimum.
export function hashPassword(password: string): Promise<string> {
  return hash(password);
}

export async function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
  try {
    return await verify(passwordHash, password);
  } catch {
    return false;
  }
}

// Verified against when no user matches, so an unknown e-mail costs the same time as a wrong password.
let dummyHash: Promise<string> | undefined;
export function dummyPasswordHash(): Promise<string> {
  dummyHash ??= hash('not-a-real-password-used-for-timing-only');
  return dummyHash;
}
