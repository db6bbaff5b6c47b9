// A worker's slots: how many jobs run, in all and per queue, what a claim may take now, and the jobs claimed
// ahead of a free slot (a queue's `claimAhead`), held until one frees.
//
// Why claim ahead: slots free in bursts (the jobs whose outcomes one statement wrote end together), and a slot
// that waits for the next claim stands idle for that claim's round trip, while the claims of one worker run
// one at a time. A queue with `claimAhead` keeps that many jobs more than its slots in hand, so a freed slot
// starts the next of them at once and the claim that tops the hand up runs while the slots are busy. A held
// job is claimed (its lease runs, and it counts against its key's room like a running one); one held for longer
// than a quarter of its lease is handed back rather than started, so that a start always leaves the job most
// of its lease (another worker takes a job whose lease ran out).
import type { Claim, Job, Quota } from './store.ts';

/** What the worker needs to know of a registered queue. */
export interface SlotQueue {
  name: string;
  /** At most this many of its jobs at once in one worker. */
  concurrency: number;
  leaseSeconds: number;
  /** At most this many jobs of one concurrency key at once, across every worker. */
  perKeyConcurrency?: number;
  /** Its `concurrency` is a pool of its own, outside the worker's shared slots (QueueOptions.ownSlots). */
  ownSlots?: boolean;
  /** Jobs claimed beyond its slots and held until one frees (QueueOptions.claimAhead; own slots only). */
  claimAhead?: number;
}

/** A job claimed ahead of a free slot, and when (the clock's ms) it has been held too long to start. */
interface HeldJob {
  job: Job;
  staleAtMs: number;
}

/** A held job older than this part of its lease is handed back instead of started. */
const HELD_LEASE_FRACTION = 1 / 4;

/**
 * A worker's slots. A queue with slots of its own (`ownSlots`) counts only against its own `concurrency`,
 * never against the shared total; its `claimAhead` jobs more are claimed and held (see the header).
 */
export class Slots {
  readonly total: number;
  private readonly perQueue = new Map<string, number>();
  /** Jobs running in the shared slots (those of queues with their own slots are not counted). */
  private running = 0;
  /** Jobs claimed ahead, by queue, oldest claim first. */
  private readonly held = new Map<string, HeldJob[]>();

  constructor(options: { total: number }) {
    this.total = options.total;
  }

  /** Shared slots free. */
  get free(): number {
    return this.total - this.running;
  }

  /**
   * What a claim may take now: each queue's room (within the free shared slots, unless it has its own, and
   * then with its `claimAhead` unless `ahead` is false), the most it may take in all, and of the queues that
   * share the slots together.
   */
  claimable(queues: SlotQueue[], options: { ahead?: boolean } = {}): Claim {
    const free = this.free;
    let shared = 0;
    let own = 0;
    const quotas: Quota[] = [];
    for (const queue of queues) {
      const ahead = queue.ownSlots && options.ahead !== false ? (queue.claimAhead ?? 0) : 0;
      const room =
        queue.concurrency + ahead - (this.perQueue.get(queue.name) ?? 0) - this.heldCount(queue.name);
      const limit = queue.ownSlots ? room : Math.min(free, room);
      if (limit <= 0) continue;
      if (queue.ownSlots) own += limit;
      else shared += limit;
      quotas.push({
        queue: queue.name,
        limit,
        leaseSeconds: queue.leaseSeconds,
        perKeyConcurrency: queue.perKeyConcurrency,
        ownSlots: queue.ownSlots,
      });
    }
    const sharedTotal = Math.min(free, shared);
    return { quotas, total: own + sharedTotal, sharedTotal };
  }

  /** Whether a job of `queue` may start now; if not, it is held (hold) until a slot frees. */
  canStart(queue: SlotQueue): boolean {
    return (
      (this.perQueue.get(queue.name) ?? 0) < queue.concurrency && (queue.ownSlots === true || this.free > 0)
    );
  }

  /**
   * Keeps a claimed job of `queue` until a slot of it frees; `nowMs` is the clock's time. Returns when (the
   * clock's ms) it will have been held too long to start.
   */
  hold(queue: SlotQueue, job: Job, nowMs: number): number {
    const held = { job, staleAtMs: nowMs + queue.leaseSeconds * 1000 * HELD_LEASE_FRACTION };
    const hand = this.held.get(queue.name);
    if (hand) hand.push(held);
    else this.held.set(queue.name, [held]);
    return held.staleAtMs;
  }

  /**
   * The oldest job held for `queue`, if a slot of it is free to start it now; the jobs held too long that were
   * ahead of it come out in `stale`, no longer held, for the caller to hand back.
   */
  nextHeld(queue: SlotQueue, nowMs: number): { job?: Job; stale: Job[] } {
    const stale: Job[] = [];
    const hand = this.held.get(queue.name);
    if (!hand || !this.canStart(queue)) return { stale };
    let next = hand.shift();
    while (next && next.staleAtMs <= nowMs) {
      stale.push(next.job);
      next = hand.shift();
    }
    if (hand.length === 0) this.held.delete(queue.name);
    return { job: next?.job, stale };
  }

  /** The held jobs of every queue held too long to start, no longer held (for the caller to hand back). */
  takeStale(nowMs: number): Job[] {
    const stale: Job[] = [];
    for (const [name, hand] of this.held) {
      // Held in claim order, each with the same part of its queue's lease: the stale ones come first.
      while (hand.length > 0 && hand[0]!.staleAtMs <= nowMs) stale.push(hand.shift()!.job);
      if (hand.length === 0) this.held.delete(name);
    }
    return stale;
  }

  /** Every held job, no longer held (a worker that stops hands them back). */
  releaseHeld(): Job[] {
    const jobs = [...this.held.values()].flat().map((held) => held.job);
    this.held.clear();
    return jobs;
  }

  take(queue: SlotQueue): void {
    if (!queue.ownSlots) this.running++;
    this.perQueue.set(queue.name, (this.perQueue.get(queue.name) ?? 0) + 1);
  }

  /** Gives a slot back; true when the queue was at its `concurrency` (so the last claim may have left it out). */
  release(queue: SlotQueue): boolean {
    const count = this.perQueue.get(queue.name) ?? 0;
    if (!queue.ownSlots) this.running--;
    if (count <= 1) this.perQueue.delete(queue.name);
    else this.perQueue.set(queue.name, count - 1);
    return count >= queue.concurrency;
  }

  private heldCount(queue: string): number {
    return this.held.get(queue)?.length ?? 0;
  }
}
