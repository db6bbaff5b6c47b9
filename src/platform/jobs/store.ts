// The job queue's SQL: adding a job (and telling the workers), claiming due jobs with a quota per queue (the
// claim is jobs_claim() and jobs_claim_by_key(), PL/pgSQL functions of migration 013, so that every session
// plans it once), finding when the next job falls due, and recording each outcome. Every write of a held job
// names its worker (`locked_by`), so a worker whose lease ran out and was taken over cannot overwrite the
// outcome of the worker that holds the job now. Successes are recorded in batches (JobQueue's completions).
// Concurrency groups: a job may carry a key, and a queue's `perKeyConcurrency` caps the jobs of one key
// running at once across every worker; the claim counts them under a per-key advisory lock.
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
  /** The job's concurrency group, if it has one. */
  concurrencyKey: string | null;
  /** The W3C traceparent it was enqueued under; read only when tracing (JobQueue.claim). */
  traceparent?: string | null;
}

/** How many jobs of one queue a claim may take, and how long it holds them. */
export interface Quota {
  queue: string;
  limit: number;
  leaseSeconds: number;
  /** At most this many jobs of one concurrency key of the queue run at once, across every worker. */
  perKeyConcurrency?: number;
  /** The queue's jobs take slots of its own, not the worker's shared ones (QueueOptions.ownSlots). */
  ownSlots?: boolean;
}

/** What one claim may take: each queue's quota, at most `total` jobs, of which at most `sharedTotal` shared. */
export interface Claim {
  quotas: Quota[];
  total: number;
  /** Jobs of queues without slots of their own, together (the worker's free shared slots). */
  sharedTotal: number;
}

export interface NewJob {
  id: string;
  queue: string;
  payload: unknown;
  runAt: Date;
  maxAttempts: number;
  dedupeKey: string | null;
  concurrencyKey: string | null;
  createdAt: Date;
  /** The W3C traceparent of the context that enqueued it, when tracing (telemetry). */
  traceparent: string | null;
}

/** Jobs made by one statement from rows the caller selects (see JobQueue.enqueueSelected). */
export interface SelectedJobs {
  /** CTEs of the caller's own (e.g. `inserted AS (INSERT … RETURNING …)`), written before the jobs' insert. */
  with?: string;
  /**
   * A SELECT of `payload` (jsonb) and `concurrency_key` (text, or NULL): one job per row. With `timed`, also
   * `run_at` (timestamptz) and `dedupe_key` (text, or NULL), each row's own.
   */
  rows: string;
  timed?: boolean;
  /** The parameters `with` and `rows` refer to, from $1. */
  params: unknown[];
}

/**
 * How to move a key's cap: grow it (up to `max`: twice as large while it is still ramping up, one more after),
 * halve it (and pause if asked for), or pause alone.
 */
export type KeyCapChange =
  | { grow: { max: number } }
  | { halve: { pausedUntil?: Date } }
  | { pause: { until: Date } };

export interface OpenJobs {
  queue: string;
  waiting: number;
  scheduled: number;
  running: number;
  oldest_seconds: number;
}

interface JobRow {
  id: string;
  queue: string;
  payload: unknown;
  attempts: number;
  max_attempts: number;
  run_at: Date;
  created_at: Date;
  concurrency_key: string | null;
}

/**
 * How an insert of jobs wakes the workers: `commit`, pg_notify in its statement, which PostgreSQL delivers when
 * the transaction commits (never if it rolls back) and folds into one per queue and transaction; `none`, for
 * an insert that is a statement of its own, whose caller announces its jobs once it returned (JobAnnouncer).
 */
export type JobWakeUp = 'commit' | 'none';

/** NOTIFY of the workers of `queue`, as a statement of its own (JobAnnouncer). */
export async function notifyWorkers(db: Queryable, queue: string): Promise<void> {
  await db.query('SELECT pg_notify($1, $2)', [JOBS_CHANNEL, queue]);
}

