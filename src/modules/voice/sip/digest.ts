// SIP digest authentication (RFC 3261 section 22, the MD5 digest of RFC 2617 that desk phones, softphones, SIPp
// and baresip speak). The nonce is stateless, so any instance can check what another issued: the time it was
// made and an HMAC of that time under a key derived from the server's root secret; it is good for five
// minutes, after which the phone is challenged again with `stale=true` and answers without asking its user.
import { createHash, createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

const NONCE_LIFETIME_MS = 5 * 60 * 1000;

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

  /** A nonce for a challenge issued at `nowMs`. */
  nonce(nowMs: number): string {
    const time = Buffer.alloc(8);
    time.writeBigUInt64BE(BigInt(nowMs));
    return Buffer.concat([time, this.tag(time)]).toString('base64url');
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
   * (challenge again); `invalid`: anything else that is wrong, the password included.
   */
  verify(
    credentials: DigestCredentials,
    method: string,
    password: string,
    nowMs: number,
  ): 'ok' | 'stale' | 'invalid' {
    const nonce = unquote(credentials.nonce);
    const issuedAt = this.issuedAt(nonce);
    if (issuedAt === undefined || unquote(credentials.realm) !== this.realm) return 'invalid';
    const algorithm = (credentials.algorithm ?? 'MD5').toUpperCase();
    if (algorithm !== 'MD5') return 'invalid';
    const ha1 = md5(unquote(credentials.username), this.realm, password);
    const ha2 = md5(method, unquote(credentials.uri));
    const qop = credentials.qop && unquote(credentials.qop);
    const expected =
      qop === 'auth'
        ? md5(ha1, nonce, unquote(credentials.nc ?? ''), unquote(credentials.cnonce ?? ''), qop, ha2)
        : qop
          ? undefined
          : md5(ha1, nonce, ha2);
    const given = Buffer.from(unquote(credentials.response).toLowerCase());
    if (!expected || given.length !== expected.length || !timingSafeEqual(given, Buffer.from(expected))) {
      return 'invalid';
    }
    return nowMs - issuedAt > NONCE_LIFETIME_MS || issuedAt > nowMs + 60_000 ? 'stale' : 'ok';
  }

  private issuedAt(nonce: string): number | undefined {
    const bytes = Buffer.from(nonce, 'base64url');
    if (bytes.length !== 24 || bytes.toString('base64url') !== nonce) return undefined;
    const time = bytes.subarray(0, 8);
    return timingSafeEqual(bytes.subarray(8), this.tag(time)) ? Number(time.readBigUInt64BE()) : undefined;
  }

  private tag(time: Buffer): Buffer {
    return createHmac('sha256', this.key).update(time).update(this.realm).digest().subarray(0, 16);
  }
}

export function quote(value: string): string {
  return `"${value}"`;
}

export function unquote(value: string): string {
  return value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value;
}
