// Load shedding for new calls (issue 38; the rule is in docs/voice.md "Real SIP: overload"). Every INVITE outside
// a dialog is an admission: digest, routing and the admission transaction, all of them the database's work. When
// more are offered than the database takes, they queue, each caller waits longer, the trunk's INVITEs time out
// and calls completed per second fall. So a new INVITE whose admission would wait beyond a budget is refused
// at once, `503 Service Unavailable` with `Retry-After` (RFC 3261 section 21.5.4), before any database work.
//
// The wait a newcomer faces is the admissions ahead of it times the interval at which admissions complete while
// there is work: over the last second, the time with admissions in flight divided by the admissions completed
// (Little's law, W = L/λ, with λ measured only while busy). Counting only busy time keeps a quiet line from
// looking slow: one call a second, admitted in 5 ms, measures 5 ms, not a second. A lone admission's whole
// latency overstates the interval when several run at once, but only while few are in flight, where the
// product stays small. Real elapsed time (performance.now), not the platform's clock: this measures the machine.

/**
 * Admission wait beyond which new calls are refused: 2·T1 (1 s; T1 is RFC 3261's 500 ms, after which a client
 * resends an INVITE it had no answer to). The queue it allows is also the wait each later write of an admitted
 * call meets (ringing, answer, end: the same database). In the flood test on PGlite, T1 admitted fewest (86 of
 * 1,000, answered within 0.5 s at the median), 2·T1 more (109–178, within 1.1–1.5 s), 4·T1 no more (128) but
 * slower (3.9 s); and on the loaded machine T1 refused most calls even at a rate the server had completed
 * before (docs/performance.md).
 */
export const ADMISSION_WAIT_BUDGET_MS = 1_000;
/** The longest Retry-After we send: an upstream proxy keeps away from us for that long (RFC 3263 section 4.3). */
export const MAX_RETRY_AFTER_SECONDS = 5;
/**
 * The window the completion interval is measured over, in buckets: recent enough that a slow start (a cold
 * process: its first admissions took 100-500 ms while later ones took 20 ms) is forgotten within a second,
 * long enough to smooth completions that come in clusters (a pool's connections finishing together).
 */
const BUCKET_MS = 100;
const BUCKETS = 10;

export class AdmissionLoad {
  private inFlight = 0;
  /** Per bucket of the window: time with admissions in flight (ms) and admissions completed. */
  private readonly busy = new Array<number>(BUCKETS).fill(0);
  private readonly completed = new Array<number>(BUCKETS).fill(0);
  /** The bucket (time / BUCKET_MS) the last change fell in, and the time of that change. */
  private bucket: number;
  private changedAt: number;
  /** INVITEs refused for overload since the start. */
  refused = 0;

  constructor(
    private readonly now: () => number = () => performance.now(),
    /** The budget; Infinity never refuses (bench/sip.ts measures overload without shedding that way). */
    public budgetMs = ADMISSION_WAIT_BUDGET_MS,
  ) {
    this.changedAt = this.now();
    this.bucket = Math.floor(this.changedAt / BUCKET_MS);
  }

  /**
   * The wait a new admission would have now (ms): those in flight ahead of it, one completion interval each
   * (busy time over completions in the window; with none completed, the busy time itself: stuck is slow).
   */
  expectedWait(): number {
    this.advance();
    if (this.inFlight === 0) return 0;
    let busy = 0;
    let completed = 0;
    for (let i = 0; i < BUCKETS; i++) {
      busy += this.busy[i]!;
      completed += this.completed[i]!;
    }
    return (this.inFlight * busy) / Math.max(1, completed);
  }

  /**
   * Undefined when a new call may be admitted; else the Retry-After (seconds) to refuse it with: the time the
   * queue takes to drain back within the budget at its present pace, at least 1, at most MAX_RETRY_AFTER_SECONDS.
   */
  refusal(): number | undefined {
    const wait = this.expectedWait();
    if (wait <= this.budgetMs) return undefined;
    this.refused++;
    return Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(1, Math.ceil((wait - this.budgetMs) / 1000)));
  }

  /** An admission begins; call the returned function once when it has its answer (admitted or refused). */
  begin(): () => void {
    this.advance();
    this.inFlight++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.advance();
      this.inFlight--;
      this.completed[this.bucket % BUCKETS]!++;
    };
  }

  /** Counts the busy time since the last change into the current bucket, emptying buckets that fell out. */
  private advance(): void {
    const now = this.now();
    const bucket = Math.floor(now / BUCKET_MS);
    for (let next = this.bucket + 1; next <= Math.min(bucket, this.bucket + BUCKETS); next++) {
      this.busy[next % BUCKETS] = 0;
      this.completed[next % BUCKETS] = 0;
    }
    this.bucket = Math.max(this.bucket, bucket);
    if (this.inFlight > 0) this.busy[this.bucket % BUCKETS]! += now - this.changedAt;
    this.changedAt = now;
  }
}