/** Inserts a job in `q`'s transaction; returns its id, or undefined when its dedupe key is taken. */
export async function insertJob(
  q: Queryable,
  job: NewJob,
  wakeUp: JobWakeUp = 'commit',
): Promise<string | undefined> {
  // With `commit`, a duplicate (dedupe key taken) notifies too: one needless look by the workers, cheaper than
  // a second statement.
  const rows = await q.query<{ id: string }>(
    `INSERT INTO jobs (id, queue, payload, run_at, max_attempts, dedupe_key, concurrency_key, created_at,
                       traceparent)
     SELECT $1, $2, $3::jsonb, $4, $5, $6, $7, $8, $9${wakeUp === 'commit' ? ' FROM pg_notify($10, $2)' : ''}
     ON CONFLICT (dedupe_key) DO NOTHING
     RETURNING id`,
    [
      job.id,
      job.queue,
      JSON.stringify(job.payload ?? null),
      job.runAt,
      job.maxAttempts,
      job.dedupeKey,
      job.concurrencyKey,
      job.createdAt,
      job.traceparent,
      ...(wakeUp === 'commit' ? [JOBS_CHANNEL] : []),
    ],
  );
  return rows[0]?.id;
}

/**
 * Inserts one job of `queue` per row of `selected`, in the same statement as the caller's own CTEs (so rows it
 * inserts and their jobs are written at once), waking the workers as `wakeUp` says; returns how many (a row
 * whose dedupe key is taken adds none). Each id is `idPrefix` (a newId() head: prefix and time) followed by
 * random_id_tail() (migration 013).
 */
export async function insertSelectedJobs(
  q: Queryable,
  selected: SelectedJobs,
  job: {
    queue: string;
    idPrefix: string;
    runAt: Date;
    maxAttempts: number;
    createdAt: Date;
    traceparent: string | null;
  },
  wakeUp: JobWakeUp = 'commit',
): Promise<number> {
  const n = selected.params.length;
  const rows = await q.query(
    `WITH ${selected.with ? `${selected.with},` : ''}
       selected_job AS (${selected.rows})
     INSERT INTO jobs (id, queue, payload, run_at, max_attempts, dedupe_key, concurrency_key, created_at,
                       traceparent)
     SELECT $${n + 1} || random_id_tail(), $${n + 2}, selected_job.payload,
            ${selected.timed ? `COALESCE(selected_job.run_at, $${n + 3}::timestamptz)` : `$${n + 3}::timestamptz`}, $${n + 4},
            ${selected.timed ? 'selected_job.dedupe_key' : 'NULL'}, selected_job.concurrency_key, $${n + 5},
            $${n + 6}::text
       FROM selected_job${wakeUp === 'commit' ? ` CROSS JOIN pg_notify($${n + 7}, $${n + 2})` : ''}
     ON CONFLICT (dedupe_key) DO NOTHING
     RETURNING 1`,
    [
      ...selected.params,
      job.idPrefix,
      job.queue,
      job.runAt,
      job.maxAttempts,
      job.createdAt,
      job.traceparent,
      ...(wakeUp === 'commit' ? [JOBS_CHANNEL] : []),
    ],
  );
  return rows.length;
}

/** Forgets one key's own cap (it goes back to its queue's perKeyConcurrency), in `q`'s transaction. */
export async function deleteKeyCap(q: Queryable, queue: string, key: string): Promise<void> {
  await q.query('DELETE FROM job_key_caps WHERE queue = $1 AND concurrency_key = $2', [queue, key]);
}

/**
 * How many of a capped queue's oldest due jobs one claim reads (for a claim of `size`): enough to fill it
 * when nothing blocks, and a bound on what a claim reads when a long run of them belongs to keys that have
 * no room (a slow receiver's backlog). Past that bound the claim steps from key to key (KEYS_PER_LOOK).
 */
const headRows = (size: number) => size * 2 + 16;
/** Keys one statement of the step from key to key visits (one index probe each, and one for its jobs). */
export const KEYS_PER_LOOK = 64;

