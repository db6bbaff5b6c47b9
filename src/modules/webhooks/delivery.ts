// Webhook delivery: from the event outbox to the receiver, through the durable job queue.
//   fan-out   the outbox hands each event to `fanOut`, which inserts one delivery per enabled endpoint of the
//             event's organization subscribed to its type, and enqueues its job, in one transaction. Dispatch
//             is at-least-once; UNIQUE (event_id, endpoint_id) makes a second fan-out a no-op.
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
import { Webhook } from 'standardwebhooks';
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import type { DomainEvent, EventOutbox } from '../../platform/events.ts';
import { newId } from '../../platform/ids.ts';
import { type Job, type JobQueue, RetryAt } from '../../platform/jobs.ts';
import type { JobSpec } from '../../platform/module.ts';
import { EndpointDisabled } from './events.ts';
import type { DeliveryStatus } from './schemas.ts';
import { DELIVER_QUEUE, type WebhookService } from './service.ts';
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

  constructor(deps: {
    db: Database;
    clock: Clock;
    jobs: JobQueue;
    events: EventOutbox;
    service: () => WebhookService;
    transport: WebhookTransport;
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.jobs = deps.jobs;
    this.events = deps.events;
    this.service = deps.service;
    this.transport = deps.transport;
    // An attempt that could outlive the lease could be taken up and POSTed again by another worker; half the
    // lease leaves ample room to read the delivery before and record its outcome after.
    if (this.transport.timeoutMs > (LEASE_SECONDS * 1000) / 2) {
      throw new Error(`A delivery attempt's deadline must be under half the job lease (${LEASE_SECONDS} s)`);
    }
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
        onDead: (tx, job, error) => this.gaveUp(tx, job, error),
      },
    };
  }

  enqueue = async (tx: Queryable, deliveryId: string, manual: boolean): Promise<void> => {
    await this.jobs.enqueue(tx, DELIVER_QUEUE, manual ? { deliveryId, manual } : { deliveryId });
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

  /** One delivery per enabled endpoint of the organization subscribed to the event's type. */
  async fanOut(event: DomainEvent): Promise<void> {
    const body = JSON.stringify({
      type: event.type,
      timestamp: event.createdAt.toISOString(),
      data: event.data,
    });
    await this.db.transaction(async (tx) => {
      const endpointIds = await this.store.subscribedEndpointIds(tx, event.organizationId, event.type);
      const now = this.clock.now();
      for (const endpointId of endpointIds) {
        const inserted = await this.store.insertEventDelivery(tx, {
          id: newId('whd', now.getTime()),
          organizationId: event.organizationId,
          endpointId,
          eventId: event.id,
          eventType: event.type,
          body,
          now,
        });
        if (inserted) await this.enqueue(tx, inserted, false);
      }
    });
  }

  /** One attempt of one delivery; throws RetryAt when another attempt is due later. */
  async attempt(job: DeliveryJob): Promise<void> {
    const delivery = await this.store.findDeliveryWithEndpoint(this.db, job.deliveryId);
    if (delivery?.status !== 'pending') return;
    // A job taken up again after a lost lease must not send before the delivery's own schedule.
    if (delivery.next_attempt_at && delivery.next_attempt_at.getTime() > this.clock.nowMs()) {
      throw new RetryAt(delivery.next_attempt_at);
    }
    if (!delivery.enabled) {
      await this.store.failPending(this.db, delivery.id, 'Not attempted: the endpoint is disabled');
      return;
    }

    const now = this.clock.now();
    const secrets = this.signingSecrets(delivery, now);
    const headers = {
      'webhook-id': delivery.event_id,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': secrets
        .map((secret) => new Webhook(secret).sign(delivery.event_id, now, delivery.body))
        .join(' '),
    };
    const result = await this.transport.post(delivery.url, headers, delivery.body);
    const nextAt = await this.record(delivery, result, job.manual === true);
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
    const attempt = delivery.attempts + 1;
    const ok = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
    const error =
      result.error ?? (ok ? null : `Receiver answered ${result.statusCode}${redirect(result.statusCode)}`);

    return this.db.transaction(async (tx) => {
      const outcome = {
        attempt,
        statusCode: result.statusCode,
        durationMs: result.durationMs,
        error,
        responseExcerpt: result.responseExcerpt,
        now,
      };
      await this.store.insertAttempt(tx, newId('wha', now.getTime()), delivery.id, outcome);

      let status: DeliveryStatus = 'succeeded';
      let nextAt: Date | undefined;
      if (ok) {
        // Written only when there is a run of failures to end: a healthy endpoint's row is not rewritten (and
        // row-locked) by every one of its deliveries.
        if (delivery.failing_since) {
          await this.store.clearFailingSince(tx, delivery.endpoint_id);
        }
      } else {
        const endpoint = await this.store.markFailing(tx, delivery.endpoint_id, now);
        // The endpoint's run of failures as it is now (another delivery may have ended it during our POST).
        const failingSince = endpoint!.failing_since ?? now;
        const gone = result.statusCode === 410;
        const failingTooLong = now.getTime() - failingSince.getTime() >= FAILING_DISABLE_AFTER_MS;
        if (gone || failingTooLong) await this.disable(tx, endpoint!, gone ? 'gone' : 'failing', now);
        status = 'failed';
        if (!gone && !failingTooLong && !manual && attempt < MAX_ATTEMPTS) {
          status = 'pending';
          nextAt = this.nextAttemptAt(attempt, result, now);
        }
      }

      // Guarded by the attempt count: if two workers ever ran the same attempt, only one outcome counts.
      await this.store.recordOutcome(tx, delivery.id, delivery.attempts, {
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
