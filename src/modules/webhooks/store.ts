// The webhooks module's SQL: endpoints, their deliveries and every attempt of each. Every method takes the
// Queryable to run on, so management (service.ts) and delivery (delivery.ts) decide what shares a
// transaction and what is locked; the rules stay with them.
import { deleteInBatches } from '../../platform/db/batches.ts';
import type { Queryable } from '../../platform/db/index.ts';
import type { SelectedJobs } from '../../platform/jobs.ts';
import type { ListQuery } from '../../platform/pagination.ts';
import type { DeliveryStatus, DisabledReason } from './schemas.ts';

export interface EndpointRow {
  id: string;
  organization_id: string;
  url: string;
  description: string | null;
  events: string[];
  enabled: boolean;
  disabled_reason: DisabledReason | null;
  disabled_at: Date | null;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | null;
  failing_since: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface DeliveryRow {
  id: string;
  organization_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  body: string;
  status: DeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_duration_ms: number | null;
  last_error: string | null;
  last_response_excerpt: string | null;
  last_attempt_at: Date | null;
  next_attempt_at: Date | null;
  created_at: Date;
}

export interface AttemptRow {
  delivery_id: string;
  attempt: number;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  response_excerpt: string | null;
  created_at: Date;
}

/** A delivery with what an attempt needs of its endpoint: where to send, and the secrets to sign with. */
export type DeliveryWithEndpoint = DeliveryRow &
  Pick<
    EndpointRow,
    | 'url'
    | 'enabled'
    | 'secret_sealed'
    | 'previous_secret_sealed'
    | 'previous_secret_expires_at'
    | 'failing_since'
  >;

/** The state an endpoint is written back with after an edit. */
export interface EndpointValues {
  url: string;
  events: string[];
  description: string | null;
  enabled: boolean;
  disabledReason: DisabledReason | null;
  disabledAt: Date | null;
  failingSince: Date | null;
  now: Date;
}

export interface NewDelivery {
  id: string;
  organizationId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  body: string;
  now: Date;
}

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

/** What one attempt of a delivery came to. */
export interface AttemptOutcome {
  attempt: number;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  responseExcerpt: string | null;
  now: Date;
}

// A new delivery is pending and due at once; its parameters are deliveryParams().
const INSERT_DELIVERY = `INSERT INTO webhook_deliveries
  (id, organization_id, endpoint_id, event_id, event_type, body, next_attempt_at, created_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`;

function deliveryParams(delivery: NewDelivery): unknown[] {
  const { id, organizationId, endpointId, eventId, eventType, body, now } = delivery;
  return [id, organizationId, endpointId, eventId, eventType, body, now];
}

type ListSql<Row> = Pick<ListQuery<Row, unknown>, 'select' | 'from' | 'where' | 'params'>;

export class WebhookStore {
  // -------------------------------------------------------------------------------------------------------
  // Endpoints

  async insertEndpoint(
    db: Queryable,
    endpoint: {
      id: string;
      organizationId: string;
      url: string;
      description: string | null;
      events: string[];
      secretSealed: string;
      now: Date;
    },
  ): Promise<EndpointRow> {
    const [row] = await db.query<EndpointRow>(
      `INSERT INTO webhook_endpoints (id, organization_id, url, description, events, secret_sealed, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5::text[], $6, $7, $7) RETURNING *`,
      [
        endpoint.id,
        endpoint.organizationId,
        endpoint.url,
        endpoint.description,
        endpoint.events,
        endpoint.secretSealed,
        endpoint.now,
      ],
    );
    return row!;
  }

  endpointsQuery(organizationId: string): ListSql<EndpointRow> {
    return {
      select: '*',
      from: 'webhook_endpoints',
      where: 'organization_id = $1',
      params: [organizationId],
    };
  }

  async findEndpoint(db: Queryable, organizationId: string, id: string): Promise<EndpointRow | undefined> {
    const [row] = await db.query<EndpointRow>(
      'SELECT * FROM webhook_endpoints WHERE id = $1 AND organization_id = $2',
      [id, organizationId],
    );
    return row;
  }

  /** The endpoint, its row locked for the rest of the transaction. */
  async lockEndpoint(db: Queryable, organizationId: string, id: string): Promise<EndpointRow | undefined> {
    const [row] = await db.query<EndpointRow>(
      'SELECT * FROM webhook_endpoints WHERE id = $1 AND organization_id = $2 FOR UPDATE',
      [id, organizationId],
    );
    return row;
  }

  async updateEndpoint(
    db: Queryable,
    organizationId: string,
    id: string,
    values: EndpointValues,
  ): Promise<EndpointRow | undefined> {
    const [row] = await db.query<EndpointRow>(
      `UPDATE webhook_endpoints SET url = $3, events = $4::text[], description = $5, enabled = $6,
              disabled_reason = $7, disabled_at = $8, failing_since = $9, updated_at = $10
        WHERE id = $1 AND organization_id = $2 RETURNING *`,
      [
        id,
        organizationId,
        values.url,
        values.events,
        values.description,
        values.enabled,
        values.disabledReason,
        values.disabledAt,
        values.failingSince,
        values.now,
      ],
    );
    return row;
  }

