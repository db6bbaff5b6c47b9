// Webhook endpoints: the rules of managing them (CONTRACT section 5). An endpoint has a URL, the event types
// it subscribes to, and a `whsec_` secret sealed at rest with the secret box (purpose `webhook-secret`, bound
// to the endpoint id). The secret leaves the server twice only: in the creation and the rotation responses.
// After a rotation the previous secret keeps signing, beside the new one, for 24 hours, so receivers can
// switch over without dropping a delivery.
import { randomBytes } from 'node:crypto';
import type { Clock } from '../../platform/clock.ts';
import type { SecretBox } from '../../platform/crypto.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { EventOutbox } from '../../platform/events.ts';
import { checkHost, ForbiddenAddressError, type Resolver } from '../../platform/http/address-guard.ts';
import { newId } from '../../platform/ids.ts';
import type { Paginator } from '../../platform/pagination.ts';
import { WebhookTest } from './events.ts';
import {
  type Delivery,
  type EndpointInput,
  type EndpointPatch,
  MAX_URL_LENGTH,
  type Webhook,
} from './schemas.ts';
import { type AttemptRow, type DeliveryRow, type EndpointRow, WebhookStore } from './store.ts';

export const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;
/** Opened secrets a service keeps (openSecret): a worker's busy endpoints, with room. */
const MAX_OPENED_SECRETS = 1_000;
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

const iso = (date: Date | null) => (date ? date.toISOString() : null);

export function publicEndpoint(row: EndpointRow): Webhook {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    events: row.events,
    enabled: row.enabled,
    disabledReason: row.disabled_reason,
    disabledAt: iso(row.disabled_at),
    failingSince: iso(row.failing_since),
    previousSecretExpiresAt: iso(row.previous_secret_expires_at),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export function publicDelivery(row: DeliveryRow, attempts: AttemptRow[] = []): Delivery {
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    event: { id: row.event_id, type: row.event_type },
    status: row.status,
    attempts: row.attempts,
    lastStatusCode: row.last_status_code,
    lastDurationMs: row.last_duration_ms,
    lastError: row.last_error,
    lastResponseExcerpt: row.last_response_excerpt,
    lastAttemptAt: iso(row.last_attempt_at),
    nextAttemptAt: iso(row.next_attempt_at),
    payload: JSON.parse(row.body) as Record<string, unknown>,
    attemptLog: attempts.map((attempt) => ({
      attempt: attempt.attempt,
      statusCode: attempt.status_code,
      durationMs: attempt.duration_ms,
      error: attempt.error,
      responseExcerpt: attempt.response_excerpt,
      createdAt: attempt.created_at.toISOString(),
    })),
    createdAt: row.created_at.toISOString(),
  };
}

/** `whsec_` + base64 of 32 random bytes: the format `standardwebhooks` and `svix` verifiers take. */
export function newWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;
}

export const DELIVER_QUEUE = 'webhooks.deliver';

export class WebhookService {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly secrets: SecretBox;
  private readonly pagination: Paginator;
  private readonly options: ServiceOptions;
  /** The declared events: an endpoint may subscribe to those only. */
  private readonly events: EventOutbox;
  private readonly store = new WebhookStore();
  /** Secrets opened lately, by endpoint and ciphertext (openSecret); the oldest dropped past MAX_OPENED_SECRETS. */
  private readonly opened = new Map<string, string>();

  constructor(deps: {
    db: Database;
    clock: Clock;
    secrets: SecretBox;
    pagination: Paginator;
    events: EventOutbox;
    options: ServiceOptions;
  }) {
    this.events = deps.events;
    this.db = deps.db;
    this.clock = deps.clock;
    this.secrets = deps.secrets;
    this.pagination = deps.pagination;
    this.options = deps.options;
  }

  /**
   * Opens a sealed secret of endpoint `endpointId`. Every delivery attempt signs with its endpoint's secret,
   * so the secrets opened lately are kept, by endpoint and ciphertext (a rotated secret is another ciphertext):
   * opening one was 4 % of a webhook worker's busy time (docs/performance.md). What fails to open is not kept.
   */
  openSecret(endpointId: string, sealed: string): string {
    const key = `${endpointId}\n${sealed}`;
    let secret = this.opened.get(key);
    if (secret === undefined) {
      secret = this.secrets.open(sealed, endpointId);
      if (this.opened.size >= MAX_OPENED_SECRETS) this.opened.delete(this.opened.keys().next().value!);
      this.opened.set(key, secret);
    }
    return secret;
  }

  async create(organizationId: string, input: EndpointInput) {
    const url = await this.checkUrl(input.url);
    const events = checkEvents(input.events, this.events);
    const now = this.clock.now();
    const id = newId('wh', now.getTime());
    const secret = newWebhookSecret();
    const row = await this.store.insertEndpoint(this.db, {
      id,
      organizationId,
      url,
      description: input.description?.trim() || null,
      events,
      secretSealed: this.secrets.seal(secret, id),
      now,
    });
    return { endpoint: publicEndpoint(row), secret };
  }

