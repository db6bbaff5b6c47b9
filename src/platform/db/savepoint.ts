// A part of a transaction that may fail on its own: in a savepoint, what it did is undone when it throws and
// the transaction goes on (a campaign batch whose sends are refused, a scheduled message whose limit is).
import type { Queryable } from './index.ts';

/** Runs `work` in the savepoint `name` of `tx`; if it throws, its statements are rolled back and it rethrows. */
export async function inSavepoint<T>(tx: Queryable, name: string, work: () => Promise<T>): Promise<T> {
  await tx.query(`SAVEPOINT ${name}`);
  try {
    const result = await work();
    await tx.query(`RELEASE SAVEPOINT ${name}`);
    return result;
  } catch (error) {
    await tx.query(`ROLLBACK TO SAVEPOINT ${name}`);
    throw error;
  }
}
