// The SQL of conversations: threads, their timeline items, and the inbox and timeline list queries the one
// paginator runs. Threading is set-based: a batch of items (a campaign's dispatched batch) is one statement.
import type { Queryable } from '../../platform/db/index.ts';
import type { ConversationStatus, ItemType } from './schemas.ts';

export interface ConversationRow {
  id: string;
  organization_id: string;
  phone: string;
  number: string;
  status: ConversationStatus;
  assigned_to: string | null;
  last_activity_at: Date;
  created_at: Date;
  unread_count: number;
  last_message: {
    id: string;
    direction: 'inbound' | 'outbound';
    at: string;
    details: Record<string, unknown>;
  } | null;
}

export interface ItemRow {
  item_id: string;
  kind: ItemType;
  at: Date;
  direction: 'inbound' | 'outbound';
  details: Record<string, unknown>;
}

/** One item to thread: the pair it belongs to and what the timeline shows of it. */
export interface ThreadItem {
  organizationId: string;
  phone: string;
  number: string;
  kind: ItemType;
  itemId: string;
  at: Date;
  direction: 'inbound' | 'outbound';
  details: Record<string, unknown>;
}

/** A thread a batch made: what its conversation.created needs besides the batch's own items. */
export interface NewThreadRow {
  id: string;
  organization_id: string;
  phone: string;
  number: string;
  last_activity_at: Date;
  created_at: Date;
}

/** A thread per pair of a batch: when its newest item happened, and its newest inbound one (reopens it). */
export interface ThreadActivity {
  id: string;
  organizationId: string;
  phone: string;
  number: string;
  lastActivityAt: Date;
  lastInboundAt: Date | null;
}

export const CONVERSATION_SELECT = `c.id, c.organization_id, c.phone, c.number, c.status, c.assigned_to,
  c.last_activity_at, c.created_at,
  (SELECT count(*)::int FROM conversation_items i
    WHERE i.conversation_id = c.id AND i.direction = 'inbound'
      AND (c.last_read_at IS NULL OR i.at > c.last_read_at)) AS unread_count,
  (SELECT jsonb_build_object('id', i.item_id, 'direction', i.direction, 'at', i.at, 'details', i.details)
     FROM conversation_items i WHERE i.conversation_id = c.id AND i.kind = 'message'
    ORDER BY i.at DESC, i.item_id DESC LIMIT 1) AS last_message`;

export interface InboxFilters {
  status: ConversationStatus | null;
  unread: boolean | null;
  assignedTo: string | null;
  number: string | null;
}

export class ConversationStore {
  /**
   * Makes or moves the thread of each pair (a new one starts open; an inbound item reopens a closed one) and
   * puts the items on their timelines, in one statement: this runs in every dispatch batch. `update`: an item
   * seen again takes the newer details; otherwise the first version stays (a reply recorded at send, before
   * its dispatch). `threads` has one entry per pair. Returns the threads this made.
   */
  async thread(
    tx: Queryable,
    threads: ThreadActivity[],
    items: ThreadItem[],
    update: boolean,
    now: Date,
  ): Promise<NewThreadRow[]> {
    if (threads.length === 0) return [];
    return tx.query<NewThreadRow>(
      `WITH touched AS (
         INSERT INTO conversations AS c (id, organization_id, phone, number, status, last_activity_at,
                                         last_inbound_at, created_at, updated_at)
         SELECT t.id, t.organization_id, t.phone, t.number, 'open', t.last_activity_at, t.last_inbound_at, $7, $7
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[])
                AS t(id, organization_id, phone, number, last_activity_at, last_inbound_at)
         ON CONFLICT (organization_id, phone, number) DO UPDATE
            SET last_activity_at = GREATEST(c.last_activity_at, EXCLUDED.last_activity_at),
                last_inbound_at = GREATEST(c.last_inbound_at, EXCLUDED.last_inbound_at),
                status = CASE WHEN EXCLUDED.last_inbound_at IS NULL THEN c.status ELSE 'open' END,
                closed_at = CASE WHEN EXCLUDED.last_inbound_at IS NULL THEN c.closed_at END,
                updated_at = $7
         RETURNING c.id, c.organization_id, c.phone, c.number, c.last_activity_at, c.created_at,
                   (xmax = 0) AS created
       ), put AS (
         INSERT INTO conversation_items (conversation_id, item_id, kind, at, direction, details)
         SELECT touched.id, u.item_id, u.kind, u.at, u.direction, u.details
           FROM unnest($8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::timestamptz[],
                       $14::text[], $15::jsonb[])
                AS u(organization_id, phone, number, item_id, kind, at, direction, details)
           JOIN touched
             ON touched.organization_id = u.organization_id AND touched.phone = u.phone
            AND touched.number = u.number
         ON CONFLICT (conversation_id, item_id) DO ${update ? 'UPDATE SET details = EXCLUDED.details' : 'NOTHING'}
       )
       SELECT id, organization_id, phone, number, last_activity_at, created_at FROM touched WHERE created`,
      [
        threads.map((t) => t.id),
        threads.map((t) => t.organizationId),
        threads.map((t) => t.phone),
        threads.map((t) => t.number),
        threads.map((t) => t.lastActivityAt),
        threads.map((t) => t.lastInboundAt),
        now,
        items.map((item) => item.organizationId),
        items.map((item) => item.phone),
        items.map((item) => item.number),
        items.map((item) => item.itemId),
        items.map((item) => item.kind),
        items.map((item) => item.at),
        items.map((item) => item.direction),
        items.map((item) => JSON.stringify(item.details)),
      ],
    );
  }

