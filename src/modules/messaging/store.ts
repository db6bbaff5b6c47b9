// The messaging module's SQL: its messages, their media, and the counters of the send limits. Every method
// takes the Queryable to run on, so the services decide what shares a transaction; the rules stay with them.
import type { ReceiptStatus } from '../../carriers/carrier.ts';
import type { SqlFragment } from '../../platform/db/fragment.ts';
import type { Queryable } from '../../platform/db/index.ts';
import { type ListQuery, listCounterTotal } from '../../platform/pagination.ts';
import { hourIndexSql } from '../../platform/time-window.ts';
import type { Direction, MessageStatus } from './schemas.ts';
import type { SmsEncoding } from './segments.ts';

export type Origin = 'api' | 'portal' | 'auto_reply' | 'carrier';

export interface MessageFileRecord {
  id: string;
  contentType: string;
  size: number;
  filename: string | null;
}

export interface MessageRow {
  id: string;
  organization_id: string;
  direction: Direction;
  origin: Origin;
  from_number: string;
  to_number: string;
  body: string;
  segments: number;
  encoding: SmsEncoding;
  media_urls: string[];
  media_files: MessageFileRecord[];
  media_count: number;
  status: MessageStatus;
  error_code: string | null;
  error_message: string | null;
  sent_at: Date | null;
  delivered_at: Date | null;
  send_at: Date | null;
  quiet_start: string | null;
  quiet_end: string | null;
  status_updated_at: Date;
  created_at: Date;
}

/** What the API and the message events show of a message (message.ts, toMessage). */
export type MessageViewRow = Omit<MessageRow, 'organization_id' | 'origin' | 'quiet_start' | 'quiet_end'>;

/** A text without media, as inbound texts and automatic replies are. */
export interface TextValues {
  id: string;
  organizationId: string;
  from: string;
  to: string;
  body: string;
  segments: number;
  encoding: SmsEncoding;
  now: Date;
}

export interface OutboundValues extends TextValues {
  origin: 'api' | 'portal';
  mediaUrls: string[];
  mediaFiles: MessageFileRecord[];
  mediaCount: number;
  idempotencyKey: string | null;
  /** Set for a scheduled message: when it is due, and its own quiet hours (scheduled.ts). */
  schedule?: { sendAt: Date; quietHours: { start: string; end: string } | null };
}

export interface MediaValues {
  id: string;
  position: number;
  contentType: string;
  filename: string | null;
  size: number;
  bytes: Uint8Array;
}

/** The filters of the message history, parsed; null leaves a filter out. */
export interface HistoryFilters {
  direction: Direction | null;
  status: MessageStatus | null;
  number: string | null;
  since: Date | null;
  until: Date | null;
}

// The columns a Message is made of (MessageViewRow), and no others: a history page parses each of them 100
// times, so one column fewer is measurable (docs/performance.md). The media bytes stay in message_media.
const MESSAGE_VIEW_COLUMNS = `id, direction, from_number, to_number, body, segments, encoding, media_urls,
  media_files, media_count, status, error_code, error_message, sent_at, delivered_at, send_at, status_updated_at,
  created_at`;

export class MessageStore {
  // -------------------------------------------------------------------------------------------------------
  // Messages

  async insertOutbound(tx: Queryable, values: OutboundValues): Promise<void> {
    const { text, params } = this.outboundInsert(values);
    await tx.query(text, params);
  }

  /**
   * The insert of an outbound message, `RETURNING id`, for a statement that writes more with it; with `after`,
   * a CTE of that statement, inserted for each row it has (none or one).
   */
  outboundInsert(values: OutboundValues, after?: string): SqlFragment {
    const row = `$1, $2, 'outbound', $3, $4, $5, $6, $7, $8, $9::jsonb, $10::jsonb, $11,
               CASE WHEN $14::timestamptz IS NULL THEN 'queued' ELSE 'scheduled' END, $12, $13, $13, $14, $15, $16`;
    return {
      text: `INSERT INTO messages (id, organization_id, direction, origin, from_number, to_number, body, segments,
                             encoding, media_urls, media_files, media_count, status, idempotency_key,
                             status_updated_at, created_at, send_at, quiet_start, quiet_end)
       ${after ? `SELECT ${row} FROM ${after}` : `VALUES (${row})`}
       RETURNING id`,
      params: [
        values.id,
        values.organizationId,
        values.origin,
        values.from,
        values.to,
        values.body,
        values.segments,
        values.encoding,
        JSON.stringify(values.mediaUrls),
        JSON.stringify(values.mediaFiles),
        values.mediaCount,
        values.idempotencyKey,
        values.now,
        values.schedule?.sendAt ?? null,
        values.schedule?.quietHours?.start ?? null,
        values.schedule?.quietHours?.end ?? null,
      ],
    };
  }

