// Server-side sessions behind the portal JWT (spec "Session" state table, CONTRACT section 4). A token is
// only as good as its row: logout deletes the row (later requests: SESSION_EXPIRED), sign-out everywhere and
// a password change or reset revoke it (TOKEN_REVOKED). Lifetimes (docs/auth.md):
//   token:   8 hours, or 7 days with `remember` (spec); a refresh issues a new token with the same window;
//   session: 7 days from sign-in, or 30 days with `remember`, absolute: refreshing never extends it.

import {
  type SessionClaims,
  type SessionTokenCodec,
  TokenInvalidError,
} from '../../platform/auth/session-token.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { Region } from '../../platform/http/caller.ts';
import { newId } from '../../platform/ids.ts';
import { type SessionRecord, type SessionRow, SessionStore } from './session-store.ts';
import type { Role } from './users.ts';

const HOUR = 3600;
const DAY = 24 * HOUR;
export const TOKEN_LIFETIME_SECONDS = 8 * HOUR;
export const REMEMBER_TOKEN_LIFETIME_SECONDS = 7 * DAY;
export const SESSION_LIFETIME_SECONDS = 7 * DAY;
export const REMEMBER_SESSION_LIFETIME_SECONDS = 30 * DAY;

export type { SessionRecord };

export type RevokeReason = 'sign_out_everywhere' | 'password_change' | 'password_reset';

/** What a request authenticated by a session token knows about its caller. */
export interface AuthenticatedSession {
  sessionId: string;
  userId: string;
  organizationId: string;
  /** Undefined when the user no longer belongs to the session's organization. */
  role: Role | undefined;
  /** The organization's region, for reading phone numbers the caller writes. */
  region: Region;
  /** The organization's account state, read with the session: what the guard refuses (CONTRACT 7). */
  suspended: boolean;
  products: string[];
  /** The organization's pinned API version (docs/versioning.md). */
  apiVersion: string;
  remember: boolean;
  mfaVerifiedAt: Date | null;
  twoFactorEnabled: boolean;
  requirePasswordChange: boolean;
  tokenExpiresAt: Date;
}

export interface IssuedToken {
  token: string;
  expiresAt: Date;
  /** Seconds the token lives: the cookie's Max-Age. */
  maxAgeSeconds: number;
}

export const AUTH_MESSAGES = {
  required: 'Sign-in required: send the session token as `Authorization: Bearer` or the portal_token cookie',
  invalid: 'Session token is invalid',
  expired: 'Session token has expired; refresh it with POST /v2/portal/auth/token/refresh',
  revoked: 'Session was revoked (signed out everywhere or password changed); sign in again',
  gone: 'Session has ended; sign in again',
};

export class SessionService {
  private readonly db: Queryable;
  private readonly clock: Clock;
  private readonly codec: SessionTokenCodec;
  private readonly store = new SessionStore();

  constructor(deps: { db: Queryable; clock: Clock; codec: SessionTokenCodec }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.codec = deps.codec;
  }

  async create(
    input: {
      userId: string;
      organizationId: string;
      remember: boolean;
      mfaVerifiedAt?: Date | null;
      /** Carried over when a session is re-scoped, so switching never extends the absolute lifetime. */
      expiresAt?: Date;
      createdAt?: Date;
    },
    tx: Queryable = this.db,
  ): Promise<{ session: SessionRecord; issued: IssuedToken }> {
    const now = this.clock.now();
    const lifetime = input.remember ? REMEMBER_SESSION_LIFETIME_SECONDS : SESSION_LIFETIME_SECONDS;
    // Rows past their absolute lifetime can never be used again; each sign-in tidies the user's own.
    await this.store.deleteExpired(tx, input.userId, now);
    const row = await this.store.insert(tx, {
      id: newId('ses', now.getTime()),
      userId: input.userId,
      organizationId: input.organizationId,
      remember: input.remember,
      createdAt: input.createdAt ?? now,
      expiresAt: input.expiresAt ?? new Date(now.getTime() + lifetime * 1000),
      mfaVerifiedAt: input.mfaVerifiedAt ?? null,
    });
    const session = toSession(row);
    return { session, issued: await this.issue(session) };
  }

  /** A new token for the session: 8 hours, or 7 days when the session was started with `remember`. */
  async issue(session: SessionRecord): Promise<IssuedToken> {
    const now = this.clock.now();
    const maxAgeSeconds = session.remember ? REMEMBER_TOKEN_LIFETIME_SECONDS : TOKEN_LIFETIME_SECONDS;
    const expiresAt = new Date(now.getTime() + maxAgeSeconds * 1000);
    const token = await this.codec.sign(
      { sessionId: session.id, userId: session.userId, organizationId: session.organizationId, expiresAt },
      now,
    );
    return { token, expiresAt, maxAgeSeconds };
  }

