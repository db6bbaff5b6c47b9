// The background worker of a JobQueue: keeps its slots busy and sleeps only while nothing is due. It claims
// as many jobs as it has free slots in one statement (and, for a queue that claims ahead, that many more,
// held until a slot frees: slots.ts), claims again the moment a slot frees, and when a
// claim comes back short (nothing more is due) sleeps until the first of: a NOTIFY from an enqueue (the
// `jobs` channel; PGlite and PostgreSQL alike), the next pending job's `run_at`, a move of the test clock,
// or the fallback poll (a lost notification, a dead worker's lease running out, another process's clock).
import type { Clock } from '../clock.ts';
import type { Database } from '../db/index.ts';
import { type SlotQueue, Slots } from './slots.ts';
import { type Claim, JOBS_CHANNEL, type Job, type Quota } from './store.ts';

/**
 * A worker that sleeps until the next scheduled job wakes on this grid of real time (ms), not at the job's
 * exact instant: the jobs falling due within one step (a campaign's paced dispatches, their receipts) are
 * claimed and run together, a batch of a few statements (MessageDispatcher.dispatchBatch) instead of a claim
 * and a transaction each, at the cost of starting a scheduled job up to one step late. Jobs enqueued to run
 * now are not delayed: their NOTIFY wakes the worker at once.
 */
export const DEFAULT_SCHEDULE_STEP_MS = 50;

// When the next job is already due yet could not be claimed (another worker's claim had it locked at that
// instant), look again this soon rather than at once, so two workers never spin on each other.
const RECHECK_MS = 25;

export interface JobWorkerOptions {
  db: Database;
  clock: Clock;
  concurrency: number;
  pollIntervalMs: number;
  /** The grid a sleep until the next scheduled job is rounded up to (DEFAULT_SCHEDULE_STEP_MS); 0: none. */
  scheduleStepMs: number;
  /** The registered queues, read at each claim (a queue may be registered after start). */
  queues: () => SlotQueue[];
  claim: (claim: Claim) => Promise<Job[]>;
  nextRunAt: (quotas: Quota[]) => Promise<Date | undefined>;
  /** Runs one job to its recorded outcome; returns when it is to run again, if it was rescheduled. */
  run: (job: Job) => Promise<Date | undefined>;
  /** Makes claimed jobs that were never started pending again (held too long: Slots); returns how many. */
  handBack: (ids: string[]) => Promise<number>;
  onError: (error: unknown, job?: Job) => void;
}

export class JobWorker {
  private readonly options: JobWorkerOptions;
  private readonly slots: Slots;
  /** The jobs running now, by the promise of their run. */
  private readonly runs = new Map<Promise<void>, Job>();
  private running = false;
  /** A wake-up asked for a claim that has not been made yet. */
  private wanted = false;
  private pumping = false;
  private pump?: Promise<void>;
  /**
   * The last claim came back short, for the shared slots and for the queues with slots of their own apart:
   * until a wake-up says otherwise, nothing more is due in that kind of queue with room. (A claim may fill
   * the shared slots and come back short for the others; a shared slot that frees must then claim again.)
   */
  private short = { shared: false, own: false };
  private timer?: NodeJS.Timeout;
  private timerAt = Number.POSITIVE_INFINITY;
  private listening?: Promise<(() => Promise<void>) | undefined>;
  private stopWatchingClock?: () => void;
  /** When (Date.now()) the worker last came round to a claim; undefined while it is not running. */
  lastTurnAt?: number;

  constructor(options: JobWorkerOptions) {
    this.options = options;
    this.slots = new Slots({ total: options.concurrency });
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.short = { shared: false, own: false };
    this.lastTurnAt = Date.now();
    this.listening = this.listen();
    this.stopWatchingClock = this.options.clock.onMove(() => this.wake());
    this.wake();
  }