  list(
    organizationId: string,
    query: { page?: unknown; limit?: unknown; cursor?: unknown },
    keyset: boolean,
  ) {
    return this.pagination.list(this.db, query, {
      endpoint: keyset ? 'api.webhooks.list' : 'portal.webhooks.list',
      keyset,
      organizationId,
      ...this.store.endpointsQuery(organizationId),
      map: (row: EndpointRow) => publicEndpoint(row),
    });
  }

  async getRow(organizationId: string, id: string, q: Queryable = this.db): Promise<EndpointRow> {
    const row = await this.store.findEndpoint(q, organizationId, id);
    if (!row) throw ApiError.notFound('Webhook');
    return row;
  }

  async get(organizationId: string, id: string): Promise<Webhook> {
    return publicEndpoint(await this.getRow(organizationId, id));
  }

  async update(organizationId: string, id: string, patch: EndpointPatch): Promise<Webhook> {
    await this.getRow(organizationId, id); // an unknown id is a 404 before any validation
    // Checked before the transaction: a URL check may resolve DNS, which must not happen under a row lock.
    const url = patch.url === undefined ? undefined : await this.checkUrl(patch.url);
    const events = patch.events === undefined ? undefined : checkEvents(patch.events, this.events);
    return this.db.transaction(async (tx) => {
      // Applied to the row as it is now, locked: a delivery that disabled the endpoint a moment ago (410, or
      // five days of failures) is not undone by an edit of its description.
      const current = await this.store.lockEndpoint(tx, organizationId, id);
      if (!current) throw ApiError.notFound('Webhook');
      const description =
        patch.description === undefined ? current.description : patch.description?.trim() || null;
      const now = this.clock.now();
      let { enabled, disabled_reason, disabled_at, failing_since } = current;
      if (patch.enabled === true && !current.enabled) {
        // Turned back on: its failure history starts over.
        enabled = true;
        disabled_reason = null;
        disabled_at = null;
        failing_since = null;
      } else if (patch.enabled === false && current.enabled) {
        enabled = false;
        disabled_reason = 'manual';
        disabled_at = now;
      }
      // Another receiver, or one turned back on with a clean record, starts at the first cap.
      if ((url !== undefined && url !== current.url) || (enabled && !current.enabled)) {
        await this.options.resetPace(tx, id);
      }
      const row = await this.store.updateEndpoint(tx, organizationId, id, {
        url: url ?? current.url,
        events: events ?? current.events,
        description,
        enabled,
        disabledReason: disabled_reason,
        disabledAt: disabled_at,
        failingSince: failing_since,
        now,
      });
      return publicEndpoint(row!);
    });
  }

  async remove(organizationId: string, id: string): Promise<Webhook> {
    const row = await this.db.transaction(async (tx) => {
      const deleted = await this.store.deleteEndpoint(tx, organizationId, id);
      if (deleted) await this.options.resetPace(tx, id);
      return deleted;
    });
    if (!row) throw ApiError.notFound('Webhook');
    return publicEndpoint(row);
  }

  /**
   * A new secret; the one it replaces keeps signing beside it for 24 hours. Rotating again within those 24
   * hours retires the oldest at once: only the secret being replaced stays valid.
   */
  async rotateSecret(organizationId: string, id: string) {
    const now = this.clock.now();
    const secret = newWebhookSecret();
    const row = await this.store.rotateSecret(
      this.db,
      organizationId,
      id,
      this.secrets.seal(secret, id),
      new Date(now.getTime() + ROTATION_OVERLAP_MS),
      now,
    );
    if (!row) throw ApiError.notFound('Webhook');
    return { endpoint: publicEndpoint(row), secret };
  }

  /** Queues a `webhook.test` event to this endpoint only. */
  async sendTest(organizationId: string, id: string) {
    const endpoint = await this.getRow(organizationId, id);
    if (!endpoint.enabled) throw ApiError.conflict('This webhook is disabled; enable it before testing it');
    const now = this.clock.now();
    const eventId = newId('evt', now.getTime());
    const body = JSON.stringify({
      type: WebhookTest.type,
      timestamp: now.toISOString(),
      data: { endpointId: endpoint.id, message: 'This is a test event.' },
    });
    return this.db.transaction(async (tx) => {
      const row = await this.store.insertDelivery(tx, {
        id: newId('whd', now.getTime()),
        organizationId,
        endpointId: endpoint.id,
        eventId,
        eventType: WebhookTest.type,
        body,
        now,
      });
      await this.options.enqueue(tx, { id: row.id, endpointId: endpoint.id }, false);
      return publicDelivery(row);
    });
  }

