// Idempotency-Key for any write (spec: a retried request must not act twice). A write runs its transaction
// through run(): with a key, the first request's response is stored in that same transaction, so it exists
// exactly when the write committed; the same key with the same body within 24 hours answers that response
// again (`replayed`), and with another body is a 422 IDEMPOTENCY_KEY_REUSED. Two concurrent requests with one
// key cannot both write: the second's insert of the key fails on the primary key and it answers as the first.
import { createHash } from 'node:crypto';
import type { Clock } from './clock.ts';
import { deleteInBatches } from './db/batches.ts';
import { type Database, isUniqueViolation, type Queryable } from './db/index.ts';
import { ApiError } from './errors.ts';

export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

export interface IdempotentWrite {
  organizationId: string;
  /** The write's name (its operationId): a key is scoped to one operation. */
  operation: string;
  /** The client's Idempotency-Key; undefined runs the write once, plainly. */
  key: string | undefined;
  /** What the client sent: a replay must send the same. */
  request: unknown;
}

export class Idempotency {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  async run<Result>(
    write: IdempotentWrite,
    work: (tx: Queryable) => Promise<Result>,
  ): Promise<{ result: Result; replayed: boolean }> {
    if (write.key === undefined) return { result: await this.db.transaction(work), replayed: false };
    const requestHash = hashRequest(write.request);
    const earlier = await this.find(write, requestHash);
    if (earlier !== undefined) return { result: earlier as Result, replayed: true };
    try {
      const result = await this.db.transaction(async (tx) => {
        const result = await work(tx);
        const now = this.clock.now();
        // An expired record of this key makes way; a live one (a concurrent twin) makes this insert fail.
        await tx.query(
          `DELETE FROM idempotency_keys
            WHERE organization_id = $1 AND operation = $2 AND key = $3 AND created_at <= $4`,
          [write.organizationId, write.operation, write.key, new Date(now.getTime() - IDEMPOTENCY_WINDOW_MS)],
        );
        await tx.query(
          `INSERT INTO idempotency_keys (organization_id, operation, key, request_hash, response, created_at)
           VALUES ($1, $2, $3, $4, $5::jsonb, $6)`,
          [write.organizationId, write.operation, write.key, requestHash, JSON.stringify(result), now],
        );
        return result;
      });
      return { result, replayed: false };
    } catch (error) {
      // A concurrent request with the same key won: answer as it did (or 422 if its body differed).
      if (isUniqueViolation(error)) {
        const winner = await this.find(write, requestHash);
        if (winner !== undefined) return { result: winner as Result, replayed: true };
      }
      throw error;
    }
  }

  /** Removes keys past their 24-hour window (retention), a batch at a time; returns how many. */
  async removeExpired(now: Date): Promise<number> {
    return deleteInBatches(
      this.db,
      `DELETE FROM idempotency_keys WHERE ctid IN (
         SELECT ctid FROM idempotency_keys WHERE created_at <= $1 LIMIT $2)
       RETURNING 1`,
      [new Date(now.getTime() - IDEMPOTENCY_WINDOW_MS)],
    );
  }

  private async find(write: IdempotentWrite, requestHash: string): Promise<unknown> {
    const since = new Date(this.clock.nowMs() - IDEMPOTENCY_WINDOW_MS);
    const [row] = await this.db.query<{ request_hash: string; response: unknown }>(
      `SELECT request_hash, response FROM idempotency_keys
        WHERE organization_id = $1 AND operation = $2 AND key = $3 AND created_at > $4`,
      [write.organizationId, write.operation, write.key, since],
    );
    if (!row) return undefined;
    if (row.request_hash !== requestHash) {
      throw new ApiError(
        422,
        'This Idempotency-Key was already used with a different request body; use a new key for a new request',
        { code: 'IDEMPOTENCY_KEY_REUSED' },
      );
    }
    return row.response;
  }
}

/** A digest of the request that ignores the order of object keys. */
export function hashRequest(request: unknown): string {
  const canonical = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(canonical);
    if (value && typeof value === 'object') {
      return Object.fromEntries(
        Object.keys(value)
          .sort()
          .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
      );
    }
    return value;
  };
  return createHash('sha256')
    .update(JSON.stringify(canonical(request)))
    .digest('base64url');
}
