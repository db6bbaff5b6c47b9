// SIP digest authentication (RFC 3261 section 22, the MD5 digest of RFC 2617 that desk phones, softphones, SIPp
// and baresip speak), with `qop=auth` required. The nonce carries its own proof, so any instance can check what
// another issued: the time it was made, random bytes (two challenges in one millisecond get different nonces,
// each with its own count) and an HMAC of both under a key derived from the server's root secret; it is good
// for five minutes, after which the phone is challenged again with `stale=true` and answers without asking its
// user. Which nonce counts were used is not here but in the database (the registrar's nonce store): a count is
// accepted once per nonce (RFC 7616 section 3.3), so a captured Authorization cannot be replayed.
import { createHash, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';

export const NONCE_LIFETIME_MS = 5 * 60 * 1000;
/** How far ahead of this instance's clock another instance's may be (its nonces are not refused as forged). */
const CLOCK_SKEW_MS = 60_000;
/** RFC 7616 section 3.4: `nc` is exactly eight hexadecimal digits. */
const NONCE_COUNT = /^[0-9a-f]{8}$/i;

const md5 = (...parts: string[]) => createHash('md5').update(parts.join(':')).digest('hex');

export interface DigestCredentials {
  username: string;
  realm: string;
  nonce: string;
  uri: string;
  response: string;
  qop?: string;
  nc?: string;
  cnonce?: string;
  algorithm?: string;
}

export class DigestAuth {
  private readonly key: Buffer;

  constructor(
    rootSecret: string,
    readonly realm: string,
  ) {
    this.key = Buffer.from(hkdfSync('sha256', rootSecret, 'commsplatform', 'sip-digest-nonce v1', 32));
  }

  /** A nonce for a challenge issued at `nowMs`: its time, 8 random bytes, and the tag of both. */
  nonce(nowMs: number): string {
    const time = Buffer.alloc(8);
    time.writeBigUInt64BE(BigInt(nowMs));
    const issued = Buffer.concat([time, randomBytes(8)]);
    return Buffer.concat([issued, this.tag(issued)]).toString('base64url');
  }

  /**
   * Until when a nonce's counts must be remembered: its lifetime plus the clock skew tolerated between
   * instances, so no instance still takes it as fresh once its row is gone. Undefined for a nonce not ours.
   */
  rememberUntil(nonce: string): number | undefined {
    const issued = this.issuedAt(unquote(nonce));
    return issued && !issued.legacy ? issued.atMs + NONCE_LIFETIME_MS + CLOCK_SKEW_MS : undefined;
  }

  /** The answer's nonce count as a number (1 or more), or undefined when it is not eight hex digits. */
  static nonceCount(credentials: DigestCredentials): number | undefined {
    const nc = unquote(credentials.nc ?? '');
    const count = NONCE_COUNT.test(nc) ? Number.parseInt(nc, 16) : 0;
    return count >= 1 ? count : undefined;
  }

  /** The WWW-Authenticate header of a challenge. */
  challenge(nowMs: number, stale = false): Record<string, string> {
    return {
      scheme: 'Digest',
      realm: quote(this.realm),
      nonce: quote(this.nonce(nowMs)),
      algorithm: 'MD5',
      qop: quote('auth'),
      ...(stale ? { stale: 'true' } : {}),
    };
  }

  /**
   * Checks an Authorization header's answer against `password`. `stale`: the nonce was ours but is too old
   * (challenge again); `invalid`: anything else that is wrong, the password included, and an answer without
   * `qop=auth` (RFC 2069's form has no nonce count, so nothing would stop its replay). Whether this nonce
   * count was used before is the caller's to check.
   */
  verify(
    credentials: DigestCredentials,
    method: string,
    password: string,
    nowMs: number,
  ): 'ok' | 'stale' | 'invalid' {
    const nonce = unquote(credentials.nonce);
    const issued = this.issuedAt(nonce);
    if (issued === undefined || unquote(credentials.realm) !== this.realm) return 'invalid';
    const algorithm = (credentials.algorithm ?? 'MD5').toUpperCase();
    if (algorithm !== 'MD5') return 'invalid';
    const cnonce = unquote(credentials.cnonce ?? '');
    if (unquote(credentials.qop ?? '') !== 'auth' || !DigestAuth.nonceCount(credentials) || !cnonce) {
      return 'invalid';
    }
    const ha1 = md5(unquote(credentials.username), this.realm, password);
    const ha2 = md5(method, unquote(credentials.uri));
    const expected = md5(ha1, nonce, unquote(credentials.nc ?? ''), cnonce, 'auth', ha2);
    const given = Buffer.from(unquote(credentials.response).toLowerCase());
    if (given.length !== expected.length || !timingSafeEqual(given, Buffer.from(expected))) return 'invalid';
    // A nonce of the form before random bytes (issued before an upgrade) is answered with a fresh challenge.
    if (issued.legacy) return 'stale';
    return nowMs - issued.atMs > NONCE_LIFETIME_MS || issued.atMs > nowMs + CLOCK_SKEW_MS ? 'stale' : 'ok';
  }

  private issuedAt(nonce: string): { atMs: number; legacy: boolean } | undefined {
    const bytes = Buffer.from(nonce, 'base64url');
    if (bytes.toString('base64url') !== nonce) return undefined;
    // Today's nonces: time and random bytes (16), tag (16); the earlier form had no random bytes (8 + 16).
    const length = bytes.length === 32 ? 16 : bytes.length === 24 ? 8 : undefined;
    if (length === undefined) return undefined;
    const issued = bytes.subarray(0, length);
    if (!timingSafeEqual(bytes.subarray(length), this.tag(issued))) return undefined;
    return { atMs: Number(issued.readBigUInt64BE()), legacy: length === 8 };
  }

  private tag(issued: Buffer): Buffer {
    return createHmac('sha256', this.key).update(issued).update(this.realm).digest().subarray(0, 16);
  }
}

export function quote(value: string): string {
  return `"${value}"`;
}

export function unquote(value: string): string {
  return value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value;
}
