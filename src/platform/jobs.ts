// The one durable job queue: rows in PostgreSQL, claimed with FOR UPDATE SKIP LOCKED so that among any number
// of worker processes on one database each due job is handed to exactly one of them. A claim is a lease:
// a worker that dies mid-job stops renewing nothing, its lease runs out, and another worker takes the job
// again. Delivery is therefore at-least-once; handlers are written to be idempotent.
// A job that fails its last attempt is marked dead and never runs again; its queue may register `onDead`,
// called in the transaction that marks it, so the work the job stood for (a delivery, a message) is marked
// failed where its users see it instead of waiting forever on a job that will not run.
// Every time here is the app clock's, so tests move schedules with the test clock instead of sleeping.
import { hostname } from 'node:os';
import type { Clock } from './clock.ts';
import type { Database, Queryable } from './db/index.ts';
import { newId } from './ids.ts';

export interface Job<Payload = unknown> {
  id: string;
  queue: string;
  payload: Payload;
  attempts: number;
  maxAttempts: number;
  runAt: Date;
  createdAt: Date;
}

export type JobHandler<Payload = unknown> = (payload: Payload, job: Job<Payload>) => Promise<void>;

/** Thrown by a handler to be tried again at a given time (e.g. a receiver's Retry-After). */
export class RetryAt extends Error {
  constructor(
    readonly at: Date,
    message = 'retry requested',
  ) {
    super(message);
  }
}

export interface QueueOptions<Payload = never> {
  /** Attempts before the job is marked dead. */
  maxAttempts?: number;
  /** Seconds to wait after the n-th failed attempt (index n-1); the last entry repeats. */
  retryDelaysSeconds?: number[];
  /** How long a claim lasts before another worker may take the job. */
  leaseSeconds?: number;
  /**
   * Called once when a job of the queue gives up (its last attempt failed; a RetryAt never gives up), with
   * the error of that attempt, in the transaction that marks the job dead, so the job's death and its
   * consequence commit together. Only the worker still holding the job calls it. If it throws, the job is
   * marked dead all the same and the hook's error goes to `onError`.
   */
  onDead?: (tx: Queryable, job: Job<Payload>, error: unknown) => Promise<void>;
}

type QueueTiming = Required<Omit<QueueOptions, 'onDead'>>;

export interface EnqueueOptions {
  runAt?: Date;
  maxAttempts?: number;
  /** A second enqueue with the same key is ignored while the first exists. */
  dedupeKey?: string;
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

interface RegisteredQueue {
  handler: JobHandler<never>;
  onDead?: QueueOptions['onDead'];
  options: QueueTiming;
}

const DEFAULT_RETRY_DELAYS = [5, 30, 120, 600, 1800, 3600];
const DEFAULT_OPTIONS: QueueTiming = {
  maxAttempts: 10,
  retryDelaysSeconds: DEFAULT_RETRY_DELAYS,
  leaseSeconds: 60,
};

export interface JobQueueOptions {
  workerId?: string;
  pollIntervalMs?: number;
  concurrency?: number;
  onError?: (error: unknown, job: Job) => void;
}

export class JobQueue {
  readonly workerId: string;
  private readonly queues = new Map<string, RegisteredQueue>();
  private readonly pollIntervalMs: number;
  private readonly concurrency: number;
  private readonly onError: (error: unknown, job: Job) => void;
  private timer?: NodeJS.Timeout;
  private running = false;
  private inFlight = new Set<Promise<unknown>>();

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    options: JobQueueOptions = {},
  ) {
    this.workerId = options.workerId ?? `${hostname()}:${process.pid}:${newId('wrk').slice(-6)}`;
    this.pollIntervalMs = options.pollIntervalMs ?? 250;
    this.concurrency = options.concurrency ?? 4;
    this.onError = options.onError ?? (() => {});
  }

  register<Payload>(queue: string, handler: JobHandler<Payload>, options: QueueOptions<Payload> = {}): void {
    if (this.queues.has(queue)) throw new Error(`Queue ${queue} already has a handler`);
    const { onDead, ...timing } = options;
    this.queues.set(queue, {
      handler: handler as JobHandler<never>,
      onDead: onDead as QueueOptions['onDead'],
      options: { ...DEFAULT_OPTIONS, ...timing },
    });
  }

  /**
   * Whether a job of `queue` whose payload contains `payload` (JSON containment) is waiting or running: a
   * caller about to enqueue work again can tell a job still under way from one that finished, died or never
   * was.
   */
  async hasOpenJob(q: Queryable, queue: string, payload: Record<string, unknown>): Promise<boolean> {
    const rows = await q.query(
      `SELECT 1 FROM jobs WHERE queue = $1 AND status IN ('pending', 'running') AND payload @> $2::jsonb LIMIT 1`,
      [queue, JSON.stringify(payload)],
    );
    return rows.length > 0;
  }

  /** Adds a job, in the caller's transaction when `q` is one, so the job exists only if the change commits. */
  async enqueue(
    q: Queryable,
    queue: string,
    payload: unknown,
    options: EnqueueOptions = {},
  ): Promise<string> {
    const now = this.clock.now();
    const id = newId('job', now.getTime());
    const maxAttempts = options.maxAttempts ?? this.queues.get(queue)?.options.maxAttempts ?? 10;
    const rows = await q.query<{ id: string }>(
      `INSERT INTO jobs (id, queue, payload, run_at, max_attempts, dedupe_key, created_at)
       VALUES ($1, $2, $3::jsonb, $4, $5, $6, $7)
       ON CONFLICT (dedupe_key) DO NOTHING
       RETURNING id`,
      [
        id,
        queue,
        JSON.stringify(payload ?? null),
        options.runAt ?? now,
        maxAttempts,
        options.dedupeKey ?? null,
        now,
      ],
    );
    return rows[0]?.id ?? id;
  }

