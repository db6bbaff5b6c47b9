// The statements delivery jobs that run together share (GroupBatch, group commit): the fan-out of the events
// their dispatch jobs hand over, the read of the deliveries they attempt, and the record of their successes,
// each one set-based statement for the batch instead of one per job. A batch is its own statement: a failure
// fails the jobs of that batch, each retried as it would have been alone. The SQL is here, with the batches.
import type { Clock } from '../../platform/clock.ts';
import { GroupBatch } from '../../platform/db/group-batch.ts';
import type { Database } from '../../platform/db/index.ts';
import { newId } from '../../platform/ids.ts';
import type { JobQueue, SelectedJobs } from '../../platform/jobs.ts';
import type { DeliveryWithEndpoint } from './store.ts';

/** An event as a fan-out reads it: the body every delivery of it sends. */
export interface EventToFanOut {
  id: string;
  organizationId: string;
  type: string;
  body: string;
  createdAt: Date;
}

/** A successful attempt, as recordSuccesses writes it. */
export interface Success {
  attemptId: string;
  deliveryId: string;
  endpointId: string;
  previousAttempts: number;
  attempt: number;
  statusCode: number;
  durationMs: number;
  responseExcerpt: string | null;
  now: Date;
}

export class DeliveryBatches {
  private readonly db: Database;
  private readonly fanOuts: GroupBatch<EventToFanOut>;
  private readonly reads: GroupBatch<string, DeliveryWithEndpoint | undefined>;
  private readonly successes: GroupBatch<Success>;
  /** The delivery queue: its keys (the endpoints) carry the receivers' pauses. */
  private readonly queue: string;

  constructor(deps: { db: Database; clock: Clock; jobs: JobQueue; queue: string }) {
    const { db, clock, jobs, queue } = deps;
    this.db = db;
    this.queue = queue;
    this.fanOuts = new GroupBatch<EventToFanOut>({
      run: async (events) => {
        const now = clock.now();
        await jobs.enqueueSelected(
          db,
          queue,
          this.eventsDeliveries({
            // A newId() head (prefix and time); the statement adds each delivery's random tail.
            idPrefix: newId('whd', now.getTime()).slice(0, -16),
            now,
            events: uniqueById(events),
          }),
        );
        return [];
      },
    });
    this.reads = new GroupBatch<string, DeliveryWithEndpoint | undefined>({
      run: async (ids) => {
        const rows = await this.findDeliveriesWithEndpoint(ids);
        const byId = new Map(rows.map((row) => [row.id, row]));
        return ids.map((id) => byId.get(id));
      },
    });
    this.successes = new GroupBatch<Success>({
      run: async (successes) => {
        await this.recordSuccesses(successes);
        return [];
      },
    });
  }

  /** Fans the event out to its subscribed endpoints (with the other events of its batch). */
  fanOut(event: EventToFanOut): Promise<void> {
    return this.fanOuts.add(event);
  }

  /** The delivery with what an attempt needs of its endpoint (read with the others of its batch). */
  read(deliveryId: string): Promise<DeliveryWithEndpoint | undefined> {
    return this.reads.add(deliveryId);
  }

  /** Records a successful attempt (with the others of its batch). */
  recordSuccess(success: Success): Promise<void> {
    return this.successes.add(success);
  }