  async insertMedia(tx: Queryable, messageId: string, file: MediaValues): Promise<void> {
    await tx.query(
      `INSERT INTO message_media (id, message_id, position, content_type, filename, size, bytes)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [file.id, messageId, file.position, file.contentType, file.filename, file.size, file.bytes],
    );
  }

  /**
   * A received text; with the carrier's id of it, undefined when that carrier already reported it (the
   * unique messages_carrier_id index decides, so two concurrent reports of one text store it once).
   */
  async insertInbound(
    tx: Queryable,
    values: TextValues & { carrier?: { name: string; messageId: string } },
  ): Promise<MessageRow | undefined> {
    const [row] = await tx.query<MessageRow>(
      `INSERT INTO messages (id, organization_id, direction, origin, from_number, to_number, body, segments,
                             encoding, status, status_updated_at, created_at, carrier, carrier_message_id)
       VALUES ($1, $2, 'inbound', 'carrier', $3, $4, $5, $6, $7, 'received', $8, $8, $9, $10)
       ON CONFLICT (carrier, carrier_message_id) WHERE carrier_message_id IS NOT NULL DO NOTHING
       RETURNING *`,
      [...textParams(values), values.carrier?.name ?? null, values.carrier?.messageId ?? null],
    );
    return row;
  }

  /** An automatic keyword reply, queued like any outbound message but with no media and no idempotency key. */
  async insertAutoReply(tx: Queryable, values: TextValues): Promise<MessageRow> {
    const [row] = await tx.query<MessageRow>(
      `INSERT INTO messages (id, organization_id, direction, origin, from_number, to_number, body, segments,
                             encoding, status, status_updated_at, created_at)
       VALUES ($1, $2, 'outbound', 'auto_reply', $3, $4, $5, $6, $7, 'queued', $8, $8) RETURNING *`,
      textParams(values),
    );
    return row!;
  }

  async find(db: Queryable, id: string): Promise<MessageRow | undefined> {
    const [row] = await db.query<MessageRow>('SELECT * FROM messages WHERE id = $1', [id]);
    return row;
  }

  /** A message with its organization's suspension, for the dispatcher (one read for both). */
  async findForDispatch(
    db: Queryable,
    id: string,
  ): Promise<(MessageRow & { organization_suspended: boolean }) | undefined> {
    const [row] = await db.query<MessageRow & { organization_suspended: boolean }>(
      `SELECT m.*, o.suspended AS organization_suspended
         FROM messages m JOIN organizations o ON o.id = m.organization_id WHERE m.id = $1`,
      [id],
    );
    return row;
  }

  /** Several messages for their dispatch, with whether their organization is suspended (a batch's one read). */
  async findManyForDispatch(
    db: Queryable,
    ids: string[],
  ): Promise<(MessageRow & { organization_suspended: boolean })[]> {
    return db.query<MessageRow & { organization_suspended: boolean }>(
      `SELECT m.*, o.suspended AS organization_suspended
         FROM messages m JOIN organizations o ON o.id = m.organization_id WHERE m.id = ANY($1::text[])`,
      [ids],
    );
  }

  async findInOrganization(
    db: Queryable,
    organizationId: string,
    id: string,
  ): Promise<MessageRow | undefined> {
    const [row] = await db.query<MessageRow>(
      'SELECT * FROM messages WHERE organization_id = $1 AND id = $2',
      [organizationId, id],
    );
    return row;
  }

  /** Records the carrier's acceptance of a queued message; undefined if it is no longer queued. */
  async markSent(
    tx: Queryable,
    id: string,
    carrier: { name: string; messageId: string },
    now: Date,
  ): Promise<MessageRow | undefined> {
    const [row] = await tx.query<MessageRow>(
      `UPDATE messages SET status = 'sent', carrier = $2, carrier_message_id = $3, sent_at = $4,
              status_updated_at = $4
        WHERE id = $1 AND status = 'queued' RETURNING *`,
      [id, carrier.name, carrier.messageId, now],
    );
    return row;
  }

  /** The message a carrier knows by `carrierMessageId` (unique per carrier: messages_carrier_id). */
  async idByCarrierId(q: Queryable, carrier: string, carrierMessageId: string): Promise<string | undefined> {
    const [row] = await q.query<{ id: string }>(
      'SELECT id FROM messages WHERE carrier = $1 AND carrier_message_id = $2',
      [carrier, carrierMessageId],
    );
    return row?.id;
  }

  /** markSent for a batch the carrier accepted, in one statement; returns the rows that were still queued. */
  async markManySent(
    tx: Queryable,
    carrier: string,
    accepted: { id: string; carrierMessageId: string }[],
    now: Date,
  ): Promise<MessageRow[]> {
    if (accepted.length === 0) return [];
    return tx.query<MessageRow>(
      `UPDATE messages m SET status = 'sent', carrier = $3, carrier_message_id = sent.carrier_message_id,
              sent_at = $4, status_updated_at = $4
         FROM unnest($1::text[], $2::text[]) AS sent(id, carrier_message_id)
        WHERE m.id = sent.id AND m.status = 'queued' RETURNING m.*`,
      [accepted.map((item) => item.id), accepted.map((item) => item.carrierMessageId), carrier, now],
    );
  }

  /** finishQueued for a batch, each with its own status and error, in one statement; the rows it ended. */
  async finishManyQueued(
    tx: Queryable,
    ended: { id: string; status: 'failed' | 'cancelled'; errorCode: string; errorMessage: string }[],
    now: Date,
  ): Promise<MessageRow[]> {
    if (ended.length === 0) return [];
    return tx.query<MessageRow>(
      `UPDATE messages m SET status = ended.status, error_code = ended.error_code,
              error_message = ended.error_message, status_updated_at = $5
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
              AS ended(id, status, error_code, error_message)
        WHERE m.id = ended.id AND m.status = 'queued' RETURNING m.*`,
      [
        ended.map((item) => item.id),
        ended.map((item) => item.status),
        ended.map((item) => item.errorCode),
        ended.map((item) => item.errorMessage),
        now,
      ],
    );
  }

  /** Ends a queued message without sending it; undefined if it is no longer queued. */
  async finishQueued(
    tx: Queryable,
    id: string,
    status: 'failed' | 'cancelled',
    error: { errorCode: string; errorMessage: string },
    now: Date,
  ): Promise<MessageRow | undefined> {
    const [row] = await tx.query<MessageRow>(
      `UPDATE messages SET status = $2, error_code = $3, error_message = $4, status_updated_at = $5
        WHERE id = $1 AND status = 'queued' RETURNING *`,
      [id, status, error.errorCode, error.errorMessage, now],
    );
    return row;
  }

  /**
   * Moves a sent message to a receipt's status. The error is kept for a failure and cleared on delivery;
   * undefined if the message is not `sent`.
   */
  async recordReceipt(
    tx: Queryable,
    id: string,
    status: ReceiptStatus,
    error: { errorCode: string; errorMessage: string },
    now: Date,
  ): Promise<MessageRow | undefined> {
    const [row] = await tx.query<MessageRow>(
      `UPDATE messages SET status = $2, status_updated_at = $3,
              delivered_at = CASE WHEN $2 = 'delivered' THEN $3::timestamptz ELSE delivered_at END,
              error_code = CASE WHEN $2 = 'delivered' THEN NULL ELSE $4 END,
              error_message = CASE WHEN $2 = 'delivered' THEN NULL ELSE $5 END
        WHERE id = $1 AND status = 'sent' RETURNING *`,
      [id, status, now, error.errorCode, error.errorMessage],
    );
    return row;
  }

  /** recordReceipt for a batch of receipts, in one statement; returns the rows that were `sent`. */
  async recordManyReceipts(
    tx: Queryable,
    receipts: { id: string; status: ReceiptStatus; errorCode: string; errorMessage: string }[],
    now: Date,
  ): Promise<MessageRow[]> {
    if (receipts.length === 0) return [];
    return tx.query<MessageRow>(
      `UPDATE messages m SET status = receipt.status, status_updated_at = $5,
              delivered_at = CASE WHEN receipt.status = 'delivered' THEN $5::timestamptz ELSE m.delivered_at END,
              error_code = CASE WHEN receipt.status = 'delivered' THEN NULL ELSE receipt.error_code END,
              error_message = CASE WHEN receipt.status = 'delivered' THEN NULL ELSE receipt.error_message END
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
              AS receipt(id, status, error_code, error_message)
        WHERE m.id = receipt.id AND m.status = 'sent' RETURNING m.*`,
      [
        receipts.map((item) => item.id),
        receipts.map((item) => item.status),
        receipts.map((item) => item.errorCode),
        receipts.map((item) => item.errorMessage),
        now,
      ],
    );
  }

  /**
   * The SQL of an organization's message history, for the paginator to fetch pages of. Only the filters given
   * become conditions, so each is planned onto its index (migrations/012_list_counts.sql): status, direction,
   * from or to number, each led by organization_id; since/until on messages_org_created. Unfiltered, the
   * total is the organization's message counter instead of a count.
   */
  historyQuery(
    organizationId: string,
    filters: HistoryFilters,
  ): Pick<ListQuery<MessageViewRow, unknown>, 'select' | 'from' | 'where' | 'params' | 'total'> {
    const params: unknown[] = [organizationId];
    const conditions = ['organization_id = $1'];
    const next = (value: unknown) => `$${params.push(value)}`;
    if (filters.direction !== null) conditions.push(`direction = ${next(filters.direction)}`);
    if (filters.status !== null) conditions.push(`status = ${next(filters.status)}`);
    if (filters.number !== null) {
      const number = next(filters.number);
      conditions.push(`(from_number = ${number} OR to_number = ${number})`);
    }
    if (filters.since !== null) conditions.push(`created_at >= ${next(filters.since)}::timestamptz`);
    if (filters.until !== null) conditions.push(`created_at < ${next(filters.until)}::timestamptz`);
    return {
      select: MESSAGE_VIEW_COLUMNS,
      from: 'messages',
      where: conditions.join(' AND '),
      params,
      total: conditions.length === 1 ? listCounterTotal('messages', organizationId) : undefined,
    };
  }

  /** How many of the organization's messages were created in [since, until), by direction and status. */
  async countsByStatus(
    db: Queryable,
    organizationId: string,
    since: Date,
    until: Date,
  ): Promise<{ direction: Direction; status: MessageStatus; n: number }[]> {
    return db.query(
      `SELECT direction, status, count(*)::int AS n FROM messages
        WHERE organization_id = $1 AND created_at >= $2 AND created_at < $3
        GROUP BY direction, status`,
      [organizationId, since, until],
    );
  }

  /** Counts as countsByStatus, by hour from `since` too (hourIndexSql). */
  async countsByHour(
    db: Queryable,
    organizationId: string,
    since: Date,
    until: Date,
  ): Promise<{ hour: number; direction: Direction; status: MessageStatus; n: number }[]> {
    return db.query(
      `SELECT ${hourIndexSql('created_at', '$2')} AS hour, direction, status, count(*)::int AS n FROM messages
        WHERE organization_id = $1 AND created_at >= $2 AND created_at < $3
        GROUP BY 1, direction, status`,
      [organizationId, since, until],
    );
  }
}

function textParams(values: TextValues): unknown[] {
  return [
    values.id,
    values.organizationId,
    values.from,
    values.to,
    values.body,
    values.segments,
    values.encoding,
    values.now,
  ];
}
