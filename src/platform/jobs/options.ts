// The job queue's public options and the registered form of a queue (jobs.ts is the queue itself).
import type { Queryable } from '../db/index.ts';
import type { Job } from './store.ts';

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
   * At most this many jobs of the queue run at once in one worker (default: all its slots), so that a
   * backlog of one queue (a campaign's sends) cannot take every slot from the others.
   */
  concurrency?: number;
  /**
   * At most this many jobs of one concurrency key (EnqueueOptions.concurrencyKey) run at once, across every
   * worker on the database, so that one slow key (a webhook endpoint that hangs) holds that many slots and the
   * jobs of other keys keep flowing through the rest. A job without a key is not limited.
   */
  perKeyConcurrency?: number;
  /**
   * The queue's `concurrency` is a pool of slots of its own, outside the worker's shared ones
   * (WORKER_CONCURRENCY): for jobs that spend their time waiting on the network, not the CPU (a webhook
   * delivery waits on its receiver), which would otherwise hold the slots the CPU's work needs and be held
   * to that number themselves. Set `concurrency` with it.
   */
  ownSlots?: boolean;
  /**
   * With `ownSlots`: this many jobs more than its slots are claimed and held, each started the moment a slot
   * frees instead of after the next claim's round trip (jobs/slots.ts). A held job is claimed: its lease runs
   * and it counts against its key's room; one held for a quarter of its lease is handed back, not started.
   * For queues whose jobs end in bursts and are claimed in numbers (event dispatch, webhook deliveries).
   */
  claimAhead?: number;
  /**
   * Called once when a job of the queue gives up (its last attempt failed; a RetryAt never gives up), with
   * the error of that attempt, in the transaction that marks the job dead, so the job's death and its
   * consequence commit together. Only the worker still holding the job calls it. If it throws, the job is
   * marked dead all the same and the hook's error goes to `onError`.
   */
  onDead?: (tx: Queryable, job: Job<Payload>, error: unknown) => Promise<void>;
}

export interface EnqueueOptions {
  runAt?: Date;
  maxAttempts?: number;
  /** A second enqueue with the same key is ignored while the first exists. */
  dedupeKey?: string;
  /** The job's concurrency group, limited by its queue's `perKeyConcurrency`. */
  concurrencyKey?: string;
}

/** A queue as registered: its handler and options with their defaults applied. */
export interface RegisteredQueue {
  handler: JobHandler<never>;
  onDead?: QueueOptions['onDead'];
  maxAttempts: number;
  retryDelaysSeconds: number[];
  leaseSeconds: number;
  concurrency: number;
  perKeyConcurrency?: number;
  ownSlots?: boolean;
  claimAhead?: number;
}
