// The one durable job queue: rows in PostgreSQL, claimed with FOR UPDATE SKIP LOCKED so that among any number
// of worker processes on one database each due job is handed to exactly one of them. A claim is a lease:
// a worker that dies mid-job stops renewing nothing, its lease runs out, and another worker takes the job
// again. Delivery is therefore at-least-once; handlers are written to be idempotent.
// A job that fails its last attempt is marked dead and never runs again; its queue may register `onDead`,
// called in the transaction that marks it, so the work the job stood for (a delivery, a message) is marked
// failed where its users see it instead of waiting forever on a job that will not run.
// Every time here is the app clock's, so tests move schedules with the test clock instead of sleeping.
// Speed (jobs/worker.ts, jobs/store.ts): an enqueue NOTIFYs the workers at commit, a worker claims a batch
// the size of its free slots and refills a slot as soon as it frees, and successes are recorded in batches.
// Fairness: a queue's `concurrency` bounds its slots in one worker; its `perKeyConcurrency` bounds the jobs of
// one concurrency key (a webhook endpoint) running at once across every worker.
// Beside this file: jobs/options.ts (what a queue and an enqueue may say), jobs/slots.ts (slots, claiming
// ahead), jobs/worker.ts (the background loop), jobs/drain.ts (drain()), jobs/metrics.ts, jobs/announcer.ts
// (wake-ups after autocommitted enqueues) and jobs/store.ts (the SQL).
import { hostname } from 'node:os';
import type { Clock } from './clock.ts';
import { GroupBatch } from './db/group-batch.ts';
import type { Database, Queryable } from './db/index.ts';
import { newId } from './ids.ts';
import { ANNOUNCE_INTERVAL_MS, JobAnnouncer } from './jobs/announcer.ts';
import { drainJobs } from './jobs/drain.ts';
import { declareJobMetrics, type JobMetrics } from './jobs/metrics.ts';
import {
  type EnqueueOptions,
  type JobHandler,
  type QueueOptions,
  type RegisteredQueue,
  RetryAt,
} from './jobs/options.ts';
import { type SlotQueue, Slots } from './jobs/slots.ts';
import {
  type Claim,
  deleteKeyCap,
  insertJob,
  insertSelectedJobs,
  type Job,
  JobStore,
  type JobWakeUp,
  type KeyCapChange,
  notifyWorkers,
  type SelectedJobs,
} from './jobs/store.ts';
import { DEFAULT_SCHEDULE_STEP_MS, JobWorker } from './jobs/worker.ts';
import type { Meter } from './metrics/index.ts';
import { currentTraceparent, inJobSpan, tracingEnabled } from './telemetry/index.ts';

export { type EnqueueOptions, type JobHandler, type QueueOptions, RetryAt } from './jobs/options.ts';
export type { Job, KeyCapChange, SelectedJobs } from './jobs/store.ts';

const DEFAULT_RETRY_DELAYS = [5, 30, 120, 600, 1800, 3600];
const DEFAULT_MAX_ATTEMPTS = 10;
const DEFAULT_LEASE_SECONDS = 60;
/** Jobs one worker runs at once unless told otherwise (WORKER_CONCURRENCY). */
export const DEFAULT_CONCURRENCY = 16;
/** The fallback poll: wake-ups come from NOTIFY and timers, this only covers what they cannot. */
const DEFAULT_POLL_INTERVAL_MS = 1000;

export interface JobQueueOptions {
  workerId?: string;
  /** How often an idle worker looks for due jobs when nothing woke it (a lost notification, a dead lease). */
  pollIntervalMs?: number;
  /** Jobs this worker runs at once (its slots), in `start()` and `drain()`. */
  concurrency?: number;
  /**
   * The grid (ms of real time) a sleep until the next scheduled job is rounded up to, so that jobs due close
   * together run together (worker.ts, DEFAULT_SCHEDULE_STEP_MS); 0 wakes at each job's exact instant.
   */
  scheduleStepMs?: number;
  onError?: (error: unknown, job: Job) => void;
  /** Where the queue's metrics are declared (docs/operations.md); none without one. */
  meter?: Meter;
}

/** How the background worker is doing: stopped (never started here), alive, or stalled in a turn. */
export type WorkerState = 'stopped' | 'alive' | 'stalled';

