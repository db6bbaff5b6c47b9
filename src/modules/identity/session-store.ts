// The SQL of portal sessions and of the two-factor login challenges that precede them. Every method takes the
// Queryable to run on, so a sign-in, a switch or a password change can end and start sessions in one
// transaction; the rules stay with SessionService and PortalAuthService.
import { deleteInBatches } from '../../platform/db/batches.ts';
import type { Queryable } from '../../platform/db/index.ts';
import type { Region, Role } from '../../platform/http/caller.ts';

export interface SessionRow {
  id: string;
  user_id: string;
  organization_id: string;
  remember: boolean;
  created_at: Date;
  expires_at: Date;
  mfa_verified_at: Date | null;
}

/** A session with what authenticating a request needs of its user, membership and organization. */
export interface SessionLookupRow extends SessionRow {
  revoked_at: Date | null;
  require_password_change: boolean;
  two_factor_enabled: boolean;
  role: Role | null;
  region: Region;
  suspended: boolean;
  products: string[];
  api_version: string;
}

export interface LoginChallengeRow {
  id: string;
  user_id: string;
  remember: boolean;
  expires_at: Date;
  consumed_at: Date | null;
}

/** A session as stored (sessions.ts hands these out). */
export interface SessionRecord {
  id: string;
  userId: string;
  organizationId: string;
  remember: boolean;
  createdAt: Date;
  expiresAt: Date;
  mfaVerifiedAt: Date | null;
}

export class SessionStore {
  // -------------------------------------------------------------------------------------------------------
  // Sessions

  async insert(db: Queryable, session: SessionRecord): Promise<SessionRow> {
    const [row] = await db.query<SessionRow>(
      `INSERT INTO sessions (id, user_id, organization_id, remember, created_at, expires_at, mfa_verified_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
      [
        session.id,
        session.userId,
        session.organizationId,
        session.remember,
        session.createdAt,
        session.expiresAt,
        session.mfaVerifiedAt,
      ],
    );
    return row!;
  }

  /** Deletes the user's sessions past their absolute lifetime at `now`. */
  async deleteExpired(db: Queryable, userId: string, now: Date): Promise<void> {
    await db.query('DELETE FROM sessions WHERE user_id = $1 AND expires_at <= $2', [userId, now]);
  }

  async lookup(db: Queryable, sessionId: string): Promise<SessionLookupRow | undefined> {
    const [row] = await db.query<SessionLookupRow>(
      `SELECT s.*, u.require_password_change, (tf.enabled_at IS NOT NULL) AS two_factor_enabled, m.role,
              o.region, o.suspended, o.products, o.api_version
         FROM sessions s
         JOIN users u ON u.id = s.user_id
         JOIN organizations o ON o.id = s.organization_id
         LEFT JOIN user_two_factor tf ON tf.user_id = s.user_id
         LEFT JOIN memberships m ON m.user_id = s.user_id AND m.organization_id = s.organization_id
        WHERE s.id = $1`,
      [sessionId],
    );
    return row;
  }

  async find(db: Queryable, sessionId: string): Promise<SessionRow | undefined> {
    const [row] = await db.query<SessionRow>('SELECT * FROM sessions WHERE id = $1', [sessionId]);
    return row;
  }

  /** When the session was revoked (null: it was not); undefined when there is no such session. */
  async revokedAt(db: Queryable, sessionId: string): Promise<Date | null | undefined> {
    const [row] = await db.query<{ revoked_at: Date | null }>(
      'SELECT revoked_at FROM sessions WHERE id = $1',
      [sessionId],
    );
    return row?.revoked_at;
  }

  /** Deletes the session if it is live at `now` (not revoked, not expired) and returns it. */
  async deleteLive(db: Queryable, sessionId: string, now: Date): Promise<SessionRow | undefined> {
    const [row] = await db.query<SessionRow>(
      'DELETE FROM sessions WHERE id = $1 AND revoked_at IS NULL AND expires_at > $2 RETURNING *',
      [sessionId, now],
    );
    return row;
  }

  /** Notes a refresh of a session that is not revoked, and returns it. */
  async markRefreshed(db: Queryable, sessionId: string, now: Date): Promise<SessionRow | undefined> {
    const [row] = await db.query<SessionRow>(
      'UPDATE sessions SET refreshed_at = $2 WHERE id = $1 AND revoked_at IS NULL RETURNING *',
      [sessionId, now],
    );
    return row;
  }

  async delete(db: Queryable, sessionId: string): Promise<void> {
    await db.query('DELETE FROM sessions WHERE id = $1', [sessionId]);
  }

  /** Revokes every live session of the user but `keep`; returns how many. */
  async revokeAll(
    db: Queryable,
    userId: string,
    reason: string,
    now: Date,
    keep: string | null,
  ): Promise<number> {
    const rows = await db.query(
      `UPDATE sessions SET revoked_at = $2, revoked_reason = $3
        WHERE user_id = $1 AND revoked_at IS NULL AND ($4::text IS NULL OR id <> $4::text) RETURNING id`,
      [userId, now, reason, keep],
    );
    return rows.length;
  }

  async markMfaVerified(db: Queryable, sessionId: string, now: Date): Promise<void> {
    await db.query('UPDATE sessions SET mfa_verified_at = $2 WHERE id = $1', [sessionId, now]);
  }

  // -------------------------------------------------------------------------------------------------------
  // Two-factor login challenges

  async insertChallenge(
    db: Queryable,
    challenge: {
      id: string;
      tokenHash: string;
      userId: string;
      remember: boolean;
      now: Date;
      expiresAt: Date;
    },
  ): Promise<void> {
    await db.query(
      `INSERT INTO login_challenges (id, token_hash, user_id, remember, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [
        challenge.id,
        challenge.tokenHash,
        challenge.userId,
        challenge.remember,
        challenge.now,
        challenge.expiresAt,
      ],
    );
  }

  async findChallenge(db: Queryable, tokenHash: string): Promise<LoginChallengeRow | undefined> {
    const [row] = await db.query<LoginChallengeRow>('SELECT * FROM login_challenges WHERE token_hash = $1', [
      tokenHash,
    ]);
    return row;
  }

  /** Spends a challenge; false when it was already spent. */
  async consumeChallenge(db: Queryable, id: string, now: Date): Promise<boolean> {
    const spent = await db.query(
      'UPDATE login_challenges SET consumed_at = $2 WHERE id = $1 AND consumed_at IS NULL RETURNING id',
      [id, now],
    );
    return spent.length > 0;
  }

  async deleteChallenges(db: Queryable, userId: string): Promise<void> {
    await db.query('DELETE FROM login_challenges WHERE user_id = $1', [userId]);
  }

  // -------------------------------------------------------------------------------------------------------
  // Retention: rows past their lifetime, a batch at a time

  /** Sessions (revoked or not) whose absolute lifetime ended before `before`. */
  async deleteExpiredSessions(db: Queryable, before: Date): Promise<number> {
    return deleteInBatches(
      db,
      `DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE expires_at < $1 LIMIT $2) RETURNING 1`,
      [before],
    );
  }

  /** Two-factor login challenges (spent or not) that expired before `before`. */
  async deleteExpiredChallenges(db: Queryable, before: Date): Promise<number> {
    return deleteInBatches(
      db,
      `DELETE FROM login_challenges WHERE id IN (
         SELECT id FROM login_challenges WHERE expires_at < $1 LIMIT $2)
       RETURNING 1`,
      [before],
    );
  }
}
