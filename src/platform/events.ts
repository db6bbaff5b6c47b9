// Declared events and the event outbox. A module declares each event it emits with defineEvent (its type,
// the TypeBox schema of its `data`, a description and an example); the webhook catalog and the OpenAPI
// webhooks section are built from those declarations, and record() accepts only a declared event with data
// of its schema's type. A domain change records its event in the same transaction as the change, so an event
// exists exactly when the change committed. Recording also enqueues a dispatch job in that transaction; the
// job hands the event to every consumer (webhooks fan it out to subscribed endpoints). Consumers must be
// idempotent: dispatch is at-least-once.
import type { Static, TObject } from 'typebox';
import type { Clock } from './clock.ts';
import { deleteInBatches } from './db/batches.ts';
import { GroupBatch } from './db/group-batch.ts';
import type { Queryable } from './db/index.ts';
import { newId } from './ids.ts';
import type { JobQueue } from './jobs.ts';

export interface DomainEvent<Data = Record<string, unknown>> {
  id: string;
  organizationId: string;
  type: string;
  data: Data;
  createdAt: Date;
}

/**
 * Does something with each recorded event, once it committed. `wants`, if given, is asked in the recording
 * transaction whether the consumer has anything to do with an event (webhooks: is any enabled endpoint of the
 * organization subscribed to its type?). An event no consumer wants is recorded as already dispatched and
 * costs no dispatch job: most events (every message sent) have no subscriber, and a job each doubled the
 * work of the pipeline. A consumer without `wants` wants every event.
 */
export type EventConsumer = ((event: DomainEvent) => Promise<void>) & {
  wants?: (q: Queryable, event: { organizationId: string; type: string }) => Promise<boolean>;
};

/**
 * Is told of each recorded event of its `types` inside the recording transaction, so what it keeps commits or
 * rolls back with the change (conversations thread every message and call as it is recorded). It runs on the
 * hot path of whatever records the event: one set-based statement per call, never a network call, and a
 * failure fails the change. `events` are one event or a batch of one type (recordMany).
 */
export interface EventObserver {
  types: readonly string[];
  observe(tx: Queryable, type: string, events: ObservedEvent[]): Promise<void>;
}

export interface ObservedEvent {
  organizationId: string;
  data: Record<string, unknown>;
  createdAt: Date;
}

/** `available` events are emitted by a product that exists; `coming` ones may be subscribed to already. */
export type EventStatus = 'available' | 'coming';

export interface EventDefinition<Schema extends TObject = TObject> {
  type: string;
  /** The shape of the event's `data`; each property's description documents that field. */
  schema: Schema;
  description: string;
  status: EventStatus;
  example: Static<Schema>;
  /** What a field means in this event where it says more than the schema's description (e.g. `sentAt`). */
  fields: Record<string, string>;
}

/** Declares an event a module emits. Declare it in the module's index (its `events`) to make it real. */
export function defineEvent<Schema extends TObject>(
  type: string,
  schema: Schema,
  description: string,
  options: { example: Static<Schema>; status?: EventStatus; fields?: Record<string, string> },
): EventDefinition<Schema> {
  return {
    type,
    schema,
    description,
    status: options.status ?? 'available',
    example: options.example,
    fields: options.fields ?? {},
  };
}

/** One entry of the subscribable catalog (GET /api/webhooks/events). */
export interface CatalogEntry {
  type: string;
  description: string;
  status: EventStatus;
  /** Each field of `data` and what it means. */
  fields: Record<string, string>;
  example: Record<string, unknown>;
  /** The JSON Schema of `data`. */
  schema: Record<string, unknown>;
}

export function catalogEntry(definition: EventDefinition): CatalogEntry {
  const fields: Record<string, string> = {};
  for (const [name, property] of Object.entries(definition.schema.properties)) {
    fields[name] = definition.fields[name] ?? (property as { description?: string }).description ?? name;
  }
  return {
    type: definition.type,
    description: definition.description,
    status: definition.status,
    fields,
    example: definition.example as Record<string, unknown>,
    schema: JSON.parse(JSON.stringify(definition.schema)),
  };
}

const DISPATCH_QUEUE = 'events.dispatch';
/**
 * Dispatches one worker runs at once. With 8 (half the 16 shared slots it once had) the webhook bench's
 * deliveries were held to the fan-out's pace: 333-353 events/s, 494/s with 16, 1,087/s with 64
 * (docs/performance.md, "Webhooks that keep up"). At 64 they still were: the dispatches of one claim make one
 * fan-out batch, so deliveries became due 64 at a time, each wave waiting for the last; 256 took a sustained
 * run from 2,506-2,727 to 3,526-3,554 events/s on PostgreSQL, and 512 was no better (docs/performance.md,
 * twelfth session). A dispatch holds no connection of its own: its reads and writes are batched.
 */