export class JobQueue {
  readonly workerId: string;
  private readonly queues = new Map<string, RegisteredQueue>();
  private readonly concurrency: number;
  private readonly onError: (error: unknown, job: Job) => void;
  private readonly store: JobStore;
  /**
   * Group commit of successes: the jobs that end in one turn, or while the last write is under way, are
   * marked completed by one statement, and each job's slot is given back only once its own row is written
   * (so `drain()` sees it completed).
   */
  private readonly completions: GroupBatch<string>;
  private readonly worker: JobWorker;
  private readonly announcer: JobAnnouncer;
  private readonly pollIntervalMs: number;
  private readonly metrics?: JobMetrics;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    options: JobQueueOptions = {},
  ) {
    this.workerId = options.workerId ?? `${hostname()}:${process.pid}:${newId('wrk').slice(-6)}`;
    this.concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
    if (!Number.isInteger(this.concurrency) || this.concurrency < 1) {
      throw new Error('A job queue needs a concurrency of at least 1');
    }
    this.onError = options.onError ?? (() => {});
    this.store = new JobStore({ db, workerId: this.workerId });
    this.completions = new GroupBatch<string>({
      run: async (ids) => {
        await this.store.complete(ids, this.clock.now());
        return [];
      },
    });
    this.pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
    this.worker = new JobWorker({
      db,
      clock,
      concurrency: this.concurrency,
      pollIntervalMs: this.pollIntervalMs,
      scheduleStepMs: options.scheduleStepMs ?? DEFAULT_SCHEDULE_STEP_MS,
      queues: () => this.slotQueues(),
      claim: (claim) => this.claim(claim),
      nextRunAt: (quotas) => this.store.nextRunAt(quotas, this.clock.now()),
      run: (job) => this.execute(job),
      handBack: (ids) => this.store.handBack(ids),
      onError: (error, job) => this.onError(error, job ?? ({ id: '-', queue: '-' } as Job)),
    });
    this.announcer = new JobAnnouncer({
      wakeLocal: (queue) => this.worker.nudge(queue),
      notify: (queue) => notifyWorkers(db, queue),
      onError: (error) => this.onError(error, { id: '-', queue: '-' } as Job),
      intervalMs: ANNOUNCE_INTERVAL_MS,
    });
    if (options.meter) {
      this.metrics = declareJobMetrics(options.meter, {
        openJobs: () => this.store.openJobs(this.clock.now()),
        queues: () => [...this.queues.keys()],
      });
    }
  }

  /**
   * Whether this process's background worker is running and turning: `stalled` when it has not come round to
   * a claim for many poll intervals (a claim hung on the database, a blocked loop).
   */
  workerState(): WorkerState {
    const lastTurn = this.worker.lastTurnAt;
    if (lastTurn === undefined) return 'stopped';
    return Date.now() - lastTurn > Math.max(30_000, this.pollIntervalMs * 10) ? 'stalled' : 'alive';
  }

  /** One claim; when tracing, with each job's traceparent (telemetry). */
  private async claim(claim: Claim): Promise<Job[]> {
    const jobs = await this.store.claim(claim, this.clock.now());
    if (tracingEnabled() && jobs.length > 0) {
      const traceparents = await this.store.traceparents(jobs.map((job) => job.id));
      for (const job of jobs) job.traceparent = traceparents.get(job.id) ?? null;
    }
    return jobs;
  }

  register<Payload>(queue: string, handler: JobHandler<Payload>, options: QueueOptions<Payload> = {}): void {
    if (this.queues.has(queue)) throw new Error(`Queue ${queue} already has a handler`);
    if (options.ownSlots && options.concurrency === undefined) {
      throw new Error(`Queue ${queue} has slots of its own: give their number (concurrency)`);
    }
    const concurrency = options.concurrency ?? this.concurrency;
    if (!Number.isInteger(concurrency) || concurrency < 1) {
      throw new Error(`Queue ${queue} needs a concurrency of at least 1`);
    }
    const { perKeyConcurrency, claimAhead } = options;
    if (claimAhead !== undefined && (!Number.isInteger(claimAhead) || claimAhead < 0 || !options.ownSlots)) {
      throw new Error(`Queue ${queue} may claim ahead only with slots of its own, by a whole number of jobs`);
    }
    if (perKeyConcurrency !== undefined && (!Number.isInteger(perKeyConcurrency) || perKeyConcurrency < 1)) {
      throw new Error(`Queue ${queue} needs a perKeyConcurrency of at least 1`);
    }
    this.queues.set(queue, {
      handler: handler as JobHandler<never>,
      onDead: options.onDead as QueueOptions['onDead'],
      maxAttempts: options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
      retryDelaysSeconds: options.retryDelaysSeconds ?? DEFAULT_RETRY_DELAYS,
      leaseSeconds: options.leaseSeconds ?? DEFAULT_LEASE_SECONDS,
      concurrency,
      perKeyConcurrency,
      ownSlots: options.ownSlots,
      claimAhead,
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

  /**
   * Moves the cap of one concurrency key of a capped queue (a webhook endpoint's, as its receiver keeps up or
   * pushes back); the claim honours it across every worker. Returns the key's cap now.
   */
  async adjustKeyCap(queue: string, key: string, change: KeyCapChange): Promise<number> {
    const defaultCap = this.queues.get(queue)?.perKeyConcurrency;
    if (defaultCap === undefined) throw new Error(`Queue ${queue} has no perKeyConcurrency to adjust`);
    return this.store.adjustKeyCap(queue, key, change, defaultCap, this.clock.now());
  }

  /** Puts a key back at its queue's perKeyConcurrency, unpaused (in `q`'s transaction when it is one). */
  resetKeyCap(q: Queryable, queue: string, key: string): Promise<void> {
    return deleteKeyCap(q, queue, key);
  }

  /**
   * Adds a job, in the caller's transaction when `q` is one, so the job exists only if the change commits;
   * the workers are notified when it does.
   */
  async enqueue(
    q: Queryable,
    queue: string,
    payload: unknown,
    options: EnqueueOptions = {},
  ): Promise<string> {
    const now = this.clock.now();
    const id = newId('job', now.getTime());
    const wakeUp = this.wakeUpFor(q);
    const inserted = await insertJob(
      q,
      {
        id,
        queue,
        payload,
        runAt: options.runAt ?? now,
        maxAttempts: options.maxAttempts ?? this.queues.get(queue)?.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
        dedupeKey: options.dedupeKey ?? null,
        concurrencyKey: concurrencyKey(options.concurrencyKey),
        createdAt: now,
        traceparent: currentTraceparent(),
      },
      wakeUp,
    );
    if (wakeUp === 'none' && inserted !== undefined) this.announcer.announce(queue);
    return inserted ?? id;
  }

  /**
   * How an enqueue in `q` wakes the workers: in a transaction, by its NOTIFY at commit; as a statement of its
   * own on the database (committed when it returns), by the announcer afterwards, which spares the statement
   * PostgreSQL's commit lock of notifying transactions (jobs/announcer.ts).
   */
  private wakeUpFor(q: Queryable): JobWakeUp {
    return q === this.db ? 'none' : 'commit';
  }

  /**
   * Adds one job of `queue` per row the caller selects (`payload` and `concurrency_key` columns), in the same
   * statement as the caller's own CTEs: a module can insert its rows and their jobs in one round trip (a
   * webhook fan-out inserts an event's deliveries and their jobs at once). `runAt` is every job's unless the rows
   * are `timed` and say their own. Returns how many jobs it added.
   */
  async enqueueSelected(
    q: Queryable,
    queue: string,
    selected: SelectedJobs,
    options: Pick<EnqueueOptions, 'runAt' | 'maxAttempts'> = {},
  ): Promise<number> {
    const now = this.clock.now();
    const wakeUp = this.wakeUpFor(q);
    const added = await insertSelectedJobs(
      q,
      selected,
      {
        queue,
        idPrefix: newId('job', now.getTime()).slice(0, -16),
        runAt: options.runAt ?? now,
        maxAttempts: options.maxAttempts ?? this.queues.get(queue)?.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
        createdAt: now,
        traceparent: currentTraceparent(),
      },
      wakeUp,
    );
    if (wakeUp === 'none' && added > 0) this.announcer.announce(queue);
    return added;
  }

  /**
   * Claims up to `limit` due jobs of the registered queues in one statement (and, past a capped queue's
   * blocked head, key by key) and runs them. Returns how many ran. Safe to call from any number of processes
   * at once.
   */
  async runDue(limit = this.concurrency): Promise<number> {
    // Every job claimed here runs now: none is claimed ahead.
    const claim = new Slots({ total: limit }).claimable(this.slotQueues(), { ahead: false });
    // `limit` bounds the queues with slots of their own too: at most that many jobs in all.
    const jobs = await this.claim({ ...claim, total: Math.min(claim.total, limit) });
    await Promise.all(jobs.map((job) => this.execute(job)));
    return jobs.length;
  }

  /**
   * Runs due jobs until none is left (tests, and a worker catching up), keeping every slot busy: a slot that
   * frees is filled by the next claim, and jobs the finished ones enqueued are claimed too. `maxRounds`
   * bounds the claims that found work (a job that keeps rescheduling itself to now ends there).
   */
  async drain(maxRounds = 1000): Promise<number> {
    return drainJobs(
      {
        concurrency: this.concurrency,
        queues: () => this.slotQueues(),
        queue: (name) => this.slotQueue(name),
        claim: (claim) => this.claim(claim),
        run: (job) => this.execute(job),
        handBack: (ids) => this.store.handBack(ids),
        nowMs: () => this.clock.nowMs(),
      },
      maxRounds,
    );
  }

  /** Removes jobs that finished (completed or dead) before `before` (retention); returns how many. */
  removeFinished(before: Date): Promise<number> {
    return this.store.removeFinished(before);
  }

  /** Starts working in the background: woken by enqueues, by the next due job, and by a slow poll. */
  start(): void {
    this.worker.start();
  }

  /**
   * Stops claiming and waits for the jobs in hand to finish and be recorded. With `finishWithinMs` (a
   * process shutting down), no longer than that: the jobs still running then are handed back (pending again,
   * the attempt not counted) so another worker takes them at once rather than at lease expiry. Their handlers
   * may still be running here: what they record as the job's outcome is refused (the job is no longer this
   * worker's), and their other effects may happen twice, the at-least-once every handler is written for.
   * Returns how many jobs were handed back.
   */
  async stop(options: { finishWithinMs?: number } = {}): Promise<{ handedBack: number }> {
    const { unfinished, handedBack } = await this.worker.stop(options.finishWithinMs);
    await this.announcer.flush();
    return { handedBack: handedBack + (await this.store.handBack(unfinished.map((job) => job.id))) };
  }

  private slotQueues(): SlotQueue[] {
    return [...this.queues.keys()].map((name) => this.slotQueue(name));
  }

  private slotQueue(name: string): SlotQueue {
    const queue = this.queues.get(name)!;
    return {
      name,
      concurrency: queue.concurrency,
      leaseSeconds: queue.leaseSeconds,
      perKeyConcurrency: queue.perKeyConcurrency,
      ownSlots: queue.ownSlots,
      claimAhead: queue.claimAhead,
    };
  }

  /** Runs one job to its recorded outcome; returns when it is to run again, if it was rescheduled. */
  private async execute(job: Job): Promise<Date | undefined> {
    const registered = this.queues.get(job.queue)!;
    const started = performance.now();
    const labels = { queue: job.queue };
    try {
      await inJobSpan(
        job,
        () => registered.handler(job.payload as never, job as Job<never>),
        (error) => !(error instanceof RetryAt),
      );
      await this.completions.add(job.id);
      this.metrics?.completed.inc(labels);
    } catch (error) {
      // A RetryAt is the handler's plan (a receiver's Retry-After, a retry schedule), not a failure to report.
      if (!(error instanceof RetryAt)) {
        this.onError(error, job);
        this.metrics?.failures.inc(labels);
      }
      const now = this.clock.nowMs();
      const message = error instanceof Error ? error.message : String(error);
      if (error instanceof RetryAt || job.attempts < job.maxAttempts) {
        const runAt =
          error instanceof RetryAt ? error.at : new Date(now + this.backoffMs(registered, job.attempts));
        await this.store.reschedule(job.id, runAt, message);
        return runAt;
      }
      await this.bury(registered, job, error, new Date(now), message);
      this.metrics?.dead.inc(labels);
    } finally {
      this.metrics?.duration.observe(labels, (performance.now() - started) / 1000);
    }
    return undefined;
  }

  /** Marks the job dead and, in the same transaction, tells its queue's `onDead`. */
  private async bury(registered: RegisteredQueue, job: Job, error: unknown, at: Date, message: string) {
    const { onDead } = registered;
    if (onDead) {
      try {
        await this.db.transaction(async (tx) => {
          // A worker whose lease ran out no longer holds the job: the one that does decides its fate.
          if (await this.store.markDead(tx, job.id, at, message)) await onDead(tx, job as Job<never>, error);
        });
        return;
      } catch (hookError) {
        this.onError(hookError, job);
      }
    }
    await this.store.markDead(this.db, job.id, at, message);
  }

  /** Delay after the n-th failure, with ±20% jitter so that retries of many jobs do not arrive together. */
  private backoffMs(registered: RegisteredQueue, attempt: number): number {
    const delays = registered.retryDelaysSeconds;
    const base = delays[Math.min(attempt - 1, delays.length - 1)]! * 1000;
    return Math.round(base * (0.8 + Math.random() * 0.4));
  }
}

/** A key names a group; an empty one would be a group nobody meant. */
function concurrencyKey(key: string | undefined): string | null {
  if (key === undefined) return null;
  if (key === '') throw new Error('A concurrency key must not be empty');
  return key;
}
