// Load shedding for new calls (issue 38; the rule is in docs/voice.md "Real SIP: overload"). Every INVITE outside
// a dialog is an admission: digest, routing and the admission transaction, all of them the database's work. When
// more are offered than the database takes, they queue, each caller waits longer, the trunk's INVITEs time out
// and calls completed per second fall. So a new INVITE whose admission would wait beyond a budget is refused
// at once, `503 Service Unavailable` with `Retry-After` (RFC 3261 section 21.5.4), before any database work.
//
// The wait a newcomer faces is the admissions ahead of it times the interval at which admissions complete while
// there is work (inter-departure time in busy periods, the mean of the last few). Counting only busy time keeps a quiet line
// from looking slow: one call a second, admitted in 5 ms, samples 5 ms, not a second. Under concurrency that
// sample overstates the interval (a lone admission's whole latency) only while few are in flight, where the
// product stays small. Real elapsed time (performance.now), not the platform's clock: this measures the machine.

/**
 * Admission wait beyond which new calls are refused: T1 (RFC 3261's 500 ms). The queue it allows is the wait
 * every later write of an admitted call meets too (ringing, answer, end: the same database), so a call's setup
 * slows by a few times this under overload; half a second of admissions still keeps the database busy. With a
 * budget of 1 s, admitted calls on PGlite took up to 16 s to get their final answer in the flood test.
 */
export const ADMISSION_WAIT_BUDGET_MS = 500;
/** The longest Retry-After we send: an upstream proxy keeps away from us for that long (RFC 3263 section 4.3). */
export const MAX_RETRY_AFTER_SECONDS = 5;
/**
 * Completion intervals averaged: enough to smooth completions that come in clusters (a pool's connections
 * finishing together), few enough that a slow first admission (a cold process) is forgotten within a burst.
 */
const SAMPLES = 32;

export class AdmissionLoad {
  private inFlight = 0;
  /** The last SAMPLES intervals between admissions completing while some were in flight (ms), a ring. */
  private readonly samples: number[] = [];
  private nextSample = 0;
  private sampleSum = 0;
  /** Time with admissions in flight since the last completion (ms), up to `changedAt`. */
  private busy = 0;
  private changedAt: number;
  /** INVITEs refused for overload since the start. */
  refused = 0;

  constructor(
    private readonly now: () => number = () => performance.now(),
    /** The budget; Infinity never refuses (bench/sip.ts measures overload without shedding that way). */
    public budgetMs = ADMISSION_WAIT_BUDGET_MS,
  ) {
    this.changedAt = this.now();
  }

  /** The wait a new admission would have now (ms): those in flight ahead of it, one completion interval each. */
  expectedWait(): number {
    if (this.samples.length === 0) return 0;
    return (this.inFlight * this.sampleSum) / this.samples.length;
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
      this.sampleSum += this.busy - (this.samples[this.nextSample] ?? 0);
      this.samples[this.nextSample] = this.busy;
      this.nextSample = (this.nextSample + 1) % SAMPLES;
      this.busy = 0;
    };
  }

  private advance(): void {
    const now = this.now();
    if (this.inFlight > 0) this.busy += now - this.changedAt;
    this.changedAt = now;
  }
}
