// Idempotency-Key for any write (spec: a retried request must not act twice), in two forms on one table.
//
// run(): a write that can store its answer in its own transaction does so. The first request's result is
// stored in that same transaction, so it exists exactly when the write committed; the same key with the same
// body within 24 hours answers that result again (`replayed`), and with another body is a 422
// IDEMPOTENCY_KEY_REUSED. Two concurrent requests with one key cannot both write: the second's insert of the
// key fails on the primary key and it answers as the first. (messages.send)
//
// reserve() / complete() / release(): every other write of the developer API, through the HTTP layer
// (http/idempotent-writes.ts). The key is reserved before the handler runs; a twin arriving meanwhile is a
// 409 IDEMPOTENCY_KEY_IN_USE; the answer is recorded when the handler has finished, or the reservation
// released when it refused (nothing changed, so the key may be used again). A reservation that stops being
// refreshed (its process died) is taken over after IDEMPOTENCY_LOCK_MS. docs/idempotency.md says why.
import { createHash, randomUUID } from 'node:crypto';
import type { Clock } from './clock.ts';
import { deleteInBatches } from './db/batches.ts';
import { type Database, isUniqueViolation, type Queryable } from './db/index.ts';
import { ApiError } from './errors.ts';

export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** A reservation not refreshed for this long was left by a process that died: the key may be taken over. */
export const IDEMPOTENCY_LOCK_MS = 60 * 1000;

/** A keyed request of the HTTP layer: which key of which operation of which organization. */
export interface KeyedRequest {
  organizationId: string;
  /** The operationId: a key is scoped to one operation. */
  operation: string;
  key: string;
}

/** An answer recorded for a key, given again to a retry. */
export interface RecordedAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export type Reservation = { reserved: true; token: string } | { reserved: false; answer: RecordedAnswer };

interface KeyRow {
  request_hash: string;
  reservation: string | null;
  status_code: number | null;
  response_headers: Record<string, string> | null;
  response_body: string | null;
}

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

  /**
   * Reserves `request`'s key for a request whose hash is `requestHash`, or says how to answer instead: the
   * recorded answer of an earlier identical request, else (thrown) 409 IDEMPOTENCY_KEY_IN_USE while another
   * request with the key runs, 422 IDEMPOTENCY_KEY_REUSED when the recorded one was another request.
   * `wholeHash`, when given, is the request's hash once its body has been read whole (a streamed upload),
   * asked for only to compare with a recorded answer.
   */
  async reserve(
    request: KeyedRequest,
    requestHash: string,
    wholeHash?: () => Promise<string>,
  ): Promise<Reservation> {
    // A row deleted between the failed insert and the read (a twin released its reservation) is tried again.
    for (let attempt = 0; attempt < 3; attempt++) {
      const now = this.clock.now();
      const token = randomUUID();
      // A key past its 24 hours, or a reservation its process stopped refreshing, makes way; a live one stays.
      const inserted = await this.db.query(
        `INSERT INTO idempotency_keys
           (organization_id, operation, key, request_hash, reservation, reserved_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $6)
         ON CONFLICT (organization_id, operation, key) DO UPDATE
           SET request_hash = EXCLUDED.request_hash, reservation = EXCLUDED.reservation,
               reserved_at = EXCLUDED.reserved_at, created_at = EXCLUDED.created_at, response = NULL,
               status_code = NULL, response_headers = NULL, response_body = NULL
           WHERE idempotency_keys.created_at <= $7
              OR (idempotency_keys.reservation IS NOT NULL AND idempotency_keys.reserved_at <= $8)
         RETURNING 1`,
        [
          request.organizationId,
          request.operation,
          request.key,
          requestHash,
          token,
          now,
          new Date(now.getTime() - IDEMPOTENCY_WINDOW_MS),
          new Date(now.getTime() - IDEMPOTENCY_LOCK_MS),
        ],
      );
      if (inserted.length > 0) return { reserved: true, token };
      const [row] = await this.db.query<KeyRow>(
        `SELECT request_hash, reservation, status_code, response_headers, response_body
           FROM idempotency_keys WHERE organization_id = $1 AND operation = $2 AND key = $3`,
        [request.organizationId, request.operation, request.key],
      );
      if (!row) continue;
      // Its twin's outcome is not known yet (it may still be refused and free the key): neither replay nor 422.
      if (row.reservation !== null) {
        throw new ApiError(
          409,
          'A request with this Idempotency-Key is still being processed; retry once it has finished',
          { code: 'IDEMPOTENCY_KEY_IN_USE', headers: { 'Retry-After': '1' } },
        );
      }
      if (row.status_code === null) break;
      if (row.request_hash !== (wholeHash ? await wholeHash() : requestHash)) throw keyReused();
      return {
        reserved: false,
        answer: {
          status: row.status_code,
          headers: row.response_headers ?? {},
          body: row.response_body ?? '',
        },
      };
    }
    // Only a key that run() recorded (another kind of write under the same operation name) ends here.
    throw new Error(`Idempotency key of ${request.operation} could not be reserved`);
  }

  /** Keeps a reservation alive while its request runs (a long import outlives IDEMPOTENCY_LOCK_MS). */
  async refresh(request: KeyedRequest, token: string): Promise<void> {
    await this.db.query(
      `UPDATE idempotency_keys SET reserved_at = $5
        WHERE organization_id = $1 AND operation = $2 AND key = $3 AND reservation = $4`,
      [request.organizationId, request.operation, request.key, token, this.clock.now()],
    );
  }

  /**
   * Records the answer of a reserved request, with the request's final hash; false when the reservation was
   * no longer this request's (taken over after it stopped being refreshed).
   */
  async complete(
    request: KeyedRequest,
    token: string,
    answer: RecordedAnswer,
    requestHash: string,
  ): Promise<boolean> {
    const rows = await this.db.query(
      `UPDATE idempotency_keys
          SET status_code = $5, response_headers = $6::jsonb, response_body = $7, request_hash = $8,
              reservation = NULL, reserved_at = NULL
        WHERE organization_id = $1 AND operation = $2 AND key = $3 AND reservation = $4
        RETURNING 1`,
      [
        request.organizationId,
        request.operation,
        request.key,
        token,
        answer.status,
        JSON.stringify(answer.headers),
        answer.body,
        requestHash,
      ],
    );
    return rows.length > 0;
  }

  /** Frees a reserved key whose request changed nothing (a refusal): the key may be used again at once. */
  async release(request: KeyedRequest, token: string): Promise<void> {
    await this.db.query(
      `DELETE FROM idempotency_keys
        WHERE organization_id = $1 AND operation = $2 AND key = $3 AND reservation = $4`,
      [request.organizationId, request.operation, request.key, token],
    );
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
    if (row.request_hash !== requestHash) throw keyReused();
    return row.response;
  }
}

function keyReused(): ApiError {
  return new ApiError(
    422,
    'This Idempotency-Key was already used with a different request (another body or path); use a new key for a new request',
    { code: 'IDEMPOTENCY_KEY_REUSED' },
  );
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