  /**
   * Who a token belongs to, or the 401 that says exactly why not. The server's record is judged before
   * the token's own expiry: a client holding an expired token of a session that is gone should be told
   * to sign in (SESSION_EXPIRED), not sent to a refresh that cannot succeed.
   * `allowExpired` accepts a token past its expiry (refresh and logout only).
   */
  async authenticate(token: string, options: { allowExpired?: boolean } = {}): Promise<AuthenticatedSession> {
    let claims: SessionClaims;
    try {
      claims = await this.codec.decode(token);
    } catch (error) {
      if (error instanceof TokenInvalidError)
        throw ApiError.unauthorized(AUTH_MESSAGES.invalid, 'TOKEN_INVALID');
      throw error;
    }
    const row = await this.store.lookup(this.db, claims.sessionId);
    const now = this.clock.nowMs();
    if (!row) throw ApiError.unauthorized(AUTH_MESSAGES.gone, 'SESSION_EXPIRED');
    // A validly signed token whose claims disagree with its row was not issued for it.
    if (row.user_id !== claims.userId || row.organization_id !== claims.organizationId) {
      throw ApiError.unauthorized(AUTH_MESSAGES.invalid, 'TOKEN_INVALID');
    }
    if (row.revoked_at) throw ApiError.unauthorized(AUTH_MESSAGES.revoked, 'TOKEN_REVOKED');
    if (row.expires_at.getTime() <= now) throw ApiError.unauthorized(AUTH_MESSAGES.gone, 'SESSION_EXPIRED');
    if (!options.allowExpired && claims.expiresAt.getTime() <= now) {
      throw ApiError.unauthorized(AUTH_MESSAGES.expired, 'TOKEN_EXPIRED');
    }
    return {
      sessionId: row.id,
      userId: row.user_id,
      organizationId: row.organization_id,
      role: row.role ?? undefined,
      region: row.region,
      suspended: row.suspended,
      products: row.products,
      apiVersion: row.api_version,
      remember: row.remember,
      mfaVerifiedAt: row.mfa_verified_at,
      twoFactorEnabled: row.two_factor_enabled,
      requirePasswordChange: row.require_password_change,
      tokenExpiresAt: claims.expiresAt,
    };
  }

  async get(sessionId: string, tx: Queryable = this.db): Promise<SessionRecord | undefined> {
    const row = await this.store.find(tx, sessionId);
    return row && toSession(row);
  }

  /**
   * Ends a live session and returns it, in one statement: a session revoked or expired a moment ago (by a
   * password change or sign-out everywhere on another request) is refused, never carried over.
   */
  async take(sessionId: string, tx: Queryable): Promise<SessionRecord> {
    const row = await this.store.deleteLive(tx, sessionId, this.clock.now());
    if (row) return toSession(row);
    if (await this.store.revokedAt(tx, sessionId))
      throw ApiError.unauthorized(AUTH_MESSAGES.revoked, 'TOKEN_REVOKED');
    throw ApiError.unauthorized(AUTH_MESSAGES.gone, 'SESSION_EXPIRED');
  }

  /**
   * Until when the session lives (its absolute expiry), or undefined when it does not any more: gone, revoked,
   * expired, or its user no longer a member of its organization. For credentials tied to a session (the
   * console's phone), which must stop working when the session does.
   */
  async liveUntil(sessionId: string): Promise<Date | undefined> {
    const row = await this.store.lookup(this.db, sessionId);
    if (!row || row.revoked_at || !row.role || row.expires_at.getTime() <= this.clock.nowMs())
      return undefined;
    return row.expires_at;
  }

  /** Refresh: a fresh token for a session that still exists and is not revoked. */
  async refresh(sessionId: string): Promise<IssuedToken> {
    const row = await this.store.markRefreshed(this.db, sessionId, this.clock.now());
    if (!row) throw ApiError.unauthorized(AUTH_MESSAGES.gone, 'SESSION_EXPIRED');
    return this.issue(toSession(row));
  }

  /** Logout: the row goes, so every copy of the token answers SESSION_EXPIRED. */
  async end(sessionId: string, tx: Queryable = this.db): Promise<void> {
    await this.store.delete(tx, sessionId);
  }

  /** Revokes every live session of the user (except `keep`); their tokens answer TOKEN_REVOKED. */
  async revokeAll(
    userId: string,
    reason: RevokeReason,
    tx: Queryable = this.db,
    keep?: string,
  ): Promise<number> {
    const revoked = await this.store.revokeAll(tx, userId, reason, this.clock.now(), keep ?? null);
    // A pending two-factor challenge is a sign-in half made (with the old password, before the revocation):
    // it must not complete into a new session afterwards.
    await this.store.deleteChallenges(tx, userId);
    return revoked;
  }

  /**
   * Retention: removes sessions whose lifetime ended before `before` (a revoked one too: until then its
   * token keeps answering TOKEN_REVOKED) and login challenges that expired before it; returns how many.
   */
  async removeExpired(before: Date): Promise<{ sessions: number; challenges: number }> {
    return {
      sessions: await this.store.deleteExpiredSessions(this.db, before),
      challenges: await this.store.deleteExpiredChallenges(this.db, before),
    };
  }

  async markMfaVerified(sessionId: string, tx: Queryable = this.db): Promise<void> {
    await this.store.markMfaVerified(tx, sessionId, this.clock.now());
  }
}

function toSession(row: SessionRow): SessionRecord {
  return {
    id: row.id,
    userId: row.user_id,
    organizationId: row.organization_id,
    remember: row.remember,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    mfaVerifiedAt: row.mfa_verified_at,
  };
}