  /**
   * Stops claiming, then waits for the jobs in hand to be finished and recorded: all of them, or with
   * `finishWithinMs` no longer than that. Jobs claimed ahead and never started are handed back at once.
   * Returns the jobs still running then (for the caller to hand back) and how many held ones went back.
   */
  async stop(finishWithinMs = Number.POSITIVE_INFINITY): Promise<{ unfinished: Job[]; handedBack: number }> {
    this.running = false;
    this.lastTurnAt = undefined;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    this.stopWatchingClock?.();
    this.stopWatchingClock = undefined;
    const listening = this.listening;
    this.listening = undefined;
    const unlisten = await listening;
    await unlisten?.().catch((error) => this.options.onError(error));
    await this.pump;
    // Jobs claimed ahead (the last claim's among them) never start now: they go back at once, not after the
    // wait, so that another worker may take them. (A slot freed from here on starts none: the worker is not
    // running.)
    const held = this.slots.releaseHeld();
    const heldBack =
      held.length === 0
        ? Promise.resolve(0)
        : this.options.handBack(held.map((job) => job.id)).catch((error) => {
            this.options.onError(error);
            return 0;
          });
    const finished = Promise.allSettled([...this.runs.keys()]);
    if (Number.isFinite(finishWithinMs)) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        finished,
        new Promise((resolve) => {
          timer = setTimeout(resolve, Math.max(0, finishWithinMs));
        }),
      ]);
      clearTimeout(timer);
    } else {
      await finished;
    }
    return { unfinished: [...this.runs.values()], handedBack: await heldBack };
  }

  /** Wakes the worker for jobs of `queue` just committed, if it works that queue (an announcement). */
  nudge(queue: string): void {
    if (this.options.queues().some((known) => known.name === queue)) this.wake();
  }

  /** Asks for a claim as soon as the one under way (if any) is done. */
  private wake(): void {
    if (!this.running) return;
    this.wanted = true;
    this.short = { shared: false, own: false };
    if (this.pumping) return;
    this.pumping = true;
    // After this turn: the jobs whose outcomes one statement wrote end together, and their slots go to
    // one claim rather than a claim for the first and another for the rest.
    this.pump = new Promise((resolve) => setImmediate(resolve)).then(() => this.claimWhileWanted());
  }

  private async claimWhileWanted(): Promise<void> {
    try {
      while (this.running && this.wanted) {
        this.wanted = false;
        await this.fill();
      }
    } finally {
      // Set with no await after the last look at `wanted`, so a wake-up can never fall between the two.
      this.pumping = false;
    }
  }

  /** Claims until the slots are full or nothing more is due, then sets the alarm for the next look. */
  private async fill(): Promise<void> {
    const { clock, pollIntervalMs } = this.options;
    let nextLook = Date.now() + pollIntervalMs;
    this.lastTurnAt = Date.now();
    try {
      // Jobs held too long go back before this turn claims: the claim must not meet them still ours.
      const stale = this.slots.takeStale(clock.nowMs());
      if (stale.length > 0) await this.options.handBack(stale.map((job) => job.id));
      while (this.running) {
        const queues = this.options.queues();
        const claim = this.slots.claimable(queues);
        const wanted = claim.total;
        // Every slot (or every queue's share) is taken: a finishing job calls again.
        if (wanted <= 0) break;
        const jobs = await this.options.claim(claim);
        for (const job of jobs) this.accept(job, queues);
        if (jobs.length === wanted) continue;
        // Short: nothing more is due in the queues that had room. Sleep until the next of them falls due.
        const own = new Set(queues.filter((queue) => queue.ownSlots).map((queue) => queue.name));
        const ownTaken = jobs.filter((job) => own.has(job.queue)).length;
        this.short = {
          shared: jobs.length - ownTaken < claim.sharedTotal,
          own: ownTaken < wanted - claim.sharedTotal,
        };
        const next = await this.options.nextRunAt(this.slots.claimable(queues).quotas);
        if (next) {
          const inMs = next.getTime() - clock.nowMs();
          const at = Date.now() + (inMs > 0 ? inMs + 1 : RECHECK_MS);
          nextLook = Math.min(nextLook, inMs > 0 ? this.onStep(at) : at);
        }
        break;
      }
    } catch (error) {
      this.options.onError(error);
    }
    this.alarm(nextLook);
  }

  /** The first instant of the schedule step grid at or after `at` (DEFAULT_SCHEDULE_STEP_MS). */
  private onStep(at: number): number {
    const step = this.options.scheduleStepMs;
    return step > 0 ? Math.ceil(at / step) * step : at;
  }

  /** Starts a claimed job, or holds it until a slot of its queue frees (claimed ahead). */
  private accept(job: Job, queues: SlotQueue[]): void {
    // A queue registered after the claim cannot hold the job; its shared slot is counted all the same.
    const queue = queues.find((candidate) => candidate.name === job.queue) ?? {
      name: job.queue,
      concurrency: this.slots.total,
      leaseSeconds: 0,
    };
    if (this.slots.canStart(queue)) {
      this.launch(job, queue);
      return;
    }
    // Held: a turn when it will have been held too long, so it goes back then even if no slot frees first.
    const { clock } = this.options;
    const staleAtMs = this.slots.hold(queue, job, clock.nowMs());
    this.alarm(Date.now() + Math.max(0, staleAtMs - clock.nowMs()) + 1);
  }

  private launch(job: Job, queue: SlotQueue): void {
    this.slots.take(queue);
    const run: Promise<void> = this.options
      .run(job)
      .then(
        // A retry (RetryAt, backoff) is due at a time no other wake-up announces: set the alarm for it.
        (again) => {
          if (again) this.alarm(Date.now() + Math.max(0, again.getTime() - this.options.clock.nowMs()) + 1);
        },
        (error) => this.options.onError(error, job),
      )
      .finally(() => {
        this.runs.delete(run);
        const wasAtLimit = this.slots.release(queue);
        // A job claimed ahead takes the slot at once; the claim that tops the hand up comes after.
        if (this.running) {
          const { job: next, stale } = this.slots.nextHeld(queue, this.options.clock.nowMs());
          this.handBack(stale);
          if (next) this.launch(next, queue);
        }
        // The freed slot is filled at once, unless the last claim found nothing more due; a queue that was
        // at its own limit may have due jobs that claim left out, and so may the key of a job that ends.
        const short = queue.ownSlots ? this.short.own : this.short.shared;
        if (!short || wasAtLimit || job.concurrencyKey !== null) this.wake();
      });
    this.runs.set(run, job);
  }

  /** Hands back jobs held too long to start (their claim is undone; any worker may take them again). */
  private handBack(jobs: Job[]): void {
    if (jobs.length === 0) return;
    this.options.handBack(jobs.map((job) => job.id)).then(
      () => this.wake(),
      (error) => this.options.onError(error),
    );
  }

  /** Wakes the worker at `at` (a Date.now() time), unless an earlier wake-up is already set. */
  private alarm(at: number): void {
    if (!this.running || (this.timer && this.timerAt <= at)) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Number.POSITIVE_INFINITY;
        this.wake();
      },
      Math.max(0, at - Date.now()),
    );
  }

  private async listen(): Promise<(() => Promise<void>) | undefined> {
    const { db, onError } = this.options;
    if (!db.listen) return undefined;
    try {
      return await db.listen({
        channel: JOBS_CHANNEL,
        // Without a payload: the connection was made again and notifications may have been lost.
        onNotify: (queue) => {
          if (queue === undefined) this.wake();
          else this.nudge(queue);
        },
        onError: (error) => onError(error),
      });
    } catch (error) {
      // The fallback poll still finds every job, only later.
      onError(error);
      return undefined;
    }
  }
}