export const DISPATCH_CONCURRENCY = 256;

/**
 * Recording an event NOTIFYs this channel with its organization's id, at commit (live-events.ts: what the
 * console's live stream watches, on every instance).
 */
export const LIVE_EVENTS_CHANNEL = 'live_events';

interface EventRow {
  id: string;
  organization_id: string;
  type: string;
  data: Record<string, unknown>;
  created_at: Date;
}

export class EventOutbox {
  private readonly consumers: EventConsumer[] = [];
  private readonly observers: EventObserver[] = [];
  private readonly declared = new Map<string, EventDefinition>();
  // Dispatch jobs claimed together read their events in one statement and mark them dispatched in another.
  private readonly loads = new GroupBatch<string, DomainEvent | undefined>({
    run: async (ids) => {
      const rows = await this.db.query<EventRow>('SELECT * FROM events WHERE id = ANY($1::text[])', [ids]);
      const byId = new Map(rows.map((row) => [row.id, toEvent(row)]));
      return ids.map((id) => byId.get(id));
    },
  });
  private readonly marks = new GroupBatch<string>({
    run: async (ids) => {
      await this.db.query('UPDATE events SET dispatched_at = $2 WHERE id = ANY($1::text[])', [
        ids,
        this.clock.now(),
      ]);
      return [];
    },
  });

  /**
   * Event dispatch has slots of its own (`dispatchConcurrency`, DISPATCH_CONCURRENCY by default), outside the
   * worker's shared ones: a backlog of events (a campaign's sends, each with its event) never takes a slot
   * from the work users wait on, like message dispatch, and the dispatches running together are written
   * together (their loads, their consumers' fan-out and their marks are batches), so more at once costs
   * the database fewer statements per event, not more.
   */
  constructor(
    private readonly db: Queryable,
    private readonly jobs: JobQueue,
    private readonly clock: Clock,
    options: { dispatchConcurrency?: number } = {},
  ) {
    const concurrency = options.dispatchConcurrency ?? DISPATCH_CONCURRENCY;
    jobs.register<{ eventId: string }>(DISPATCH_QUEUE, (payload) => this.dispatch(payload.eventId), {
      concurrency,
      ownSlots: true,
      // The dispatches of one claim end together (their marks are one statement): the next claim's are in
      // hand by then (docs/performance.md, fourteenth session).
      claimAhead: concurrency,
    });
  }

  subscribe(consumer: EventConsumer): void {
    this.consumers.push(consumer);
  }

  /** Adds an observer told of its events inside the recording transaction (see EventObserver). */
  observe(observer: EventObserver): void {
    this.observers.push(observer);
  }

  private async tellObservers(tx: Queryable, type: string, events: ObservedEvent[]): Promise<void> {
    for (const observer of this.observers) {
      if (observer.types.includes(type)) await observer.observe(tx, type, events);
    }
  }

  /** Makes events recordable and subscribable; each type is declared once, by the module that emits it. */
  declare(...definitions: EventDefinition[]): void {
    for (const definition of definitions) {
      if (this.declared.has(definition.type)) throw new Error(`Event ${definition.type} is declared twice`);
      this.declared.set(definition.type, definition);
    }
  }

  /** Every declared event, in declaration order. */
  definitions(): EventDefinition[] {
    return [...this.declared.values()];
  }

  isDeclared(type: string): boolean {
    return this.declared.has(type);
  }

  /** Records a declared event inside the caller's transaction `tx`. */
  async record<Schema extends TObject>(
    tx: Queryable,
    definition: EventDefinition<Schema>,
    event: { organizationId: string; data: Static<Schema> },
  ): Promise<DomainEvent> {
    if (this.declared.get(definition.type) !== (definition as unknown as EventDefinition)) {
      throw new Error(`Event ${definition.type} is recorded but not declared by its module`);
    }
    return this.insert(tx, { ...event, type: definition.type, data: event.data as Record<string, unknown> });
  }