  /**
   * Claims up to `limit` due jobs of the registered queues and runs them. Returns how many ran.
   * Safe to call from any number of processes at once.
   */
  async runDue(limit = this.concurrency): Promise<number> {
    const jobs = await this.claim(limit);
    await Promise.all(jobs.map((job) => this.execute(job)));
    return jobs.length;
  }

  /** Runs due jobs until none is left (tests, and a worker catching up). */
  async drain(maxRounds = 1000): Promise<number> {
    let total = 0;
    for (let round = 0; round < maxRounds; round++) {
      const ran = await this.runDue();
      if (ran === 0) return total;
      total += ran;
    }
    return total;
  }

  /** Starts polling in the background. */
  start(): void {
    if (this.running) return;
    this.running = true;
    const tick = async () => {
      if (!this.running) return;
      try {
        const free = this.concurrency - this.inFlight.size;
        if (free > 0) {
          const jobs = await this.claim(free);
          for (const job of jobs) {
            const run = this.execute(job).finally(() => this.inFlight.delete(run));
            this.inFlight.add(run);
          }
        }
      } catch (error) {
        this.onError(error, { id: '-', queue: '-' } as Job);
      }
      if (this.running) this.timer = setTimeout(tick, this.pollIntervalMs);
    };
    this.timer = setTimeout(tick, 0);
  }

  /** Stops polling and waits for the jobs in hand to finish. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    await Promise.allSettled([...this.inFlight]);
  }

  private async claim(limit: number): Promise<Job[]> {
    const queues = [...this.queues.keys()];
    if (queues.length === 0 || limit <= 0) return [];
    const now = this.clock.now();
    // One claim covers several queues, so it takes the longest lease among them: a lease only needs to
    // outlast the slowest handler.
    const rows = await this.db.query<JobRow>(
      `WITH due AS (
         SELECT id FROM jobs
          WHERE queue = ANY($1::text[])
            AND ((status = 'pending' AND run_at <= $2) OR (status = 'running' AND locked_until <= $2))
          ORDER BY run_at, id
          LIMIT $3
          FOR UPDATE SKIP LOCKED)
       UPDATE jobs SET status = 'running', attempts = jobs.attempts + 1, locked_by = $4,
              locked_until = $2::timestamptz + make_interval(secs => $5)
         FROM due WHERE jobs.id = due.id
       RETURNING jobs.id, jobs.queue, jobs.payload, jobs.attempts, jobs.max_attempts, jobs.run_at, jobs.created_at`,
      [queues, now, limit, this.workerId, this.maxLeaseSeconds()],
    );
    return rows.map((row) => ({
      id: row.id,
      queue: row.queue,
      payload: row.payload,
      attempts: row.attempts,
      maxAttempts: row.max_attempts,
      runAt: row.run_at,
      createdAt: row.created_at,
    }));
  }

  private maxLeaseSeconds(): number {
    let lease = DEFAULT_OPTIONS.leaseSeconds;
    for (const { options } of this.queues.values()) lease = Math.max(lease, options.leaseSeconds);
    return lease;
  }

  private async execute(job: Job): Promise<void> {
    const registered = this.queues.get(job.queue)!;
    try {
      await registered.handler(job.payload as never, job as Job<never>);
      await this.db.query(
        `UPDATE jobs SET status = 'completed', finished_at = $2, locked_by = NULL, locked_until = NULL, last_error = NULL
          WHERE id = $1 AND locked_by = $3`,
        [job.id, this.clock.now(), this.workerId],
      );
    } catch (error) {
      // A RetryAt is the handler's plan (a receiver's Retry-After, a retry schedule), not a failure to report.
      if (!(error instanceof RetryAt)) this.onError(error, job);
      const now = this.clock.nowMs();
      const message = error instanceof Error ? error.message : String(error);
      if (error instanceof RetryAt || job.attempts < job.maxAttempts) {
        const runAt =
          error instanceof RetryAt ? error.at : new Date(now + this.backoffMs(registered, job.attempts));
        await this.db.query(
          `UPDATE jobs SET status = 'pending', run_at = $2, locked_by = NULL, locked_until = NULL, last_error = $3
            WHERE id = $1 AND locked_by = $4`,
          [job.id, runAt, message.slice(0, 2000), this.workerId],
        );
      } else {
        await this.bury(registered, job, error, new Date(now), message);
      }
    }
  }

  /** Marks the job dead and, in the same transaction, tells its queue's `onDead`. */
  private async bury(registered: RegisteredQueue, job: Job, error: unknown, at: Date, message: string) {
    const markDead = (q: Queryable) =>
      q.query(
        `UPDATE jobs SET status = 'dead', finished_at = $2, locked_by = NULL, locked_until = NULL, last_error = $3
          WHERE id = $1 AND locked_by = $4 RETURNING id`,
        [job.id, at, message.slice(0, 2000), this.workerId],
      );
    const { onDead } = registered;
    if (onDead) {
      try {
        await this.db.transaction(async (tx) => {
          // A worker whose lease ran out no longer holds the job: the one that does decides its fate.
          if ((await markDead(tx)).length > 0) await onDead(tx, job as Job<never>, error);
        });
        return;
      } catch (hookError) {
        this.onError(hookError, job);
      }
    }
    await markDead(this.db);
  }

  /** Delay after the n-th failure, with ±20% jitter so that retries of many jobs do not arrive together. */
  private backoffMs(registered: RegisteredQueue, attempt: number): number {
    const delays = registered.options.retryDelaysSeconds;
    const base = delays[Math.min(attempt - 1, delays.length - 1)]! * 1000;
    return Math.round(base * (0.8 + Math.random() * 0.4));
  }
}