export class JobStore {
  private readonly db: Database;
  private readonly workerId: string;
  /** Per capped queue, the key after which the next look key by key begins. */
  private readonly keyCursors = new Map<string, string>();

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
   * Claims up to `total` due jobs, at most each quota's `limit` of its queue, oldest first. A due job is
   * pending with `run_at` passed, or running with its lease run out (its worker died). In a queue with
   * `perKeyConcurrency` a job of a key that has that many jobs running under a live lease is passed over,
   * and one claim takes no more of a key than its room.
   */
  async claim({ quotas, total, sharedTotal }: Claim, now: Date): Promise<Job[]> {
    if (quotas.length === 0 || total <= 0) return [];
    const { jobs, blockedHeads } = await this.claimOldest(quotas, total, sharedTotal, now);
    // A capped queue whose oldest due jobs were all read and could not fill the claim may hold due jobs of
    // other keys past them: those are found key by key.
    const shared = new Set(quotas.filter((quota) => !quota.ownSlots).map((quota) => quota.queue));
    let wanted = total - jobs.length;
    let sharedWanted = sharedTotal - jobs.filter((job) => shared.has(job.queue)).length;
    for (const quota of quotas) {
      if (wanted <= 0) break;
      if (!blockedHeads.has(quota.queue)) continue;
      const room = Math.min(
        quota.limit - jobs.filter((job) => job.queue === quota.queue).length,
        quota.ownSlots ? wanted : sharedWanted,
      );
      if (room <= 0) continue;
      const found = await this.claimKeyByKey(quota, Math.min(room, wanted), now);
      jobs.push(...found);
      wanted -= found.length;
      if (!quota.ownSlots) sharedWanted -= found.length;
    }
    // The UPDATE returns rows in no promised order; handlers start oldest first.
    return jobs.sort(
      (a, b) => a.runAt.getTime() - b.runAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
    );
  }

  /**
   * One statement: each queue's oldest due jobs, read from its own index range (so a backlog in one queue
   * cannot hide another's), within their keys' room in capped queues, locked with SKIP LOCKED (so concurrent
   * claims never wait on each other's rows or take the same one), then the oldest `total` of them taken with
   * their queue's lease. Also says which capped queues had more due jobs than it read.
   */
  private async claimOldest(
    quotas: Quota[],
    total: number,
    sharedTotal: number,
    now: Date,
  ): Promise<{ jobs: Job[]; blockedHeads: Set<string> }> {
    const plain = quotas.filter((quota) => !quota.perKeyConcurrency);
    // In one order in every claim, so that claims take the turns of their keys (job_keys_room) in one order.
    const capped = quotas
      .filter((quota) => quota.perKeyConcurrency)
      .sort((a, b) => (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0));
    const rows = await this.db.query<JobRow & { blocked_head: boolean | null }>(
      'SELECT * FROM jobs_claim($1::jsonb, $2::jsonb, $3, $4, $5, $6)',
      [
        JSON.stringify(
          plain.map((quota) => ({
            queue: quota.queue,
            size: quota.limit,
            lease_seconds: quota.leaseSeconds,
            shared: !quota.ownSlots,
          })),
        ),
        JSON.stringify(
          capped.map((quota) => ({
            queue: quota.queue,
            size: quota.limit,
            lease_seconds: quota.leaseSeconds,
            per_key: quota.perKeyConcurrency,
            head_rows: headRows(quota.limit),
            shared: !quota.ownSlots,
          })),
        ),
        now,
        total,
        this.workerId,
        sharedTotal,
      ],
    );
    const jobs = rows.filter((row) => row.id !== null).map(toJob);
    const blockedHeads = new Set(rows.filter((row) => row.blocked_head).map((row) => row.queue));
    return { jobs, blockedHeads };
  }

  /**
   * Claims up to `limit` due jobs of a capped queue key by key, KEYS_PER_LOOK keys a statement, from where
   * the last look left off (so every key's turn comes), until the claim is full or every key was looked at
   * once. This is what lets a claim past a long run of jobs of keys without room at the head of the queue;
   * its cost is bounded by the number of keys with open jobs, not of jobs.
   */
  private async claimKeyByKey(quota: Quota, limit: number, now: Date): Promise<Job[]> {
    const origin = this.keyCursors.get(quota.queue) ?? '';
    let after = origin;
    let wrapped = false;
    const taken: Job[] = [];
    for (;;) {
      const look = await this.claimKeys(quota, limit - taken.length, after, now);
      taken.push(...look.jobs);
      const reachedEnd = look.keysVisited < KEYS_PER_LOOK;
      // A look that filled the claim may have left jobs of its last key: the next begins after that key.
      // Round-robin at the grain of keys: the look's jobs are taken in key order.
      const filled = taken.length >= limit;
      const next = filled
        ? look.jobs.reduce((last, job) => (job.concurrencyKey! > last ? job.concurrencyKey! : last), after)
        : reachedEnd
          ? ''
          : look.lastKey!;
      this.keyCursors.set(quota.queue, next);
      if (filled) break;
      if (reachedEnd) {
        if (wrapped || origin === '') break;
        wrapped = true;
      } else if (wrapped && next >= origin) {
        break;
      }
      after = next;
    }
    return taken;
  }

