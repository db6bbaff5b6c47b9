// Webhook delivery: from the event outbox to the receiver, through the durable job queue.
//   fan-out   the outbox hands each event to `fanOut`, which inserts one delivery per enabled endpoint of the
//             event's organization subscribed to its type, and its job; the events dispatched together share
//             one statement. Dispatch is at-least-once; UNIQUE (event_id, endpoint_id) makes a second fan-out
//             a no-op. An event no endpoint subscribes to is not dispatched at all (the consumer's `wants`).
//   at once   a delivery's job has its endpoint as concurrency key: at most the endpoint's cap of attempts
//             are in flight across every worker, so a slow receiver cannot take every slot; the cap starts
//             at ENDPOINT_CONCURRENCY and moves with the receiver's answers (endpoint-pace.ts).
//   batches   attempts run together read their deliveries in one statement and record their successes in
//             one (GroupBatch); a failure is a transaction of its own.
//   attempt   each job run makes one POST, signed per Standard Webhooks (webhook-id is the event id, stable
//             across retries; webhook-timestamp is the attempt time by the app clock; webhook-signature holds
//             one `v1,` signature per valid secret). 2xx is success; anything else, a redirect included, fails.
//   retries   the Standard Webhooks schedule: attempts immediately, then after 5 s, 5 min, 30 min, 2 h, 5 h,
//             10 h and 10 h, each delay with ±10% jitter, or later when the receiver's Retry-After asks for
//             longer (capped at 24 h). After the eighth failure the delivery is failed.
//   disabling a 410 disables the endpoint at once; so does a failure when the endpoint has failed without a
//             single success for 5 days. Either records a `webhook.endpoint_disabled` event.
//   deadline  an attempt (DNS, connect, TLS, send, read, the one resend) has 15 s in all (transport.ts), well
//             inside the job's 60 s lease, so no second worker takes the job and POSTs while it is under way.
//   giving up a job that keeps failing without making an attempt (its secret cannot be opened, the database
//             is gone) is marked dead by the queue after its last try; the queue's onDead then fails the
//             delivery, in the same transaction, with the reason as its last error, so it is never left
//             pending with nothing to run it, and it can be redelivered.
// The schedule lives in the job row (RetryAt), so a delivery mid-retry survives a restart, and any instance
// may make the next attempt.
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import type { DomainEvent, EventConsumer, EventOutbox } from '../../platform/events.ts';
import { newId } from '../../platform/ids.ts';
import { type Job, type JobQueue, RetryAt } from '../../platform/jobs.ts';
import type { CounterMetric, HistogramMetric, Meter } from '../../platform/metrics/index.ts';
import type { JobSpec } from '../../platform/module.ts';
import { injectTraceHeaders } from '../../platform/telemetry/index.ts';
import { DeliveryBatches } from './delivery-batches.ts';
import { ENDPOINT_CONCURRENCY, EndpointPace } from './endpoint-pace.ts';
import { EndpointDisabled } from './events.ts';
import type { DeliveryStatus } from './schemas.ts';
import { DELIVER_QUEUE, type Enqueue, type WebhookService } from './service.ts';
import { signedHeaders } from './signature.ts';
import { type DeliveryWithEndpoint, type EndpointRow, WebhookStore } from './store.ts';
import { type PostResult, retryAfterSeconds, type WebhookTransport } from './transport.ts';

/** Seconds before attempt n+1 after attempt n failed (index n-1). Attempt 1 is immediate. */
export const RETRY_SCHEDULE_SECONDS = [5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600, 10 * 3600];
export const MAX_ATTEMPTS = RETRY_SCHEDULE_SECONDS.length + 1;
export const JITTER = 0.1;
export const MAX_RETRY_AFTER_SECONDS = 24 * 3600;
export const FAILING_DISABLE_AFTER_MS = 5 * 24 * 3600 * 1000;
/** How long a worker's claim of a delivery job lasts before another worker may take it. */
export const LEASE_SECONDS = 60;
/**
 * Attempts of one endpoint in flight at first, across every worker (the delivery queue's perKeyConcurrency,
 * keyed by endpoint id); the cap then moves with the receiver's answers (endpoint-pace.ts).
 */
export { ENDPOINT_CONCURRENCY, MAX_ENDPOINT_CONCURRENCY } from './endpoint-pace.ts';

/**
 * Why a delivery cannot be attempted, in words for the delivery log (the owner of the endpoint reads them).
 * Any other error a job gives up on is an internal one, and its text stays in the server's log.
 */
export class UndeliverableError extends Error {}

export interface DeliveryJob {
  deliveryId: string;
  /** A manual redelivery: one attempt, no retries. */
  manual?: boolean;
}

