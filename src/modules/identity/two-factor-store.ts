// The SQL of two-factor authentication: each user's sealed TOTP secret with the last time-step it accepted,
// and the hashes of their recovery codes. Every method takes the Queryable to run on, so a check and what it
// consumes share the caller's transaction; the rules stay with TwoFactorService.
import type { Queryable } from '../../platform/db/index.ts';

export interface TwoFactorRow {
  user_id: string;
  secret_sealed: string;
  enabled_at: Date | null;
  last_used_step: number | string | null;
}

export class TwoFactorStore {
  /** The user's two-factor row; with `forUpdate`, locked for the rest of the transaction. */
  async find(db: Queryable, userId: string, forUpdate = false): Promise<TwoFactorRow | undefined> {
    const [row] = await db.query<TwoFactorRow>(
      `SELECT * FROM user_two_factor WHERE user_id = $1${forUpdate ? ' FOR UPDATE' : ''}`,
      [userId],
    );
    return row;
  }

  /** Stores a new secret, not yet enabled, replacing any earlier one and the step it last accepted. */
  async upsertSecret(db: Queryable, userId: string, secretSealed: string, now: Date): Promise<void> {
    await db.query(
      `INSERT INTO user_two_factor (user_id, secret_sealed, enabled_at, last_used_step, created_at, updated_at)
       VALUES ($1, $2, NULL, NULL, $3, $3)
       ON CONFLICT (user_id) DO UPDATE SET secret_sealed = EXCLUDED.secret_sealed, last_used_step = NULL,
         updated_at = EXCLUDED.updated_at`,
      [userId, secretSealed, now],
    );
  }

  async markEnabled(db: Queryable, userId: string, now: Date): Promise<void> {
    await db.query('UPDATE user_two_factor SET enabled_at = $2, updated_at = $2 WHERE user_id = $1', [
      userId,
      now,
    ]);
  }

  /** Records `step` as the last one accepted, if it is later than any before; false when it is not. */
  async takeStep(db: Queryable, userId: string, step: number, now: Date): Promise<boolean> {
    const taken = await db.query(
      `UPDATE user_two_factor SET last_used_step = $2, updated_at = $3
        WHERE user_id = $1 AND (last_used_step IS NULL OR last_used_step < $2) RETURNING user_id`,
      [userId, step, now],
    );
    return taken.length > 0;
  }

  async delete(db: Queryable, userId: string): Promise<void> {
    await db.query('DELETE FROM user_two_factor WHERE user_id = $1', [userId]);
  }

  async insertRecoveryCode(
    db: Queryable,
    id: string,
    userId: string,
    codeHash: string,
    now: Date,
  ): Promise<void> {
    await db.query(
      'INSERT INTO recovery_codes (id, user_id, code_hash, created_at) VALUES ($1, $2, $3, $4)',
      [id, userId, codeHash, now],
    );
  }

  /** Spends an unused recovery code of the user; false when there is none with this hash. */
  async useRecoveryCode(db: Queryable, userId: string, codeHash: string, now: Date): Promise<boolean> {
    const used = await db.query(
      `UPDATE recovery_codes SET used_at = $3
        WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL RETURNING id`,
      [userId, codeHash, now],
    );
    return used.length > 0;
  }

  async deleteRecoveryCodes(db: Queryable, userId: string): Promise<void> {
    await db.query('DELETE FROM recovery_codes WHERE user_id = $1', [userId]);
  }

  async countUnusedRecoveryCodes(db: Queryable, userId: string): Promise<number> {
    const [row] = await db.query<{ count: number }>(
      'SELECT count(*)::int AS count FROM recovery_codes WHERE user_id = $1 AND used_at IS NULL',
      [userId],
    );
    return row!.count;
  }
}
