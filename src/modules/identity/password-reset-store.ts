// The SQL of password reset tokens, kept only as their SHA-256. Every method takes the Queryable to run on, so
// spending a token and changing the password share one transaction; the rules stay with PasswordResetService.
import type { Queryable } from '../../platform/db/index.ts';

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

  /** Whether an unused token with this hash is still good at `now`. */
  async isUsable(db: Queryable, tokenHash: string, now: Date): Promise<boolean> {
    const rows = await db.query(
      'SELECT 1 FROM password_reset_tokens WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2',
      [tokenHash, now],
    );
    return rows.length > 0;
  }

  /** Spends the token if it is unused and good at `now`; returns its user, or undefined when it was not. */
  async spend(db: Queryable, tokenHash: string, now: Date): Promise<string | undefined> {
    const [row] = await db.query<{ user_id: string }>(
      `UPDATE password_reset_tokens SET used_at = $2
        WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2 RETURNING user_id`,
      [tokenHash, now],
    );
    return row?.user_id;
  }

  /** Spends every unused token of the user. */
  async spendAll(db: Queryable, userId: string, now: Date): Promise<void> {
    await db.query('UPDATE password_reset_tokens SET used_at = $2 WHERE user_id = $1 AND used_at IS NULL', [
      userId,
      now,
    ]);
  }
}
