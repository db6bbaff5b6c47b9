// The event outbox. A domain change records its event in the same transaction as the change, so an event
// exists exactly when the change committed. Recording also enqueues a dispatch job in that transaction; the
// job hands the event to every consumer (webhooks fan it out to subscribed endpoints). Consumers must be
// idempotent: dispatch is at-least-once.
import type { Clock } from './clock.ts';
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

export type EventConsumer = (event: DomainEvent) => Promise<void>;

const DISPATCH_QUEUE = 'events.dispatch';

interface EventRow {
  id: string;
  organization_id: string;
  type: string;
  data: Record<string, unknown>;
  created_at: Date;
}

export class EventOutbox {
  private readonly consumers: EventConsumer[] = [];

  constructor(
    private readonly db: Queryable,
    private readonly jobs: JobQueue,
    private readonly clock: Clock,
  ) {
    jobs.register<{ eventId: string }>(DISPATCH_QUEUE, (payload) => this.dispatch(payload.eventId));
  }

  subscribe(consumer: EventConsumer): void {
    this.consumers.push(consumer);
  }

  /** Records an event inside the caller's transaction `tx`. */
  async record(
    tx: Queryable,
    event: { organizationId: string; type: string; data: Record<string, unknown> },
  ): Promise<DomainEvent> {
    const createdAt = this.clock.now();
    const id = newId('evt', createdAt.getTime());
    await tx.query(
      'INSERT INTO events (id, organization_id, type, data, created_at) VALUES ($1, $2, $3, $4::jsonb, $5)',
      [id, event.organizationId, event.type, JSON.stringify(event.data), createdAt],
    );
    await this.jobs.enqueue(tx, DISPATCH_QUEUE, { eventId: id });
    return { id, organizationId: event.organizationId, type: event.type, data: event.data, createdAt };
  }

  async get(id: string): Promise<DomainEvent | undefined> {
    const [row] = await this.db.query<EventRow>('SELECT * FROM events WHERE id = $1', [id]);
    return row && toEvent(row);
  }

  private async dispatch(eventId: string): Promise<void> {
    const event = await this.get(eventId);
    if (!event) return;
    for (const consumer of this.consumers) await consumer(event);
    await this.db.query('UPDATE events SET dispatched_at = $2 WHERE id = $1', [eventId, this.clock.now()]);
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