export class WebhookDelivery {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly jobs: JobQueue;
  private readonly events: EventOutbox;
  private readonly service: () => WebhookService;
  private readonly transport: WebhookTransport;
  private readonly store = new WebhookStore();
  private readonly endpointConcurrency: number;
  private readonly concurrency: number;
  private readonly pace: EndpointPace;
  private readonly batches: DeliveryBatches;

  private readonly metrics?: {
    attempts: CounterMetric<'outcome'>;
    duration: HistogramMetric<'outcome'>;
  };

  constructor(deps: {
    db: Database;
    clock: Clock;
    jobs: JobQueue;
    events: EventOutbox;
    service: () => WebhookService;
    transport: WebhookTransport;
    /** Attempts of one endpoint in flight at once (default ENDPOINT_CONCURRENCY). */
    endpointConcurrency?: number;
    /** Attempts in flight at once in one worker, in slots of their own (WEBHOOK_CONCURRENCY). */
    concurrency: number;
    /** Where the delivery metrics are declared (docs/operations.md). */
    meter?: Meter;
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.jobs = deps.jobs;
    this.events = deps.events;
    this.service = deps.service;
    this.transport = deps.transport;
    this.endpointConcurrency = deps.endpointConcurrency ?? ENDPOINT_CONCURRENCY;
    this.concurrency = deps.concurrency;
    this.pace = new EndpointPace(this.jobs, DELIVER_QUEUE, this.endpointConcurrency);
    this.batches = new DeliveryBatches({
      db: this.db,
      clock: this.clock,
      jobs: this.jobs,
      queue: DELIVER_QUEUE,
    });
    if (deps.meter) this.metrics = this.declareMetrics(deps.meter);
    // An attempt that could outlive the lease could be taken up and POSTed again by another worker; half the
    // lease leaves ample room to read the delivery before and record its outcome after.
    if (this.transport.timeoutMs > (LEASE_SECONDS * 1000) / 2) {
      throw new Error(`A delivery attempt's deadline must be under half the job lease (${LEASE_SECONDS} s)`);
    }
  }

  /**
   * Attempts by outcome with their duration, counted as they happen; endpoints by state, read from their table
   * at scrape time (a count per state, never a series per endpoint: their number is unbounded).
   */
  private declareMetrics(meter: Meter) {
    meter.readings({
      gauges: [
        {
          name: 'comms_webhook_endpoints',
          help: 'Webhook endpoints by state: healthy, failing (a run of failures under way), disabled',
          labels: ['state'],
        },
      ],
      read: async () => {
        const counts = await this.store.endpointStates(this.db);
        return {
          comms_webhook_endpoints: (['healthy', 'failing', 'disabled'] as const).map((state) => ({
            labels: { state },
            value: counts[state],
          })),
        };
      },
    });
    return {
      attempts: meter.counter({
        name: 'comms_webhook_deliveries_total',
        help: 'Webhook delivery attempts by outcome: succeeded (a 2xx) or failed (anything else, no answer included)',
        labels: ['outcome'] as const,
      }),
      duration: meter.histogram({
        name: 'comms_webhook_delivery_duration_seconds',
        help: 'Time of one delivery attempt, from its start to the answer (or the failure), by outcome',
        labels: ['outcome'] as const,
      }),
    };
  }

  /** Retention: removes deliveries (and their attempts) finished before `before`; returns how many. */
  removeFinished(before: Date): Promise<number> {
    return this.store.deleteFinishedDeliveries(this.db, before);
  }

  /** The delivery queue, registered by the module (index.ts). */
  get queue(): JobSpec<DeliveryJob> {
    return {
      handler: (payload) => this.attempt(payload),
      // The lease outlasts the attempt's deadline with room to record the outcome; retries are ours
      // (RetryAt), the queue's own backoff only covers the handler failing before it could attempt (a
      // secret that cannot be opened, a lost database). When those tries run out, the delivery fails.
      options: {
        maxAttempts: 50,
        retryDelaysSeconds: [5, 30, 120, 600],
        leaseSeconds: LEASE_SECONDS,
        perKeyConcurrency: this.endpointConcurrency,
        // An attempt waits on its receiver (up to its deadline), not on the CPU: in the worker's shared slots,
        // a few slow receivers would hold the slots of sends and dispatches, and every endpoint's deliveries
        // would be held to that number together whatever the endpoints' own caps allowed.
        concurrency: this.concurrency,
        ownSlots: true,
        // Attempts end in bursts (their outcomes are written together): as many more are claimed and held,
        // started as slots free (docs/performance.md, fourteenth session). A held attempt starts within a
        // quarter of the lease or is handed back, so with its deadline under half the lease it ends inside it.
        claimAhead: this.concurrency,
        onDead: (tx, job, error) => this.gaveUp(tx, job, error),
      },
    };
  }

  /** Queues an attempt of the delivery; its endpoint is the job's concurrency key. */
  enqueue: Enqueue = async (tx, delivery, manual) => {
    const deliveryId = delivery.id;
    await this.jobs.enqueue(tx, DELIVER_QUEUE, manual ? { deliveryId, manual } : { deliveryId }, {
      concurrencyKey: delivery.endpointId,
    });
  };

  /**
   * The outbox's consumer: fans each event out. It wants an event only when an enabled endpoint of the
   * organization subscribes to its type, so an event nobody receives costs no dispatch job.
   */
  readonly consumer: EventConsumer = Object.assign((event: DomainEvent) => this.fanOut(event), {
    wants: (q: Queryable, event: { organizationId: string; type: string }) =>
      this.store.hasSubscribedEndpoint(q, event.organizationId, event.type),
  });

  /**
   * Starts an endpoint's pace over at the first cap, unpaused: its URL changed (another receiver), it was
   * turned back on (a clean record), or it is deleted.
   */
  resetPace = async (q: Queryable, endpointId: string): Promise<void> => {
    this.pace.forget(endpointId);
    await this.jobs.resetKeyCap(q, DELIVER_QUEUE, endpointId);
  };

  /** Whether a job of the delivery is waiting or running: false once it finished, died or never existed. */
  isQueued = (tx: Queryable, deliveryId: string): Promise<boolean> =>
    this.jobs.hasOpenJob(tx, DELIVER_QUEUE, { deliveryId });

  /** The queue gave up on the delivery's job: the delivery fails, saying why, and may be redelivered. */
  private async gaveUp(tx: Queryable, job: Job<DeliveryJob>, error: unknown): Promise<void> {
    const reason =
      error instanceof UndeliverableError ? error.message : 'an internal error kept it from being attempted';
    await this.store.failPending(
      tx,
      job.payload.deliveryId,
      `Gave up after ${job.attempts} tries: ${reason}`,
    );
  }

  /**
   * One delivery per enabled endpoint of the organization subscribed to the event's type, and its job; the
   * events of dispatch jobs run together fan out in one statement (so an event's deliveries and jobs commit
   * together, in one round trip shared by the batch however many endpoints there are).
   */
  async fanOut(event: DomainEvent): Promise<void> {
    const body = JSON.stringify({
      type: event.type,
      timestamp: event.createdAt.toISOString(),
      data: event.data,
    });
    const { id, organizationId, type, createdAt } = event;
    await this.batches.fanOut({ id, organizationId, type, body, createdAt });
  }

  /** One attempt of one delivery; throws RetryAt when another attempt is due later. */
  async attempt(job: DeliveryJob): Promise<void> {
    const delivery = await this.batches.read(job.deliveryId);
    if (delivery?.status !== 'pending') return;
    // A job taken up again after a lost lease must not send before the delivery's own schedule.
    if (delivery.next_attempt_at && delivery.next_attempt_at.getTime() > this.clock.nowMs()) {
      throw new RetryAt(delivery.next_attempt_at);
    }
    // Nor while its receiver asked us to wait: an attempt claimed before the pause (held for a free slot, or
    // started as the pause was written) goes back to wait it out, unsent.
    if (delivery.paused_until && delivery.paused_until.getTime() > this.clock.nowMs()) {
      throw new RetryAt(delivery.paused_until, 'the endpoint asked us to wait');
    }
    if (!delivery.enabled) {
      await this.store.failPending(this.db, delivery.id, 'Not attempted: the endpoint is disabled');
      return;
    }

    const now = this.clock.now();
    const round = this.pace.roundOf(delivery.endpoint_id);
    const secrets = this.signingSecrets(delivery, now);
    const headers = signedHeaders(delivery.event_id, now, delivery.body, secrets);
    // The receiver's trace continues ours: the delivery job's span, the child of what caused the event.
    injectTraceHeaders(headers);
    const result = await this.transport.post(delivery.url, headers, delivery.body);
    const ok = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
    const outcome = ok ? 'succeeded' : 'failed';
    this.metrics?.attempts.inc({ outcome });
    this.metrics?.duration.observe({ outcome }, result.durationMs / 1000);
    const nextAt = await this.record(delivery, result, job.manual === true);
    try {
      await this.pace.observe(delivery.endpoint_id, round, result, this.clock.nowMs());
    } catch {
      // The cap stays where it was; the attempt itself is recorded, which is what must not be lost.
    }
    if (nextAt) throw new RetryAt(nextAt, `webhook delivery failed: ${result.error ?? result.statusCode}`);
  }

  /**
   * The secrets to sign with: the endpoint's, and the one it replaced while that still signs. The current one
   * must open (a delivery signed with nothing the receiver holds is worthless); a previous one that does not
   * (sealed with a key no longer configured) is left out, so rotating the secret is enough to deliver again.
   */
  private signingSecrets(delivery: DeliveryWithEndpoint, now: Date): string[] {
    const service = this.service();
    const secrets: string[] = [];
    try {
      secrets.push(service.openSecret(delivery.endpoint_id, delivery.secret_sealed));
    } catch {
      throw new UndeliverableError(
        "the endpoint's signing secret cannot be opened (the key that sealed it is gone); rotate it, then redeliver",
      );
    }
    const previous = delivery.previous_secret_sealed;
    if (previous && delivery.previous_secret_expires_at && delivery.previous_secret_expires_at > now) {
      try {
        secrets.push(service.openSecret(delivery.endpoint_id, previous));
      } catch {
        // Left out: the receiver was handed the current secret when it replaced this one.
      }
    }
    return secrets;
  }

  /** Records the attempt and its consequences; returns when to try again, if another attempt is due. */
  private async record(
    delivery: DeliveryWithEndpoint,
    result: PostResult,
    manual: boolean,
  ): Promise<Date | undefined> {
    const now = this.clock.now();
    const attemptId = newId('wha', now.getTime());
    const ok = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
    const outcome = {
      attempt: delivery.attempts + 1,
      statusCode: result.statusCode,
      durationMs: result.durationMs,
      error:
        result.error ?? (ok ? null : `Receiver answered ${result.statusCode}${redirect(result.statusCode)}`),
      responseExcerpt: result.responseExcerpt,
      now,
    };
    // Guarded by the attempt count: if two workers ever ran the same attempt, only one outcome counts.
    const target = { id: delivery.id, endpointId: delivery.endpoint_id, previousAttempts: delivery.attempts };

    // A success is a share of one statement (the attempt, the delivery, and the end of the endpoint's run of
    // failures when it had one, for every success recorded at once): most attempts succeed, and this is
    // their whole cost after the POST.
    if (ok) {
      await this.batches.recordSuccess({
        attemptId,
        deliveryId: delivery.id,
        endpointId: delivery.endpoint_id,
        previousAttempts: delivery.attempts,
        attempt: outcome.attempt,
        statusCode: result.statusCode!,
        durationMs: outcome.durationMs,
        responseExcerpt: outcome.responseExcerpt,
        now,
      });
      return undefined;
    }

    return this.db.transaction(async (tx) => {
      const endpoint = await this.store.markFailing(tx, delivery.endpoint_id, now);
      // The endpoint's run of failures as it is now (another delivery may have ended it during our POST).
      const failingSince = endpoint!.failing_since ?? now;
      const gone = result.statusCode === 410;
      const failingTooLong = now.getTime() - failingSince.getTime() >= FAILING_DISABLE_AFTER_MS;
      if (gone || failingTooLong) await this.disable(tx, endpoint!, gone ? 'gone' : 'failing', now);
      let status: DeliveryStatus = 'failed';
      let nextAt: Date | undefined;
      if (!gone && !failingTooLong && !manual && outcome.attempt < MAX_ATTEMPTS) {
        status = 'pending';
        nextAt = this.nextAttemptAt(outcome.attempt, result, now);
      }
      await this.store.recordAttempt(tx, attemptId, target, {
        ...outcome,
        status,
        nextAttemptAt: nextAt ?? null,
      });
      return nextAt;
    });
  }

  private nextAttemptAt(attempt: number, result: PostResult, now: Date): Date {
    const scheduled = RETRY_SCHEDULE_SECONDS[attempt - 1]! * (1 - JITTER + Math.random() * 2 * JITTER);
    const asked = retryAfterSeconds(result.retryAfter, now.getTime());
    const seconds =
      asked !== null ? Math.max(scheduled, Math.min(asked, MAX_RETRY_AFTER_SECONDS)) : scheduled;
    return new Date(now.getTime() + Math.round(seconds * 1000));
  }

  private async disable(tx: Queryable, endpoint: EndpointRow, reason: 'gone' | 'failing', now: Date) {
    const disabled = await this.store.disableEndpoint(tx, endpoint.id, reason, now);
    if (!disabled) return;
    await this.events.record(tx, EndpointDisabled, {
      organizationId: endpoint.organization_id,
      data: {
        endpointId: endpoint.id,
        url: endpoint.url,
        reason,
        failingSince: endpoint.failing_since?.toISOString() ?? null,
        disabledAt: now.toISOString(),
      },
    });
  }
}

function redirect(status: number | null): string {
  return status !== null && status >= 300 && status < 400 ? ' (redirects are not followed)' : '';
}