  /** One look: the next KEYS_PER_LOOK keys after `after` with open jobs, each key's oldest due jobs. */
  private async claimKeys(
    quota: Quota,
    limit: number,
    after: string,
    now: Date,
  ): Promise<{ jobs: Job[]; keysVisited: number; lastKey: string | null }> {
    const rows = await this.db.query<
      Omit<JobRow, 'queue'> & { queue_name: string; keys_visited: number | null; last_key: string | null }
    >('SELECT * FROM jobs_claim_by_key($1, $2, $3, $4, $5, $6, $7, $8)', [
      quota.queue,
      after,
      KEYS_PER_LOOK,
      limit,
      quota.leaseSeconds,
      quota.perKeyConcurrency,
      now,
      this.workerId,
    ]);
    const summary = rows.find((row) => row.id === null)!;
    return {
      jobs: rows.filter((row) => row.id !== null).map((row) => toJob({ ...row, queue: row.queue_name })),
      keysVisited: summary.keys_visited ?? 0,
      lastKey: summary.last_key,
    };
  }

  /**
   * The earliest `run_at` of a pending job of the quotas' queues (one index probe per queue), if any. In a
   * capped queue only a job not yet due counts: a due one the last claim left there is waiting for room in its
   * key, which a finishing job of that key (or the fallback poll) announces, so it is no reason to look again
   * at once.
   */
  async nextRunAt(
    quotas: Pick<Quota, 'queue' | 'perKeyConcurrency'>[],
    now: Date,
  ): Promise<Date | undefined> {
    if (quotas.length === 0) return undefined;
    const [row] = await this.db.query<{ run_at: Date | null }>(
      `SELECT min(next.run_at) AS run_at
         FROM unnest($1::text[], $2::boolean[]) AS wanted(queue, capped)
         CROSS JOIN LATERAL (
           SELECT jobs.run_at FROM jobs
            WHERE jobs.queue = wanted.queue AND jobs.status = 'pending'
              AND jobs.run_at > CASE WHEN wanted.capped THEN $3::timestamptz ELSE '-infinity' END
            ORDER BY jobs.run_at
            LIMIT 1) AS next`,
      [quotas.map((quota) => quota.queue), quotas.map((quota) => Boolean(quota.perKeyConcurrency)), now],
    );
    return row?.run_at ?? undefined;
  }

  /**
   * The traceparents stored with the given jobs (tracing only: the claim does not return them, so that a
   * server that does not trace reads nothing more).
   */
  async traceparents(ids: string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const rows = await this.db.query<{ id: string; traceparent: string }>(
      'SELECT id, traceparent FROM jobs WHERE id = ANY($1::text[]) AND traceparent IS NOT NULL',
      [ids],
    );
    return new Map(rows.map((row) => [row.id, row.traceparent]));
  }

  /**
   * Per queue, the open jobs at `now`: due and waiting for a worker, scheduled for later, running, and the age
   * of the oldest due one. Reads only open jobs, through the partial index of open jobs (jobs_due).
   */
  async openJobs(now: Date): Promise<OpenJobs[]> {
    return this.db.query<OpenJobs>(
      `SELECT queue,
              count(*) FILTER (WHERE status = 'pending' AND run_at <= $1)::int AS waiting,
              count(*) FILTER (WHERE status = 'pending' AND run_at > $1)::int AS scheduled,
              count(*) FILTER (WHERE status = 'running')::int AS running,
              COALESCE(EXTRACT(EPOCH FROM $1 - min(run_at) FILTER (WHERE status = 'pending' AND run_at <= $1)),
                       0)::float8 AS oldest_seconds
         FROM jobs WHERE status IN ('pending', 'running')
        GROUP BY queue`,
      [now],
    );
  }

