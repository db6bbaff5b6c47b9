// Retention: the scheduled clean-up that keeps tables from growing forever while keeping everything the API
// promises to show. Each module names its rules (`retention` in defineModule) beside the platform's own
// (finished jobs, expired idempotency keys, dispatched events); the queue `platform.retention` runs them all
// once an hour. Every rule deletes in bounded batches (`deleteInBatches`, db/batches.ts), so one clean-up never holds the
// database (on PGlite, its one connection) for long. Windows are listed in docs/architecture.md.
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from './clock.ts';
import type { Database } from './db/index.ts';
import type { EventOutbox } from './events.ts';
import type { Idempotency } from './idempotency.ts';
import type { JobQueue } from './jobs.ts';

/** One kind of row to remove; `run` returns how many rows it removed. */
export interface RetentionRule {
  name: string;
  run(now: Date): Promise<number>;
}

export const RETENTION_QUEUE = 'platform.retention';
const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;
/** Finished jobs (completed or dead) are kept this long after they finished. */
export const FINISHED_JOB_RETENTION_MS = 7 * DAY_MS;
/** Events are kept this long after they were dispatched (webhook deliveries keep their own body). */
export const DISPATCHED_EVENT_RETENTION_MS = 30 * DAY_MS;

/** The platform's own rules: its tables, with the windows above (idempotency keys: their 24-hour window). */
export function platformRetentionRules(platform: {
  jobs: JobQueue;
  idempotency: Idempotency;
  events: EventOutbox;
}): RetentionRule[] {
  return [
    {
      name: 'jobs.finished',
      run: (now) => platform.jobs.removeFinished(new Date(now.getTime() - FINISHED_JOB_RETENTION_MS)),
    },
    { name: 'idempotency.expired', run: (now) => platform.idempotency.removeExpired(now) },
    {
      name: 'events.dispatched',
      run: (now) => platform.events.removeDispatched(new Date(now.getTime() - DISPATCHED_EVENT_RETENTION_MS)),
    },
  ];
}

/** The key naming the hour a run belongs to, so that any number of instances schedule one run per hour. */
export function retentionKey(at: Date): string {
  return `retention:${startOfHour(at).toISOString()}`;
}

function startOfHour(at: Date): Date {
  return new Date(Math.floor(at.getTime() / HOUR_MS) * HOUR_MS);
}

/** Runs every rule on the `platform.retention` queue, once an hour. */
export class Retention {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly jobs: JobQueue;
  private readonly log: FastifyBaseLogger;
  readonly rules: readonly RetentionRule[];

  constructor(deps: {
    db: Database;
    clock: Clock;
    jobs: JobQueue;
    log: FastifyBaseLogger;
    rules: readonly RetentionRule[];
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.jobs = deps.jobs;
    this.log = deps.log;
    this.rules = deps.rules;
    this.jobs.register(RETENTION_QUEUE, () => this.job());
  }

  /** A worker starting: the run of the current hour, unless one was already scheduled for it. */
  async start(): Promise<void> {
    const now = this.clock.now();
    await this.jobs.enqueue(this.db, RETENTION_QUEUE, {}, { runAt: now, dedupeKey: retentionKey(now) });
  }

  /** Schedules the run of the next hour (at its start): the same key from every instance, so one run. */
  async scheduleNext(): Promise<void> {
    const next = new Date(startOfHour(this.clock.now()).getTime() + HOUR_MS);
    await this.jobs.enqueue(this.db, RETENTION_QUEUE, {}, { runAt: next, dedupeKey: retentionKey(next) });
  }

  /** Runs every rule; a failing rule is logged and the others still run. Returns rows removed per rule. */
  async run(): Promise<Record<string, number>> {
    const removed: Record<string, number> = {};
    for (const rule of this.rules) {
      try {
        removed[rule.name] = await rule.run(this.clock.now());
      } catch (error) {
        this.log.error({ err: error, rule: rule.name }, 'retention rule failed');
      }
    }
    this.log.info({ removed }, 'retention ran');
    return removed;
  }

  /** The queue's job: the next run is booked first, so a crash mid-run does not end the schedule. */
  private async job(): Promise<void> {
    await this.scheduleNext();
    await this.run();
  }
}
