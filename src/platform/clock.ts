// The server's one clock: real time plus an offset. Every time rule (token lifetimes, rate-limit and plan
// windows, Retry-After, the 72-hour receipt rule, cursor expiry, job schedules) reads it, and SQL is handed
// its value rather than calling the database's now(). Only APP_ENV=test may move the offset
// (POST /admin/v1/test/clock). Whoever sleeps until a time of this clock (the job worker) hears of a move.
export class Clock {
  private offsetMs = 0;
  /** Set while a test holds the clock still: the instant it reads, whatever real time does. */
  private frozenAtMs: number | null = null;
  private readonly moveListeners = new Set<() => void>();

  constructor(private readonly movable = false) {}

  now(): Date {
    return new Date(this.nowMs());
  }

  nowMs(): number {
    return this.frozenAtMs ?? Date.now() + this.offsetMs;
  }

  /**
   * Holds the clock still at its current reading (test only) until `set`, `advance` or `thaw` moves it: a
   * test that checks what is not yet due must not lose the race to real time on a slow machine.
   */
  freeze(): Date {
    this.assertMovable();
    this.frozenAtMs = this.nowMs();
    return this.now();
  }

  /** Lets a frozen clock run on in real time from its current reading (test only). */
  thaw(): Date {
    this.assertMovable();
    if (this.frozenAtMs !== null) this.offsetMs = this.frozenAtMs - Date.now();
    this.frozenAtMs = null;
    return this.now();
  }

  /** Moves the clock forward by `seconds` (test only). */
  advance(seconds: number): Date {
    this.assertMovable();
    if (this.frozenAtMs !== null) this.frozenAtMs += seconds * 1000;
    else this.offsetMs += seconds * 1000;
    this.moved();
    return this.now();
  }

  /** Sets the clock to `instant` (test only). Moving backwards is allowed: tests may need it. */
  set(instant: Date): Date {
    this.assertMovable();
    if (this.frozenAtMs !== null) this.frozenAtMs = instant.getTime();
    else this.offsetMs = instant.getTime() - Date.now();
    this.moved();
    return this.now();
  }

  /** Calls `listener` whenever the clock is moved; returns the function that stops it. */
  onMove(listener: () => void): () => void {
    this.moveListeners.add(listener);
    return () => this.moveListeners.delete(listener);
  }

  private moved(): void {
    for (const listener of this.moveListeners) listener();
  }

  private assertMovable(): void {
    if (!this.movable) throw new Error('The clock can only be moved when APP_ENV=test');
  }
}
