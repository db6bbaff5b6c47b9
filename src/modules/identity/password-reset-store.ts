// The SQL of password reset requests and their tokens, kept only as SHA-256. A request is recorded without a
// token (and for an unknown e-mail without a user) and armed with one by the mail job just before sending
// (password-reset-mail.ts). Every method takes the Queryable to run on, so spending a token and changing the
// password share one transaction; the rules stay with PasswordResetService and PasswordResetMail.
import { deleteInBatches } from '../../platform/db/batches.ts';
import type { Queryable } from '../../platform/db/index.ts';

/**
 * What a mail request is for: a password reset, or an invitation's link to choose a password. `added` (a notice
 * of being added, from before invitations; migrations/028_members.sql) is no longer written.
 */
export type MailPurpose = 'reset' | 'invite' | 'added';

export class PasswordResetStore {
  async insert(
    db: Queryable,
    token: { id: string; tokenHash: string; userId: string; now: Date; expiresAt: Date },
  ): Promise<void> {
    await db.query(
      `INSERT INTO password_reset_tokens (id, token_hash, user_id, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5)`,
      [token.id, token.tokenHash, token.userId, token.now, token.expiresAt],
    );
  }

  /**
   * A request not yet mailed: no token yet, and no user when the e-mail has no account. An `invite` names the
   * organization whose invitation choosing the password accepts, and who invited.
   */
  async insertRequest(
    db: Queryable,
    request: {
      id: string;
      userId: string | null;
      now: Date;
      expiresAt: Date;
      purpose?: MailPurpose;
      organizationId?: string;
      invitedBy?: string;
    },
  ): Promise<void> {
    await db.query(
      `INSERT INTO password_reset_tokens (id, token_hash, user_id, created_at, expires_at, purpose,
                                          organization_id, invited_by)
       VALUES ($1, NULL, $2, $3, $4, $5, $6, $7)`,
      [
        request.id,
        request.userId,
        request.now,
        request.expiresAt,
        request.purpose ?? 'reset',
        request.organizationId ?? null,
        request.invitedBy ?? null,
      ],
    );
  }

  /**
   * What a request's mail says: its purpose, and for members' mails the organization and who invited; whether
   * it is still to be sent (not used, voided or expired).
   */
  async describe(
    db: Queryable,
    id: string,
    now: Date,
  ): Promise<
    | {
        purpose: MailPurpose;
        userId: string | null;
        pending: boolean;
        organizationName: string | null;
        inviterName: string | null;
      }
    | undefined
  > {
    const [row] = await db.query<{
      purpose: MailPurpose;
      user_id: string | null;
      pending: boolean;
      organization_name: string | null;
      inviter_name: string | null;
    }>(
      `SELECT r.purpose, r.user_id, (r.used_at IS NULL AND r.expires_at > $2) AS pending,
              o.name AS organization_name, COALESCE(i.name, i.email) AS inviter_name
         FROM password_reset_tokens r
         LEFT JOIN organizations o ON o.id = r.organization_id
         LEFT JOIN users i ON i.id = r.invited_by
        WHERE r.id = $1`,
      [id, now],
    );
    return (
      row && {
        purpose: row.purpose,
        userId: row.user_id,
        pending: row.pending,
        organizationName: row.organization_name,
        inviterName: row.inviter_name,
      }
    );
  }

  /**
   * Gives a live request of a user the token with this hash (replacing one an earlier attempt gave it);
   * returns the user and expiry, or undefined when there is nothing to mail: no account, used, voided or
   * expired.
   */
  async arm(
    db: Queryable,
    id: string,
    tokenHash: string,
    now: Date,
  ): Promise<{ userId: string; expiresAt: Date } | undefined> {
    const [row] = await db.query<{ user_id: string; expires_at: Date }>(
      `UPDATE password_reset_tokens SET token_hash = $2
        WHERE id = $1 AND user_id IS NOT NULL AND used_at IS NULL AND expires_at > $3
        RETURNING user_id, expires_at`,
      [id, tokenHash, now],
    );
    return row && { userId: row.user_id, expiresAt: row.expires_at };
  }

  /** Whether an unused token with this hash is still good at `now`. */
  async isUsable(db: Queryable, tokenHash: string, now: Date): Promise<boolean> {
    const rows = await db.query(
      'SELECT 1 FROM password_reset_tokens WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2',
      [tokenHash, now],
    );
    return rows.length > 0;
  }

  /**
   * Spends the token if it is unused and good at `now`; returns its user, and for an invitation's link the
   * organization, or undefined when it was not.
   */
  async spend(
    db: Queryable,
    tokenHash: string,
    now: Date,
  ): Promise<{ userId: string; purpose: MailPurpose; organizationId: string | null } | undefined> {
    const [row] = await db.query<{ user_id: string; purpose: MailPurpose; organization_id: string | null }>(
      `UPDATE password_reset_tokens SET used_at = $2
        WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2 RETURNING user_id, purpose, organization_id`,
      [tokenHash, now],
    );
    return row && { userId: row.user_id, purpose: row.purpose, organizationId: row.organization_id };
  }

  /** Spends the user's unused invitation links to the organization, and voids those not yet mailed. */
  async spendInvitations(db: Queryable, userId: string, organizationId: string, now: Date): Promise<void> {
    await db.query(
      `UPDATE password_reset_tokens SET used_at = $3
        WHERE user_id = $1 AND organization_id = $2 AND purpose = 'invite' AND used_at IS NULL`,
      [userId, organizationId, now],
    );
  }

  /** Spends every unused token of the user, and voids their requests not yet mailed. */
  async spendAll(db: Queryable, userId: string, now: Date): Promise<void> {
    await db.query('UPDATE password_reset_tokens SET used_at = $2 WHERE user_id = $1 AND used_at IS NULL', [
      userId,
      now,
    ]);
  }

  /** Retention: requests and tokens (used, voided or never armed) that expired before `before`. */
  async deleteExpired(db: Queryable, before: Date): Promise<number> {
    return deleteInBatches(
      db,
      `DELETE FROM password_reset_tokens WHERE id IN (
         SELECT id FROM password_reset_tokens WHERE expires_at < $1 LIMIT $2)
       RETURNING 1`,
      [before],
    );
  }
}
