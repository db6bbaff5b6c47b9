// The server's one clock: real time plus an offset. Every time rule (token lifetimes, rate-limit and plan
// windows, Retry-After, the 72-hour receipt rule, cursor expiry, job schedules) reads it, and SQL is handed
// its value rather than calling the database's now(). Only APP_ENV=test may move the offset
// (POST /admin/v1/test/clock).
export class Clock {
  private offsetMs = 0;

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
    return this.now();
  }

  /** Sets the clock to `instant` (test only). Moving backwards is allowed: tests may need it. */
  set(instant: Date): Date {
    this.assertMovable();
    this.offsetMs = instant.getTime() - Date.now();
    return this.now();
  }

  private assertMovable(): void {
    if (!this.movable) throw new Error('The clock can only be moved when APP_ENV=test');
  }
}