  /**
   * Records many events of one declared type inside `tx` in one statement (a batch of dispatched messages),
   * each with its dispatch job when a consumer wants it; the same as `record` for each, in fewer round trips.
   */
  async recordMany<Schema extends TObject>(
    tx: Queryable,
    definition: EventDefinition<Schema>,
    events: { organizationId: string; data: Static<Schema> }[],
  ): Promise<void> {
    if (this.declared.get(definition.type) !== (definition as unknown as EventDefinition)) {
      throw new Error(`Event ${definition.type} is recorded but not declared by its module`);
    }
    if (events.length === 0) return;
    const createdAt = this.clock.now();
    // Consumers are asked once per organization: a batch is mostly one organization's (a campaign's).
    const wantedBy = new Map<string, boolean>();
    for (const { organizationId } of events) {
      if (!wantedBy.has(organizationId)) {
        wantedBy.set(organizationId, await this.wanted(tx, { organizationId, type: definition.type }));
      }
    }
    await this.jobs.enqueueSelected(tx, DISPATCH_QUEUE, {
      with: `inserted AS (
               INSERT INTO events (id, organization_id, type, data, created_at, dispatched_at)
               SELECT event.id, event.organization_id, $3, event.data, $4,
                      CASE WHEN event.wanted THEN NULL ELSE $4::timestamptz END
                 FROM unnest($1::text[], $2::text[], $5::jsonb[], $6::boolean[])
                      AS event(id, organization_id, data, wanted)
               RETURNING id, dispatched_at)`,
      rows: `SELECT jsonb_build_object('eventId', inserted.id) AS payload, NULL::text AS concurrency_key
               FROM inserted WHERE inserted.dispatched_at IS NULL`,
      params: [
        events.map(() => newId('evt', createdAt.getTime())),
        events.map((event) => event.organizationId),
        definition.type,
        createdAt,
        events.map((event) => JSON.stringify(event.data)),
        events.map((event) => wantedBy.get(event.organizationId)!),
      ],
    });
    await tx.query('SELECT pg_notify($1, organization_id) FROM unnest($2::text[]) AS organization_id', [
      LIVE_EVENTS_CHANNEL,
      [...wantedBy.keys()],
    ]);
    await this.tellObservers(
      tx,
      definition.type,
      events.map((event) => ({ organizationId: event.organizationId, data: event.data, createdAt })),
    );
  }

  private async insert(
    tx: Queryable,
    event: { organizationId: string; type: string; data: Record<string, unknown> },
  ): Promise<DomainEvent> {
    const createdAt = this.clock.now();
    const id = newId('evt', createdAt.getTime());
    const wanted = await this.wanted(tx, event);
    // The NOTIFY in the same statement: no round trip more per event.
    await tx.query(
      `WITH inserted AS (
         INSERT INTO events (id, organization_id, type, data, created_at, dispatched_at)
         VALUES ($1, $2, $3, $4::jsonb, $5, $6) RETURNING organization_id)
       SELECT pg_notify($7, organization_id) FROM inserted`,
      [
        id,
        event.organizationId,
        event.type,
        JSON.stringify(event.data),
        createdAt,
        wanted ? null : createdAt,
        LIVE_EVENTS_CHANNEL,
      ],
    );
    if (wanted) await this.jobs.enqueue(tx, DISPATCH_QUEUE, { eventId: id });
    await this.tellObservers(tx, event.type, [
      { organizationId: event.organizationId, data: event.data, createdAt },
    ]);
    return { id, organizationId: event.organizationId, type: event.type, data: event.data, createdAt };
  }

  private async wanted(tx: Queryable, event: { organizationId: string; type: string }): Promise<boolean> {
    for (const consumer of this.consumers) {
      if (!consumer.wants || (await consumer.wants(tx, event))) return true;
    }
    return false;
  }

  async get(id: string): Promise<DomainEvent | undefined> {
    const [row] = await this.db.query<EventRow>('SELECT * FROM events WHERE id = $1', [id]);
    return row && toEvent(row);
  }

  /**
   * Removes events dispatched before `before` (retention), a batch at a time; returns how many. Nothing reads
   * an event after its dispatch: webhook deliveries keep their own body. Undispatched events always stay.
   */
  async removeDispatched(before: Date): Promise<number> {
    return deleteInBatches(
      this.db,
      `DELETE FROM events WHERE id IN (SELECT id FROM events WHERE dispatched_at < $1 LIMIT $2) RETURNING 1`,
      [before],
    );
  }

  private async dispatch(eventId: string): Promise<void> {
    const event = await this.loads.add(eventId);
    if (!event) return;
    for (const consumer of this.consumers) await consumer(event);
    await this.marks.add(eventId);
  }
}

function toEvent(row: EventRow): DomainEvent {
  return {
    id: row.id,
    organizationId: row.organization_id,
    type: row.type,
    data: row.data,
    createdAt: row.created_at,
  };
}
