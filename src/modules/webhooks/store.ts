// The webhooks module's SQL: endpoints, their deliveries and every attempt of each. Every method takes the
// Queryable to run on, so management (service.ts) and delivery (delivery.ts) decide what shares a
// transaction and what is locked; the rules stay with them.
import { deleteInBatches } from '../../platform/db/batches.ts';
import type { Queryable } from '../../platform/db/index.ts';
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
  > & {
    /** Until when the endpoint's receiver asked us to wait (its key's pause in job_key_caps), if it did. */
    paused_until: Date | null;
  };

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
   * the endpoint's run of failures, if it had one. One statement. Delivery records failures with it (in their
   * transaction); successes go many at a time through DeliveryBatches.
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