  async deleteEndpoint(db: Queryable, organizationId: string, id: string): Promise<EndpointRow | undefined> {
    const [row] = await db.query<EndpointRow>(
      'DELETE FROM webhook_endpoints WHERE id = $1 AND organization_id = $2 RETURNING *',
      [id, organizationId],
    );
    return row;
  }

  /** Makes `secretSealed` the secret; the one it replaces keeps signing until `previousExpiresAt`. */
  async rotateSecret(
    db: Queryable,
    organizationId: string,
    id: string,
    secretSealed: string,
    previousExpiresAt: Date,
    now: Date,
  ): Promise<EndpointRow | undefined> {
    const [row] = await db.query<EndpointRow>(
      // The previous secret is the row's current one as the UPDATE sees it, so two rotations at once each keep
      // the secret the other replaced rather than both keeping the first.
      `UPDATE webhook_endpoints SET previous_secret_sealed = secret_sealed, secret_sealed = $3,
              previous_secret_expires_at = $4, updated_at = $5
        WHERE id = $1 AND organization_id = $2 RETURNING *`,
      [id, organizationId, secretSealed, previousExpiresAt, now],
    );
    return row;
  }

  /** How many endpoints of every organization are healthy, failing (a run of failures) and disabled (metrics). */
  async endpointStates(db: Queryable): Promise<Record<'healthy' | 'failing' | 'disabled', number>> {
    const [row] = await db.query<{ healthy: number; failing: number; disabled: number }>(
      `SELECT count(*) FILTER (WHERE enabled AND failing_since IS NULL)::int AS healthy,
              count(*) FILTER (WHERE enabled AND failing_since IS NOT NULL)::int AS failing,
              count(*) FILTER (WHERE NOT enabled)::int AS disabled
         FROM webhook_endpoints`,
    );
    return row!;
  }

  /** Whether an enabled endpoint of the organization subscribes to `eventType`. */
  async hasSubscribedEndpoint(db: Queryable, organizationId: string, eventType: string): Promise<boolean> {
    const rows = await db.query(
      'SELECT 1 FROM webhook_endpoints WHERE organization_id = $1 AND enabled AND $2 = ANY(events) LIMIT 1',
      [organizationId, eventType],
    );
    return rows.length > 0;
  }

  /** Starts a run of failures at `now` unless one is already going; returns the endpoint as it is now. */
  async markFailing(db: Queryable, endpointId: string, now: Date): Promise<EndpointRow | undefined> {
    const [row] = await db.query<EndpointRow>(
      'UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, $2) WHERE id = $1 RETURNING *',
      [endpointId, now],
    );
    return row;
  }

  /** Disables an enabled endpoint; undefined when it was already disabled. */
  async disableEndpoint(
    db: Queryable,
    endpointId: string,
    reason: DisabledReason,
    now: Date,
  ): Promise<EndpointRow | undefined> {
    const [row] = await db.query<EndpointRow>(
      `UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2, disabled_at = $3, updated_at = $3
        WHERE id = $1 AND enabled RETURNING *`,
      [endpointId, reason, now],
    );
    return row;
  }

  // -------------------------------------------------------------------------------------------------------
  // Deliveries and attempts

  /** A pending delivery, due at `now`. */
  async insertDelivery(db: Queryable, delivery: NewDelivery): Promise<DeliveryRow> {
    const [row] = await db.query<DeliveryRow>(`${INSERT_DELIVERY} RETURNING *`, deliveryParams(delivery));
    return row!;
  }

