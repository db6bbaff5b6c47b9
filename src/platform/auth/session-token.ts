// The session JWT: HS256 over config.jwtSecret, naming a server-side session row (`sid`) and the organization
// it is scoped to (`org`). Only HS256 is accepted (no `alg: none`, no other algorithm, no key confusion).
// The signature is checked here; expiry is judged separately against the app clock (never the wall clock),
// because an expired token is still good for one thing: asking for a refresh.
import { compactVerify, SignJWT } from 'jose';

const ISSUER = 'commsplatform';
const AUDIENCE = 'portal';
const TOKEN_TYPE = 'session';

export interface SessionClaims {
  sessionId: string;
  userId: string;
  organizationId: string;
  issuedAt: Date;
  expiresAt: Date;
}

export class TokenInvalidError extends Error {}

export class SessionTokenCodec {
  private readonly key: Uint8Array;

  constructor(secret: string) {
    this.key = new TextEncoder().encode(secret);
  }

  async sign(claims: Omit<SessionClaims, 'issuedAt'>, now: Date): Promise<string> {
    return new SignJWT({ sid: claims.sessionId, org: claims.organizationId, typ: TOKEN_TYPE })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(claims.userId)
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt(Math.floor(now.getTime() / 1000))
      .setExpirationTime(Math.floor(claims.expiresAt.getTime() / 1000))
      .sign(this.key);
  }

  /** Checks signature and shape, not expiry. Throws TokenInvalidError for anything not issued by us. */
  async decode(token: string): Promise<SessionClaims> {
    let payload: Record<string, unknown>;
    try {
      const verified = await compactVerify(token, this.key, { algorithms: ['HS256'] });
      payload = JSON.parse(new TextDecoder().decode(verified.payload));
    } catch {
      throw new TokenInvalidError('Token is malformed or its signature is invalid');
    }
    const { sid, org, sub, iat, exp, iss, aud, typ } = payload;
    if (
      typ !== TOKEN_TYPE ||
      iss !== ISSUER ||
      aud !== AUDIENCE ||
      typeof sid !== 'string' ||
      typeof org !== 'string' ||
      typeof sub !== 'string' ||
      typeof iat !== 'number' ||
      typeof exp !== 'number'
    ) {
      throw new TokenInvalidError('Token is not a session token');
    }
    return {
      sessionId: sid,
      userId: sub,
      organizationId: org,
      issuedAt: new Date(iat * 1000),
      expiresAt: new Date(exp * 1000),
    };
  }
}