  /** New details for items already on a timeline (a text's receipt); an item not threaded is left out. */
  async updateItems(tx: Queryable, items: ThreadItem[]): Promise<void> {
    if (items.length === 0) return;
    await tx.query(
      `UPDATE conversation_items i SET details = u.details
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[])
              AS u(organization_id, phone, number, item_id, details)
         JOIN conversations c
           ON c.organization_id = u.organization_id AND c.phone = u.phone AND c.number = u.number
        WHERE i.conversation_id = c.id AND i.item_id = u.item_id`,
      [
        items.map((item) => item.organizationId),
        items.map((item) => item.phone),
        items.map((item) => item.number),
        items.map((item) => item.itemId),
        items.map((item) => JSON.stringify(item.details)),
      ],
    );
  }

  async find(db: Queryable, organizationId: string, id: string): Promise<ConversationRow | undefined> {
    const [row] = await db.query<ConversationRow>(
      `SELECT ${CONVERSATION_SELECT} FROM conversations c WHERE c.organization_id = $1 AND c.id = $2`,
      [organizationId, id],
    );
    return row;
  }

  /** Locks a thread for a change (status, assignment). */
  async lock(
    tx: Queryable,
    organizationId: string,
    id: string,
  ): Promise<{ status: ConversationStatus; assigned_to: string | null } | undefined> {
    const [row] = await tx.query<{ status: ConversationStatus; assigned_to: string | null }>(
      'SELECT status, assigned_to FROM conversations WHERE organization_id = $1 AND id = $2 FOR UPDATE',
      [organizationId, id],
    );
    return row;
  }

  async update(
    tx: Queryable,
    id: string,
    changes: { status: ConversationStatus; assignedTo: string | null; closedAt: Date | null | undefined },
    now: Date,
  ): Promise<void> {
    await tx.query(
      `UPDATE conversations SET status = $2, assigned_to = $3,
              closed_at = CASE WHEN $4::boolean THEN $5::timestamptz ELSE closed_at END, updated_at = $6
        WHERE id = $1`,
      [id, changes.status, changes.assignedTo, changes.closedAt !== undefined, changes.closedAt ?? null, now],
    );
  }

  /** Everything inbound up to now is read (an item stamped later than the clock is read too). */
  async markRead(db: Queryable, organizationId: string, id: string, now: Date): Promise<boolean> {
    const rows = await db.query(
      `UPDATE conversations SET last_read_at = GREATEST($3::timestamptz, last_inbound_at), updated_at = $3
        WHERE organization_id = $1 AND id = $2 RETURNING 1`,
      [organizationId, id, now],
    );
    return rows.length > 0;
  }

  /** The inbox: newest activity first. */
  inboxQuery(organizationId: string, filters: InboxFilters) {
    const params: unknown[] = [organizationId];
    const where = ['c.organization_id = $1'];
    const next = (value: unknown) => `$${params.push(value)}`;
    if (filters.status) where.push(`c.status = ${next(filters.status)}`);
    if (filters.number) where.push(`c.number = ${next(filters.number)}`);
    if (filters.assignedTo === 'none') where.push('c.assigned_to IS NULL');
    else if (filters.assignedTo) where.push(`c.assigned_to = ${next(filters.assignedTo)}`);
    const unread =
      'c.last_inbound_at IS NOT NULL AND (c.last_read_at IS NULL OR c.last_inbound_at > c.last_read_at)';
    if (filters.unread === true) where.push(`(${unread})`);
    if (filters.unread === false) where.push(`NOT (${unread})`);
    return {
      select: CONVERSATION_SELECT,
      from: 'conversations c',
      where: where.join(' AND '),
      params,
      orderBy: { createdAt: 'c.last_activity_at', id: 'c.id' },
    };
  }

  /** A thread's timeline, newest first. */
  timelineQuery(conversationId: string) {
    return {
      select: 'item_id, kind, at, direction, details',
      from: 'conversation_items',
      where: 'conversation_id = $1',
      params: [conversationId],
      orderBy: { createdAt: 'at', id: 'item_id' },
    };
  }
}