  /**
   * The deliveries of many events, one per (event, enabled endpoint of its organization subscribed to its
   * type), as the rows of their delivery jobs (JobQueue.enqueueSelected, `timed`): inserted in the jobs'
   * statement, once per event and endpoint (a second fan-out of the same event inserts nothing and so enqueues
   * nothing). Each job carries its endpoint as concurrency key and is due at its event's time, so an
   * endpoint's backlog is claimed oldest event first whichever fan-out wrote it. Ids are `idPrefix` (a
   * newId() head) and a random tail.
   */
  eventsDeliveries(fanOut: { idPrefix: string; now: Date; events: EventToFanOut[] }): SelectedJobs {
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

  deliveriesQuery(organizationId: string, endpointId: string): ListSql<DeliveryRow> {
    return {
      select: '*',
      from: 'webhook_deliveries',
      where: 'organization_id = $1 AND endpoint_id = $2',
      params: [organizationId, endpointId],
    };
  }

  /** The delivery of the endpoint, its row locked for the rest of the transaction. */
  async lockDelivery(
    db: Queryable,
    organizationId: string,
    endpointId: string,
    deliveryId: string,
  ): Promise<DeliveryRow | undefined> {
    const [row] = await db.query<DeliveryRow>(
      'SELECT * FROM webhook_deliveries WHERE id = $1 AND endpoint_id = $2 AND organization_id = $3 FOR UPDATE',
      [deliveryId, endpointId, organizationId],
    );
    return row;
  }

  /** Makes a finished delivery pending again, due at `now`. */
  async requeueDelivery(db: Queryable, deliveryId: string, now: Date): Promise<DeliveryRow> {
    const [row] = await db.query<DeliveryRow>(
      `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = $2 WHERE id = $1 RETURNING *`,
      [deliveryId, now],
    );
    return row!;
  }

  /** The deliveries with what an attempt needs of their endpoints, in one statement (any order). */
  async findDeliveriesWithEndpoint(db: Queryable, deliveryIds: string[]): Promise<DeliveryWithEndpoint[]> {
    return db.query<DeliveryWithEndpoint>(
      `SELECT d.*, e.url, e.enabled, e.secret_sealed, e.previous_secret_sealed, e.previous_secret_expires_at,
              e.failing_since
         FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
        WHERE d.id = ANY($1::text[])`,
      [deliveryIds],
    );
  }

  /** Fails a pending delivery without a further attempt, saying why; a finished one is left as it is. */
  async failPending(db: Queryable, deliveryId: string, error: string): Promise<void> {
    await db.query(
      `UPDATE webhook_deliveries SET status = 'failed', last_error = $2, next_attempt_at = NULL
        WHERE id = $1 AND status = 'pending'`,
      [deliveryId, error],
    );
  }

  /**
   * Records attempt `outcome.attempt` (its row in the attempt log) and writes the delivery's state after it,
   * the latter only if the delivery has made exactly `previousAttempts` so far; on a success it also ends
   * the endpoint's run of failures, if it had one. One statement: a success costs one round trip.
   */
  async recordAttempt(
    db: Queryable,
    attemptId: string,
    delivery: { id: string; endpointId: string; previousAttempts: number },
    outcome: AttemptOutcome & { status: DeliveryStatus; nextAttemptAt: Date | null },
  ): Promise<void> {
    const { status, attempt, statusCode, durationMs, error, responseExcerpt, now, nextAttemptAt } = outcome;
    await db.query(
      `WITH attempt AS (
         INSERT INTO webhook_attempts
           (id, delivery_id, attempt, status_code, duration_ms, error, response_excerpt, created_at)
         VALUES ($11, $1, $4, $5, $6, $7, $8, $9)),
       recovered AS (
         -- Matches (and so writes and locks) the endpoint's row only when there is a run of failures to end.
         UPDATE webhook_endpoints SET failing_since = NULL
          WHERE id = $12 AND $3 = 'succeeded' AND failing_since IS NOT NULL)
       UPDATE webhook_deliveries SET status = $3, attempts = $4, last_status_code = $5, last_duration_ms = $6,
              last_error = $7, last_response_excerpt = $8, last_attempt_at = $9, next_attempt_at = $10
        WHERE id = $1 AND attempts = $2`,
      [
        delivery.id,
        delivery.previousAttempts,
        status,
        attempt,
        statusCode,
        durationMs,
        error,
        responseExcerpt,
        now,
        nextAttemptAt,
        attemptId,
        delivery.endpointId,
      ],
    );
  }

  /**
   * Records many successful attempts in one statement: each one's row in the attempt log, its delivery
   * succeeded (only if it has made exactly `previousAttempts` so far, as recordAttempt), and the end of
   * their endpoints' runs of failures, if any (those rows locked in id order, so that two batches never wait
   * on each other in a circle).
   */
  async recordSuccesses(db: Queryable, successes: Success[]): Promise<void> {
    await db.query(
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

  /** Every attempt of the deliveries, in order of delivery and attempt. */
  async attemptsOf(db: Queryable, deliveryIds: string[]): Promise<AttemptRow[]> {
    return db.query<AttemptRow>(
      'SELECT * FROM webhook_attempts WHERE delivery_id = ANY($1::text[]) ORDER BY delivery_id, attempt',
      [deliveryIds],
    );
  }

  /**
   * Retention: deliveries that finished (succeeded or failed) with their last attempt before `before`, and
   * their attempts (by cascade). A pending one is never taken; one being redelivered is skipped, not waited on.
   */
  async deleteFinishedDeliveries(db: Queryable, before: Date): Promise<number> {
    return deleteInBatches(
      db,
      `DELETE FROM webhook_deliveries WHERE id IN (
         SELECT id FROM webhook_deliveries
          WHERE status IN ('succeeded', 'failed') AND COALESCE(last_attempt_at, created_at) < $1
          LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING 1`,
      [before],
    );
  }
}