  async deliveries(organizationId: string, endpointId: string, query: { page?: unknown; limit?: unknown }) {
    await this.getRow(organizationId, endpointId);
    const page = await this.pagination.list(this.db, query, {
      endpoint: 'portal.webhooks.deliveries',
      keyset: false,
      organizationId,
      filters: { endpointId },
      ...this.store.deliveriesQuery(organizationId, endpointId),
      map: (row: DeliveryRow) => row,
    });
    const attempts = await this.attemptsOf(page.data.map((row) => row.id));
    return { ...page, data: page.data.map((row) => publicDelivery(row, attempts.get(row.id))) };
  }

  /**
   * Sends one delivery again, once, now (no automatic retries for a manual redelivery). Refused only while a
   * job of the delivery is waiting or running: a pending delivery whose job died or is missing would
   * otherwise never move again.
   */
  async redeliver(organizationId: string, endpointId: string, deliveryId: string) {
    const endpoint = await this.getRow(organizationId, endpointId);
    if (!endpoint.enabled) throw ApiError.conflict('This webhook is disabled; enable it before redelivering');
    const now = this.clock.now();
    return this.db.transaction(async (tx) => {
      const existing = await this.store.lockDelivery(tx, organizationId, endpointId, deliveryId);
      if (!existing) throw ApiError.notFound('Delivery');
      if (existing.status === 'pending' && (await this.options.isQueued(tx, deliveryId))) {
        throw ApiError.conflict('This delivery is still being attempted; wait for it to succeed or fail');
      }
      const row = await this.store.requeueDelivery(tx, deliveryId, now);
      await this.options.enqueue(tx, { id: deliveryId, endpointId }, true);
      return publicDelivery(row, (await this.attemptsOf([deliveryId], tx)).get(deliveryId));
    });
  }

  private async attemptsOf(
    deliveryIds: string[],
    q: Queryable = this.db,
  ): Promise<Map<string, AttemptRow[]>> {
    const byDelivery = new Map<string, AttemptRow[]>();
    if (deliveryIds.length === 0) return byDelivery;
    for (const row of await this.store.attemptsOf(q, deliveryIds)) {
      const list = byDelivery.get(row.delivery_id) ?? [];
      list.push(row);
      byDelivery.set(row.delivery_id, list);
    }
    return byDelivery;
  }

  /**
   * A URL a webhook may be sent to: http or https anywhere but production; in production https only, and
   * its host must not be (or resolve to) a loopback, private, link-local or otherwise non-public address.
   * A name that does not resolve now is accepted: it is checked again at every delivery.
   */
  async checkUrl(raw: string): Promise<string> {
    const text = raw.trim();
    if (text.length === 0 || text.length > MAX_URL_LENGTH) {
      throw ApiError.badRequest(`url must be 1 to ${MAX_URL_LENGTH} characters`);
    }
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw ApiError.badRequest('url must be an absolute http or https URL');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw ApiError.badRequest('url must be an absolute http or https URL');
    }
    // Credentials in a URL would be shown to every member and copied into events; use the signature instead.
    if (url.username || url.password)
      throw ApiError.badRequest('url must not contain a user name or password');
    if (!this.options.production) return url.toString();
    if (url.protocol !== 'https:') throw ApiError.badRequest('url must use https');
    try {
      await checkHost(url.hostname, this.options.resolver);
    } catch (error) {
      if (error instanceof ForbiddenAddressError) {
        throw ApiError.badRequest(`url must point to a public address: ${error.message}`);
      }
    }
    return url.toString();
  }
}

/** Queues an attempt of a delivery of an endpoint; a manual one (a redelivery) gets no retries. */
export type Enqueue = (
  tx: Queryable,
  delivery: { id: string; endpointId: string },
  manual: boolean,
) => Promise<void>;

interface ServiceOptions {
  production: boolean;
  resolver?: Resolver;
  /** Queues an attempt of a delivery (delivery.ts). */
  enqueue: Enqueue;
  /** Whether a job of the delivery is waiting or running (delivery.ts). */
  isQueued: (tx: Queryable, deliveryId: string) => Promise<boolean>;
  /** Puts the endpoint's concurrency back at its first cap, unpaused (delivery.ts). */
  resetPace: (q: Queryable, endpointId: string) => Promise<void>;
}

function checkEvents(events: string[], declared: EventOutbox): string[] {
  const unique = [...new Set(events.map((type) => type.trim()))];
  if (unique.length === 0) throw ApiError.badRequest('events must name at least one event type');
  const unknown = unique.filter((type) => !declared.isDeclared(type));
  if (unknown.length > 0) {
    throw ApiError.badRequest(
      `Unknown event type${unknown.length > 1 ? 's' : ''} ${unknown.map((t) => `"${t}"`).join(', ')}; ` +
        'GET /api/webhooks/events lists them',
    );
  }
  return unique;
}
