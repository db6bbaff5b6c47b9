// How many attempts one endpoint may have in flight, moved by how its receiver answers (as TCP moves its window:
// slow start, then AIMD, RFC 5681): an endpoint starts at ENDPOINT_CONCURRENCY; after as many quick successes in
// a row as its cap, the cap doubles while the endpoint has never been halved (slow start: a burst to a receiver
// that keeps up reaches the top in three steps, not twenty-eight; a webhook run of 2,000 events spent most of
// itself climbing by ones) and grows by one after that, up to MAX_ENDPOINT_CONCURRENCY; a 429 or 503, a timeout
// or an answer slower than SLOW_ANSWER_MS halves it (at least 1), once per round of attempts (answers to
// attempts started before the last halving do not halve it again), and a 429 or 503 with Retry-After also
// starts no attempt to that endpoint until then (at most MAX_PAUSE_SECONDS). The cap lives with the job queue
// (job_key_caps), which holds it across every worker, with whether it still ramps up; this only decides when to
// move it. Each worker counts its own run of successes, so with several workers a fast receiver's cap grows
// sooner; a halving, and the end of the ramp it brings, is shared at once.
import type { JobQueue } from '../../platform/jobs.ts';
import type { PostResult } from './transport.ts';
import { retryAfterSeconds } from './transport.ts';

/** Attempts of one endpoint in flight at first (and for a key the queue has never moved). */
export const ENDPOINT_CONCURRENCY = 4;
/** The most attempts one endpoint ever has in flight, however well it keeps up. */
export const MAX_ENDPOINT_CONCURRENCY = 32;
/** A success this quick counts toward growth; one slower (but under SLOW_ANSWER_MS) holds the cap. */
export const QUICK_ANSWER_MS = 1000;
/** An answer that takes this long, even a 2xx, means the receiver is struggling: the cap halves. */
export const SLOW_ANSWER_MS = 5000;
/** The longest a Retry-After holds every attempt to an endpoint back (its own delivery may wait 24 h). */
export const MAX_PAUSE_SECONDS = 3600;

interface Pace {
  cap: number;
  /** Quick successes since the cap last moved. */
  quick: number;
  /** Halvings so far: an answer to an attempt started in an earlier round was already answered for. */
  round: number;
  moving: boolean;
}

export class EndpointPace {
  private readonly paces = new Map<string, Pace>();

  /** `initialCap`: the delivery queue's perKeyConcurrency, what an endpoint never moved has. */
  constructor(
    private readonly jobs: JobQueue,
    private readonly queue: string,
    private readonly initialCap = ENDPOINT_CONCURRENCY,
  ) {}

  /** The cap this worker last saw for the endpoint. */
  capOf(endpointId: string): number {
    return this.paces.get(endpointId)?.cap ?? this.initialCap;
  }

  /** Starts the endpoint over (a new URL, turned back on): its stored cap is dropped by the caller. */
  forget(endpointId: string): void {
    this.paces.delete(endpointId);
  }

  /** The round an attempt starting now belongs to; handed back to `observe` with its answer. */
  roundOf(endpointId: string): number {
    return this.pace(endpointId).round;
  }

  private pace(endpointId: string): Pace {
    let pace = this.paces.get(endpointId);
    if (!pace) {
      pace = { cap: this.initialCap, quick: 0, round: 0, moving: false };
      this.paces.set(endpointId, pace);
    }
    return pace;
  }

  /** Takes one attempt's answer into account; `round` is roundOf() when the attempt started. */
  async observe(endpointId: string, round: number, result: PostResult, nowMs: number): Promise<void> {
    const pace = this.pace(endpointId);
    const status = result.statusCode;
    const pushedBack = status === 429 || status === 503;
    const timedOut = status === null && (result.error ?? '').startsWith('Timed out');
    if (pushedBack || timedOut || result.durationMs >= SLOW_ANSWER_MS) {
      pace.quick = 0;
      const asked = pushedBack ? retryAfterSeconds(result.retryAfter, nowMs) : null;
      const pausedUntil =
        asked !== null && asked > 0 ? new Date(nowMs + Math.min(asked, MAX_PAUSE_SECONDS) * 1000) : undefined;
      // One halving per round: the other attempts of the round answered the same overload.
      if (round !== pace.round) {
        if (pausedUntil)
          await this.jobs.adjustKeyCap(this.queue, endpointId, { pause: { until: pausedUntil } });
        return;
      }
      pace.round++;
      pace.cap = await this.jobs.adjustKeyCap(this.queue, endpointId, { halve: { pausedUntil } });
      return;
    }
    const ok = status !== null && status >= 200 && status < 300;
    if (!ok || result.durationMs >= QUICK_ANSWER_MS) {
      if (!ok) pace.quick = 0;
      return;
    }
    pace.quick++;
    if (pace.quick < pace.cap || pace.cap >= MAX_ENDPOINT_CONCURRENCY || pace.moving) return;
    pace.quick = 0;
    pace.moving = true;
    try {
      // Doubled while the endpoint ramps up, one more after its first halving: the job queue keeps which.
      pace.cap = await this.jobs.adjustKeyCap(this.queue, endpointId, {
        grow: { max: MAX_ENDPOINT_CONCURRENCY },
      });
    } finally {
      pace.moving = false;
    }
  }
}
