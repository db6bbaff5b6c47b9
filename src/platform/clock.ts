// The server's one clock: real time plus an offset. Every time rule (token lifetimes, rate-limit and plan
// windows, Retry-After, the 72-hour receipt rule, cursor expiry, job schedules) reads it, and SQL is handed
// its value rather than calling the database's now(). Only APP_ENV=test may move the offset
// (POST /admin/v1/test/clock). Whoever sleeps until a time of this clock (the job worker) hears of a move.
export class Clock {
  private offsetMs = 0;
  private readonly moveListeners = new Set<() => void>();

  constructor(private readonly movable = false) {}

  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }

  nowMs(): number {
    return Date.now() + this.offsetMs;
  }

  /** Moves the clock forward by `seconds` (test only). */
  advance(seconds: number): Date {
    this.assertMovable();
    this.offsetMs += seconds * 1000;
    this.moved();
    return this.now();
  }

  /** Sets the clock to `instant` (test only). Moving backwards is allowed: tests may need it. */
  set(instant: Date): Date {
    this.assertMovable();
    this.offsetMs = instant.getTime() - Date.now();
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
