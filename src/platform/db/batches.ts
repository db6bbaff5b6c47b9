// Deleting many rows without holding the database: one bounded statement at a time, repeated until a batch
// comes back short. Retention rules (platform/retention.ts and the modules' own) delete through this.
import type { Queryable } from './index.ts';

/** Rows one statement deletes at most; the next batch is a new statement (and a new transaction). */
export const DELETE_BATCH = 5000;

/**
 * Runs `statement` until it deletes fewer than `batch` rows. The statement's last parameter is the batch
 * size (e.g. `DELETE … WHERE id IN (SELECT id … LIMIT $n) RETURNING 1`); returns the rows deleted in all.
 */
export async function deleteInBatches(
  db: Queryable,
  statement: string,
  params: unknown[],
  batch = DELETE_BATCH,
): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = (await db.query(statement, [...params, batch])).length;
    total += deleted;
    if (deleted < batch) return total;
  }
}
