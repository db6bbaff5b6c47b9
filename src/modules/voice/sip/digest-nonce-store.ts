// The SQL of digest nonce counts: the highest `nc` each nonce has been used with, in the database because a
// phone's next request may reach another instance. One guarded statement takes a count, so two requests
// racing with one captured Authorization (on one instance or two) cannot both pass.
import type { Queryable } from '../../../platform/db/index.ts';

export class DigestNonceStore {
  /**
   * Takes nonce count `nc` of `nonce`: true when it is higher than every count used with the nonce before
   * (recorded now), false for a count already used or a lower one (a replay).
   */
  async take(db: Queryable, nonce: string, nc: number, rememberUntil: Date): Promise<boolean> {
    const rows = await db.query(
      `INSERT INTO sip_digest_nonces (nonce, nc, expires_at) VALUES ($1, $2, $3)
       ON CONFLICT (nonce) DO UPDATE SET nc = EXCLUDED.nc
       WHERE sip_digest_nonces.nc < EXCLUDED.nc
       RETURNING nc`,
      [nonce, nc, rememberUntil],
    );
    return rows.length === 1;
  }

  /** Deletes the counts of nonces past their lifetime (the hourly clean-up); returns how many. */
  async removeExpired(db: Queryable, now: Date): Promise<number> {
    const [row] = await db.query<{ removed: number }>(
      `WITH removed AS (DELETE FROM sip_digest_nonces WHERE expires_at <= $1 RETURNING 1)
       SELECT count(*)::int AS removed FROM removed`,
      [now],
    );
    return row?.removed ?? 0;
  }
}