  /**
   * Moves one key's own cap (job_key_caps, migration 048), starting from `defaultCap` (its queue's
   * perKeyConcurrency) when it has none: `grow` doubles it while the key is ramping up (slow start: until its
   * first halving, migration 053) and adds one after, up to `max`; `halve` halves it (at least 1) and ends the
   * ramp; either of `halve` and `pause` with a `pausedUntil` starts no job of the key before then (a later
   * pause already set stays). Relative to the stored cap, so workers moving one key at once each move it once,
   * and a halving by one worker ends the ramp for all. Returns the cap.
   */
  async adjustKeyCap(
    queue: string,
    key: string,
    change: KeyCapChange,
    defaultCap: number,
    now: Date,
  ): Promise<number> {
    // $4 is the pause (or null), $5 the bound of growth (named in RETURNING so that every form types it). A key
    // without a row is ramping (the column's default) unless this move halves it.
    const [first, next] =
      'grow' in change
        ? [
            'LEAST($3::integer * 2, $5::integer)',
            `LEAST(CASE WHEN job_key_caps.ramping THEN job_key_caps.cap * 2 ELSE job_key_caps.cap + 1 END,
                   $5::integer)`,
          ]
        : 'halve' in change
          ? ['GREATEST($3::integer / 2, 1)', 'GREATEST(job_key_caps.cap / 2, 1)']
          : ['$3::integer', 'job_key_caps.cap'];
    const ramping = 'halve' in change ? ['false', 'false'] : ['true', 'job_key_caps.ramping'];
    const pausedUntil =
      'halve' in change ? (change.halve.pausedUntil ?? null) : 'pause' in change ? change.pause.until : null;
    const [row] = await this.db.query<{ cap: number }>(
      `INSERT INTO job_key_caps (queue, concurrency_key, cap, paused_until, updated_at, ramping)
       VALUES ($1, $2, ${first}, $4::timestamptz, $6, ${ramping[0]})
       ON CONFLICT (queue, concurrency_key)
       DO UPDATE SET cap = ${next}, paused_until = GREATEST(job_key_caps.paused_until, $4::timestamptz),
                     updated_at = $6, ramping = ${ramping[1]}
       RETURNING cap, $5::integer AS bound`,
      [queue, key, defaultCap, pausedUntil, 'grow' in change ? change.grow.max : defaultCap, now],
    );
    return row!.cap;
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

  /**
   * Gives jobs this worker holds back to the queue at once (it is stopping and will not finish them): pending
   * again, due as they were, the interrupted attempt not counted against `max_attempts` (it did not fail), and
   * the workers told at once, so another one takes them now instead of when the lease would have run out.
   * Returns how many it gave back (a job whose outcome was recorded meanwhile is left as it is).
   */
  async handBack(ids: string[]): Promise<number> {
    if (ids.length === 0) return 0;
    const [row] = await this.db.query<{ count: number }>(
      `WITH handed AS (
         UPDATE jobs SET status = 'pending', attempts = GREATEST(attempts - 1, 0), locked_by = NULL,
                locked_until = NULL
          WHERE id = ANY($1::text[]) AND locked_by = $2 AND status = 'running'
          RETURNING queue),
       notified AS (
         SELECT 1 FROM (SELECT DISTINCT queue FROM handed) AS queues
          CROSS JOIN LATERAL pg_notify($3, queues.queue))
       SELECT (SELECT count(*)::int FROM handed) AS count, (SELECT count(*)::int FROM notified) AS notified`,
      [ids, this.workerId, JOBS_CHANNEL],
    );
    return row?.count ?? 0;
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

function toJob(row: JobRow): Job {
  return {
    id: row.id,
    queue: row.queue,
    payload: row.payload,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    runAt: row.run_at,
    createdAt: row.created_at,
    concurrencyKey: row.concurrency_key,
  };
}
