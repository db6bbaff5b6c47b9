// The SQL of scheduled messages (scheduled.ts): the row lock that makes a release and a cancel take turns, and
// the moves out of `scheduled`. Every method takes the Queryable to run on.
import type { Queryable } from '../../platform/db/index.ts';
import type { MessageRow } from './store.ts';

export class ScheduledMessageStore {
  /** The message with its row locked for the rest of `tx`; undefined when there is none (in `organizationId`). */
  async lock(tx: Queryable, id: string, organizationId?: string): Promise<MessageRow | undefined> {
    const [row] = await tx.query<MessageRow>(
      `SELECT * FROM messages WHERE id = $1 AND ($2::text IS NULL OR organization_id = $2) FOR UPDATE`,
      [id, organizationId ?? null],
    );
    return row;
  }

  /** A scheduled message's new due time (its quiet hours were closed when it came due). */
  async postpone(tx: Queryable, id: string, sendAt: Date): Promise<void> {
    await tx.query(`UPDATE messages SET send_at = $2 WHERE id = $1 AND status = 'scheduled'`, [id, sendAt]);
  }

  /** Out of the schedule into the dispatch queue. */
  async release(tx: Queryable, id: string, now: Date): Promise<void> {
    await tx.query(
      `UPDATE messages SET status = 'queued', status_updated_at = $2 WHERE id = $1 AND status = 'scheduled'`,
      [id, now],
    );
  }

  /**
   * Ends a scheduled message: `failed` with the refusal met when it came due, or `cancelled` by its sender
   * (no error). Undefined when it was no longer scheduled.
   */
  async finish(
    tx: Queryable,
    id: string,
    status: 'failed' | 'cancelled',
    error: { errorCode: string; errorMessage: string } | null,
    now: Date,
  ): Promise<MessageRow | undefined> {
    const [row] = await tx.query<MessageRow>(
      `UPDATE messages SET status = $2, error_code = $3, error_message = $4, status_updated_at = $5
        WHERE id = $1 AND status = 'scheduled' RETURNING *`,
      [id, status, error?.errorCode ?? null, error?.errorMessage ?? null, now],
    );
    return row;
  }
}
