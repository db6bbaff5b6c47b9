// Wake-ups for jobs enqueued by a statement of their own (no transaction around it), sent after it committed.
// An enqueue inside a transaction calls pg_notify in its INSERT, delivered at commit; but PostgreSQL makes the
// commits of notifying transactions take turns on one cluster-wide lock held until their WAL is flushed
// (async.c, PreCommit_Notify), so they never share a flush: at a couple of thousand one-statement sends a second
// that lock, not the work, was the limit (docs/performance.md). A statement that returned has committed, so its
// jobs can be announced afterwards instead, and many announcements can share one NOTIFY: this process's
// worker is woken at once, the other processes' by at most one NOTIFY per queue every `intervalMs` (the first
// announcement of a quiet queue at once, the ones after it together at the end of the interval).

export interface JobAnnouncerOptions {
  /** Wakes this process's own worker for `queue` (a no-op when it does not run). */
  wakeLocal: (queue: string) => void;
  /** Sends the NOTIFY that wakes every worker for `queue`. */
  notify: (queue: string) => Promise<void>;
  onError: (error: unknown) => void;
  intervalMs: number;
}

/** How long announcements of one queue wait to share a NOTIFY, at most (ms): other processes' extra delay. */
export const ANNOUNCE_INTERVAL_MS = 10;

export class JobAnnouncer {
  /** Queues announced within the last interval, and whether another announcement came since the last NOTIFY. */
  private readonly recent = new Map<string, { timer: NodeJS.Timeout; again: boolean }>();
  private readonly sending = new Set<Promise<void>>();

  constructor(private readonly options: JobAnnouncerOptions) {}

  /** Jobs of `queue` were committed: wake the workers. */
  announce(queue: string): void {
    this.options.wakeLocal(queue);
    const recent = this.recent.get(queue);
    if (recent) {
      recent.again = true;
      return;
    }
    this.send(queue);
    this.recent.set(queue, { timer: this.later(queue), again: false });
  }

  /** Sends what is still owed now and waits for every NOTIFY under way (a process stopping). */
  async flush(): Promise<void> {
    for (const [queue, recent] of this.recent) {
      clearTimeout(recent.timer);
      if (recent.again) this.send(queue);
    }
    this.recent.clear();
    await Promise.all(this.sending);
  }

  private later(queue: string): NodeJS.Timeout {
    const timer = setTimeout(() => {
      const recent = this.recent.get(queue);
      if (!recent?.again) {
        this.recent.delete(queue);
        return;
      }
      this.send(queue);
      this.recent.set(queue, { timer: this.later(queue), again: false });
    }, this.options.intervalMs);
    timer.unref();
    return timer;
  }

  private send(queue: string): void {
    const sent: Promise<void> = this.options
      .notify(queue)
      .catch((error) => this.options.onError(error))
      .finally(() => this.sending.delete(sent));
    this.sending.add(sent);
  }
}
