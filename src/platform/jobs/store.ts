// The job queue's SQL: adding a job (and telling the workers), claiming due jobs in one statement with a
// quota per queue, finding when the next job falls due, and recording each outcome. Every write of a held job
// names its worker (`locked_by`), so a worker whose lease ran out and was taken over cannot overwrite the
// outcome of the worker that holds the job now. Successes are recorded in batches (CompletionBatch).
import { deleteInBatches } from '../db/batches.ts';
import type { Database, Queryable } from '../db/index.ts';

/** The channel on which enqueues notify workers; the payload is the queue's name. */
export const JOBS_CHANNEL = 'jobs';

export interface Job<Payload = unknown> {
  id: string;
  queue: string;
  payload: Payload;
  attempts: number;
  maxAttempts: number;
  runAt: Date;
  createdAt: Date;
}

/** How many jobs of one queue a claim may take, and how long it holds them. */
export interface Quota {
  queue: string;
  limit: number;
  leaseSeconds: number;
}

export interface NewJob {
  id: string;
  queue: string;
  payload: unknown;
  runAt: Date;
  maxAttempts: number;
  dedupeKey: string | null;
  createdAt: Date;
}

interface JobRow {
  id: string;
  queue: string;
  payload: unknown;
  attempts: number;
  max_attempts: number;
  run_at: Date;
  created_at: Date;
}

/** Inserts a job in `q`'s transaction; returns its id, or undefined when its dedupe key is taken. */
export async function insertJob(q: Queryable, job: NewJob): Promise<string | undefined> {
  // pg_notify in the same statement: PostgreSQL delivers it when the transaction commits (never if it rolls
  // back), and folds the notifications of one transaction with the same payload into one. A duplicate
  // (dedupe key taken) notifies too: one needless look by the workers, cheaper than a second statement.
  const rows = await q.query<{ id: string }>(
    `INSERT INTO jobs (id, queue, payload, run_at, max_attempts, dedupe_key, created_at)
     SELECT $1, $2, $3::jsonb, $4, $5, $6, $7 FROM pg_notify($8, $2)
     ON CONFLICT (dedupe_key) DO NOTHING
     RETURNING id`,
    [
      job.id,
      job.queue,
      JSON.stringify(job.payload ?? null),
      job.runAt,
      job.maxAttempts,
      job.dedupeKey,
      job.createdAt,
      JOBS_CHANNEL,
    ],
  );
  return rows[0]?.id;
}

export class JobStore {
  private readonly db: Database;
  private readonly workerId: string;

  constructor(options: { db: Database; workerId: string }) {
    this.db = options.db;
    this.workerId = options.workerId;
  }

  /** Removes jobs that finished (completed or dead) before `before`, a batch at a time; returns how many. */
  async removeFinished(before: Date): Promise<number> {
    return deleteInBatches(
      this.db,
      `DELETE FROM jobs WHERE id IN (
         SELECT id FROM jobs WHERE status IN ('completed', 'dead') AND finished_at < $1 LIMIT $2)
       RETURNING 1`,
      [before],
    );
  }