  /**
   * The deliveries of many events, one per (event, enabled endpoint of its organization subscribed to its
   * type), as the rows of their delivery jobs (JobQueue.enqueueSelected, `timed`): inserted in the jobs'
   * statement, once per event and endpoint (a second fan-out of the same event inserts nothing and so enqueues
   * nothing). Each job carries its endpoint as concurrency key and is due at its event's time, so an
   * endpoint's backlog is claimed oldest event first whichever fan-out wrote it. Ids are `idPrefix` (a
   * newId() head) and a random tail.
   */
  private eventsDeliveries(fanOut: { idPrefix: string; now: Date; events: EventToFanOut[] }): SelectedJobs {
    const { idPrefix, now, events } = fanOut;
    return {
      with: `event AS (
               SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[])
                        AS event(id, organization_id, type, body, created_at)),
             subscribed AS (
               SELECT event.id AS event_id, event.organization_id, event.type, event.body, event.created_at,
                      endpoint.id AS endpoint_id
                 FROM event JOIN webhook_endpoints AS endpoint
                   ON endpoint.organization_id = event.organization_id AND endpoint.enabled
                  AND event.type = ANY(endpoint.events)),
             delivery AS (
               INSERT INTO webhook_deliveries
                 (id, organization_id, endpoint_id, event_id, event_type, body, next_attempt_at, created_at)
               SELECT $6 || random_id_tail(), organization_id, endpoint_id, event_id, type, body, $7, $7
                 FROM subscribed
               ON CONFLICT (event_id, endpoint_id) DO NOTHING
               RETURNING id, endpoint_id, event_id)`,
      rows: `SELECT jsonb_build_object('deliveryId', delivery.id) AS payload, delivery.endpoint_id AS concurrency_key,
                    event.created_at AS run_at, NULL::text AS dedupe_key
               FROM delivery JOIN event ON event.id = delivery.event_id`,
      timed: true,
      params: [
        events.map((event) => event.id),
        events.map((event) => event.organizationId),
        events.map((event) => event.type),
        events.map((event) => event.body),
        events.map((event) => event.createdAt),
        idPrefix,
        now,
      ],
    };
  }

  /** The deliveries with what an attempt needs of their endpoints, in one statement (any order). */
  private async findDeliveriesWithEndpoint(deliveryIds: string[]): Promise<DeliveryWithEndpoint[]> {
    return this.db.query<DeliveryWithEndpoint>(
      `SELECT d.*, e.url, e.enabled, e.secret_sealed, e.previous_secret_sealed, e.previous_secret_expires_at,
              e.failing_since, caps.paused_until
         FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
         LEFT JOIN job_key_caps caps ON caps.queue = $2 AND caps.concurrency_key = d.endpoint_id
        WHERE d.id = ANY($1::text[])`,
      [deliveryIds, this.queue],
    );
  }

  /**
   * Records many successful attempts in one statement: each one's row in the attempt log, its delivery
   * succeeded (only if it has made exactly `previousAttempts` so far, as recordAttempt), and the end of
   * their endpoints' runs of failures, if any (those rows locked in id order, so that two batches never wait
   * on each other in a circle).
   */
  private async recordSuccesses(successes: Success[]): Promise<void> {
    await this.db.query(
      `WITH outcome AS (
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::int[], $7::int[],
                              $8::text[], $9::timestamptz[])
                  AS outcome(attempt_id, delivery_id, endpoint_id, previous_attempts, attempt, status_code,
                             duration_ms, response_excerpt, at)),
       attempt AS (
         INSERT INTO webhook_attempts
           (id, delivery_id, attempt, status_code, duration_ms, error, response_excerpt, created_at)
         SELECT attempt_id, delivery_id, attempt, status_code, duration_ms, NULL, response_excerpt, at
           FROM outcome),
       failing AS (
         SELECT id FROM webhook_endpoints
          WHERE id IN (SELECT endpoint_id FROM outcome) AND failing_since IS NOT NULL
          ORDER BY id FOR UPDATE),
       recovered AS (
         UPDATE webhook_endpoints SET failing_since = NULL FROM failing WHERE webhook_endpoints.id = failing.id)
       UPDATE webhook_deliveries SET status = 'succeeded', attempts = outcome.attempt,
              last_status_code = outcome.status_code, last_duration_ms = outcome.duration_ms, last_error = NULL,
              last_response_excerpt = outcome.response_excerpt, last_attempt_at = outcome.at,
              next_attempt_at = NULL
         FROM outcome
        WHERE webhook_deliveries.id = outcome.delivery_id AND webhook_deliveries.attempts = outcome.previous_attempts`,
      [
        successes.map((success) => success.attemptId),
        successes.map((success) => success.deliveryId),
        successes.map((success) => success.endpointId),
        successes.map((success) => success.previousAttempts),
        successes.map((success) => success.attempt),
        successes.map((success) => success.statusCode),
        successes.map((success) => success.durationMs),
        successes.map((success) => success.responseExcerpt),
        successes.map((success) => success.now),
      ],
    );
  }
}

/** A dispatch made twice (at-least-once) may bring one event twice into a batch; one row each is enough. */
function uniqueById(events: EventToFanOut[]): EventToFanOut[] {
  return [...new Map(events.map((event) => [event.id, event])).values()];
}
