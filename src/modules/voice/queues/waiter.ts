// A caller waiting in a queue, in the process whose PBX holds the call: what may interrupt their hold. The
// dispatcher (runtime.ts) offers them members; their maxWaitSeconds runs out. The queue step (flow-queue.ts)
// holds the caller (hold audio, announcements) until one of these comes, then rings the members or leaves the
// queue. Their place in line and their entry's state are the database's (entry-states.ts), not kept here.
import type { Presence } from './member-states.ts';
import type { QueueRow } from './store.ts';

export type Interrupt = { kind: 'offer'; extensionIds: string[] } | { kind: 'timeout' };

export class Waiter {
  /** The hold awaiting an interrupt now, if the caller is holding. */
  private pending?: (why: Interrupt) => void;
  /** An offer made while the caller was not holding (between a ring and the next hold): taken next. */
  private queuedOffer?: Interrupt;
  /** maxWaitSeconds passed: the caller leaves at the next hold (one ringing a member finishes that ring first). */
  private timeUp = false;
  /** When the caller last heard their place, for the next announcement. */
  lastAnnouncedAt?: Date;

  constructor(
    readonly entryId: string,
    readonly callId: string,
    /** The queue as it was when the caller joined: its waits, announcements and onTimeout hold for this call. */
    readonly queue: QueueRow,
    /** Whose phones the caller's PBX rings: a SIP call needs registered members. */
    readonly presence: Presence,
    readonly joinedAt: Date,
  ) {}

  get timedOut(): boolean {
    return this.timeUp;
  }

  /** Waits for the next interrupt (at once, one that came while the caller was not holding). */
  interrupted(): Promise<Interrupt> {
    if (this.timeUp) return Promise.resolve({ kind: 'timeout' });
    const queued = this.queuedOffer;
    if (queued) {
      this.queuedOffer = undefined;
      return Promise.resolve(queued);
    }
    return new Promise((resolve) => {
      this.pending = resolve;
    });
  }

  /** The dispatcher offered the caller to `extensionIds` (their entry is `offered`). */
  offer(extensionIds: string[]): void {
    const why: Interrupt = { kind: 'offer', extensionIds };
    if (!this.interrupt(why)) this.queuedOffer = why;
  }

  /** maxWaitSeconds passed. */
  expire(): void {
    this.timeUp = true;
    this.interrupt({ kind: 'timeout' });
  }

  /** The hold ended by itself (the caller hung up): nothing awaits an interrupt. */
  stopHolding(): void {
    this.pending = undefined;
  }

  private interrupt(why: Interrupt): boolean {
    const pending = this.pending;
    if (!pending) return false;
    this.pending = undefined;
    pending(why);
    return true;
  }
}