  /**
   * Claims up to `total` due jobs, at most each quota's `limit` of its queue, oldest first, in one statement.
   * A due job is pending with `run_at` passed, or running with its lease run out (its worker died).
   */
  async claim(quotas: Quota[], total: number, now: Date): Promise<Job[]> {
    if (quotas.length === 0 || total <= 0) return [];
    // Each queue's candidates are read from its own index range (so a backlog in one queue cannot hide
    // another's due jobs), locked with SKIP LOCKED (so concurrent claims never wait on each other or take
    // the same row), then the oldest `total` of them are taken with that queue's lease.
    const rows = await this.db.query<JobRow>(
      `WITH quota AS (
         SELECT * FROM unnest($1::text[], $2::int[], $3::int[]) AS quota(queue, size, lease_seconds)),
       due AS (
         SELECT candidate.id, candidate.run_at, quota.lease_seconds
           FROM quota
           CROSS JOIN LATERAL (
             SELECT jobs.id, jobs.run_at FROM jobs
              WHERE jobs.queue = quota.queue
                AND ((jobs.status = 'pending' AND jobs.run_at <= $4)
                  OR (jobs.status = 'running' AND jobs.locked_until <= $4))
              ORDER BY jobs.run_at, jobs.id
              LIMIT quota.size
              FOR UPDATE SKIP LOCKED) AS candidate
          ORDER BY candidate.run_at, candidate.id
          LIMIT $5)
       UPDATE jobs SET status = 'running', attempts = jobs.attempts + 1, locked_by = $6,
              locked_until = $4::timestamptz + make_interval(secs => due.lease_seconds)
         FROM due WHERE jobs.id = due.id
       RETURNING jobs.id, jobs.queue, jobs.payload, jobs.attempts, jobs.max_attempts, jobs.run_at,
                 jobs.created_at`,
      [
        quotas.map((quota) => quota.queue),
        quotas.map((quota) => quota.limit),
        quotas.map((quota) => quota.leaseSeconds),
        now,
        total,
        this.workerId,
      ],
    );
    // The UPDATE returns rows in no promised order; handlers start oldest first.
    return rows
      .map((row) => ({
        id: row.id,
        queue: row.queue,
        payload: row.payload,
        attempts: row.attempts,
        maxAttempts: row.max_attempts,
        runAt: row.run_at,
        createdAt: row.created_at,
      }))
      .sort((a, b) => a.runAt.getTime() - b.runAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** The earliest `run_at` of a pending job of `queues` (one index probe per queue), if any. */
  async nextRunAt(queues: string[]): Promise<Date | undefined> {
    if (queues.length === 0) return undefined;
    const [row] = await this.db.query<{ run_at: Date | null }>(
      `SELECT min(next.run_at) AS run_at
         FROM unnest($1::text[]) AS wanted(queue)
         CROSS JOIN LATERAL (
           SELECT jobs.run_at FROM jobs
            WHERE jobs.queue = wanted.queue AND jobs.status = 'pending'
            ORDER BY jobs.run_at
            LIMIT 1) AS next`,
      [queues],
    );
    return row?.run_at ?? undefined;
  }

  /** Marks jobs this worker still holds completed, in one statement. */
  async complete(ids: string[], at: Date): Promise<void> {
    await this.db.query(
      `UPDATE jobs SET status = 'completed', finished_at = $2, locked_by = NULL, locked_until = NULL,
              last_error = NULL
        WHERE id = ANY($1::text[]) AND locked_by = $3`,
      [ids, at, this.workerId],
    );
  }

  /** Puts a job this worker holds back to pending, to run at `runAt`. */
  async reschedule(id: string, runAt: Date, message: string): Promise<void> {
    await this.db.query(
      `UPDATE jobs SET status = 'pending', run_at = $2, locked_by = NULL, locked_until = NULL, last_error = $3
        WHERE id = $1 AND locked_by = $4`,
      [id, runAt, message.slice(0, 2000), this.workerId],
    );
  }

  /** Marks a job dead in `q`'s transaction; false when this worker no longer holds it. */
  async markDead(q: Queryable, id: string, at: Date, message: string): Promise<boolean> {
    const rows = await q.query(
      `UPDATE jobs SET status = 'dead', finished_at = $2, locked_by = NULL, locked_until = NULL, last_error = $3
        WHERE id = $1 AND locked_by = $4 RETURNING id`,
      [id, at, message.slice(0, 2000), this.workerId],
    );
    return rows.length > 0;
  }
}

/**
 * Group commit of successes: the first success is written at once; those that finish while that write is
 * under way wait for it and are written together by the next one. So an idle worker adds no delay, a busy
 * one writes many completions per statement, and each caller's promise settles when its own row is written
 * (a handler's slot is not given back before the job is recorded, so `drain()` sees it completed).
 */
export class CompletionBatch {
  private readonly write: (ids: string[]) => Promise<void>;
  private readonly maxSize: number;
  private waiting: { id: string; settle: (error?: unknown) => void }[] = [];
  private writing = false;

  constructor(options: { write: (ids: string[]) => Promise<void>; maxSize?: number }) {
    this.write = options.write;
    this.maxSize = options.maxSize ?? 500;
  }

  complete(id: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ id, settle: (error) => (error === undefined ? resolve() : reject(error)) });
      if (!this.writing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.writing = true;
    while (this.waiting.length > 0) {
      const batch = this.waiting.splice(0, this.maxSize);
      let failure: unknown;
      try {
        await this.write(batch.map((entry) => entry.id));
      } catch (error) {
        failure = error ?? new Error('completion failed');
      }
      for (const entry of batch) entry.settle(failure);
    }
    this.writing = false;
  }
}
