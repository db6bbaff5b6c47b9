// The SQL of campaigns, their recipients and their counters. Every method takes the Queryable to run on; the
// rules (which state allows what, pacing, quiet hours, limits) stay in service.ts and engine.ts.
import type { Queryable } from '../../platform/db/index.ts';
import type { ListQuery } from '../../platform/pagination.ts';
import type { MergeFieldLengths } from '../messaging/index.ts';

export type CampaignStatus = 'draft' | 'scheduled' | 'sending' | 'paused' | 'completed' | 'cancelled';

export interface CampaignRow {
  id: string;
  organization_id: string;
  name: string;
  message: string;
  media_urls: string[];
  contact_list_ids: string[];
  senders: string[];
  timezone: string;
  quiet_start: string | null;
  quiet_end: string | null;
  /** Links in its messages become tracked short links (migration 050). */
  track_links: boolean;
  status: CampaignStatus;
  paused_reason: string | null;
  scheduled_at: Date | null;
  run_token: string | null;
  waiting_until: Date | null;
  recipient_count: number;
  skipped_count: number;
  launched_at: Date | null;
  started_at: Date | null;
  completed_at: Date | null;
  cancelled_at: Date | null;
  /** The campaign a follow-up was made from (follow-up-store.ts). */
  parent_campaign_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/** The campaign's message counters (summed over shards) and its messages past the receipt wait. */
export interface CountsRow {
  messages: number;
  segments: number;
  queued: number;
  sent: number;
  delivered: number;
  failed: number;
  undelivered: number;
  cancelled: number;
  opt_outs: number;
  no_receipt: number;
}

export type CampaignWithCounts = CampaignRow & CountsRow;

export interface CampaignValues {
  name: string;
  message: string;
  mediaUrls: string[];
  contactListIds: string[];
  senders: string[];
  timezone: string;
  quietStart: string | null;
  quietEnd: string | null;
  scheduledAt: Date | null;
  trackLinks: boolean;
}

export interface DueRecipient {
  position: number;
  phone: string;
  sender: string;
  contact_id: string | null;
  first_name: string | null;
  last_name: string | null;
  company: string | null;
  email: string | null;
  timezone: string | null;
}

export interface RecipientRow {
  position: number;
  phone: string;
  contact_id: string | null;
  sender: string | null;
  status: 'pending' | 'queued' | 'skipped' | 'cancelled';
  not_before: Date | null;
  message_id: string | null;
  message_status: string | null;
  error_code: string | null;
  error_message: string | null;
  sent_at: Date | null;
  created_at: Date;
}

// Counters summed over the shards, and "no receipt" counted through messages_campaign_sent; `cutoff` is the
// placeholder of the moment before which a `sent` message has waited too long for its receipt.
const counts = (cutoff: string) => `
  COALESCE(k.messages, 0)::int AS messages, COALESCE(k.segments, 0)::bigint AS segments,
  COALESCE(k.queued, 0)::int AS queued, COALESCE(k.sent, 0)::int AS sent,
  COALESCE(k.delivered, 0)::int AS delivered, COALESCE(k.failed, 0)::int AS failed,
  COALESCE(k.undelivered, 0)::int AS undelivered, COALESCE(k.cancelled, 0)::int AS cancelled,
  (SELECT count(*)::int FROM campaign_opt_outs x WHERE x.campaign_id = c.id) AS opt_outs,
  (SELECT count(*)::int FROM messages m
    WHERE m.campaign_id = c.id AND m.status = 'sent' AND m.sent_at <= ${cutoff}) AS no_receipt`;
const COUNTS_JOIN = `LEFT JOIN LATERAL (
  SELECT sum(messages) AS messages, sum(segments) AS segments, sum(queued) AS queued, sum(sent) AS sent,
         sum(delivered) AS delivered, sum(failed) AS failed, sum(undelivered) AS undelivered,
         sum(cancelled) AS cancelled
    FROM campaign_counts WHERE campaign_id = c.id) k ON true`;

export class CampaignStore {
  async insert(
    db: Queryable,
    row: CampaignValues & { id: string; organizationId: string; now: Date },
  ): Promise<void> {
    await db.query(
      `INSERT INTO campaigns (id, organization_id, name, message, media_urls, contact_list_ids, senders, timezone,
                              quiet_start, quiet_end, status, scheduled_at, created_at, updated_at, track_links)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6::text[], $7::text[], $8, $9, $10, 'draft', $11, $12, $12, $13)`,
      [
        row.id,
        row.organizationId,
        row.name,
        row.message,
        JSON.stringify(row.mediaUrls),
        row.contactListIds,
        row.senders,
        row.timezone,
        row.quietStart,
        row.quietEnd,
        row.scheduledAt,
        row.now,
        row.trackLinks,
      ],
    );
  }

  /** The campaign with its counters; `receiptCutoff`: sent before this and still `sent` is "no receipt". */
  async find(
    db: Queryable,
    organizationId: string,
    id: string,
    receiptCutoff: Date,
  ): Promise<CampaignWithCounts | undefined> {
    const [row] = await db.query<CampaignWithCounts>(
      `SELECT c.*, ${counts('$2')} FROM campaigns c ${COUNTS_JOIN} WHERE c.id = $1 AND c.organization_id = $3`,
      [id, receiptCutoff, organizationId],
    );
    return row && numeric(row);
  }

  listQuery(
    organizationId: string,
    receiptCutoff: Date,
  ): Pick<
    ListQuery<CampaignWithCounts, unknown>,
    'select' | 'from' | 'where' | 'params' | 'orderBy' | 'total'
  > {
    return {
      total: {
        sql: 'SELECT count(*)::int AS total FROM campaigns WHERE organization_id = $1',
        params: [organizationId],
      },
      select: `c.*, ${counts('$1')}`,
      from: `campaigns c ${COUNTS_JOIN}`,
      where: 'c.organization_id = $2',
      params: [receiptCutoff, organizationId],
      orderBy: { createdAt: 'c.created_at', id: 'c.id' },
    };
  }

  async exists(db: Queryable, organizationId: string, id: string): Promise<boolean> {
    const rows = await db.query('SELECT 1 FROM campaigns WHERE id = $1 AND organization_id = $2', [
      id,
      organizationId,
    ]);
    return rows.length > 0;
  }

  /** Locks the campaign's row for the rest of `tx`. */
  async lock(tx: Queryable, organizationId: string, id: string): Promise<CampaignRow | undefined> {
    const [row] = await tx.query<CampaignRow>(
      'SELECT * FROM campaigns WHERE id = $1 AND organization_id = $2 FOR UPDATE',
      [id, organizationId],
    );
    return row;
  }

  /** Locks the campaign for the engine, whatever its organization (the job carries only its id). */
  async lockForRun(tx: Queryable, id: string): Promise<CampaignRow | undefined> {
    const [row] = await tx.query<CampaignRow>('SELECT * FROM campaigns WHERE id = $1 FOR UPDATE', [id]);
    return row;
  }

  async update(tx: Queryable, id: string, values: CampaignValues, now: Date): Promise<void> {
    await tx.query(
      `UPDATE campaigns SET name = $2, message = $3, media_urls = $4::jsonb, contact_list_ids = $5::text[],
              senders = $6::text[], timezone = $7, quiet_start = $8, quiet_end = $9, scheduled_at = $10,
              updated_at = $11, track_links = $12
        WHERE id = $1`,
      [
        id,
        values.name,
        values.message,
        JSON.stringify(values.mediaUrls),
        values.contactListIds,
        values.senders,
        values.timezone,
        values.quietStart,
        values.quietEnd,
        values.scheduledAt,
        now,
        values.trackLinks,
      ],
    );
  }

  /** Sets the state columns given (a column absent is kept; null clears it). */
  async setState(
    tx: Queryable,
    id: string,
    changes: Partial<
      Pick<
        CampaignRow,
        | 'status'
        | 'paused_reason'
        | 'run_token'
        | 'waiting_until'
        | 'launched_at'
        | 'started_at'
        | 'completed_at'
        | 'cancelled_at'
        | 'recipient_count'
        | 'skipped_count'
        | 'senders'
      >
    >,
    now: Date,
  ): Promise<void> {
    const columns = Object.keys(changes) as (keyof typeof changes)[];
    const params: unknown[] = [id, now];
    const sets = columns.map((column) => {
      params.push(changes[column]);
      return `${column} = $${params.length}${column === 'senders' ? '::text[]' : ''}`;
    });
    await tx.query(`UPDATE campaigns SET ${[...sets, 'updated_at = $2'].join(', ')} WHERE id = $1`, params);
  }

  async delete(tx: Queryable, id: string): Promise<void> {
    await tx.query('DELETE FROM campaigns WHERE id = $1', [id]);
  }

  /** Which of `ids` are contact lists of the organization. */
  async existingLists(db: Queryable, organizationId: string, ids: string[]): Promise<string[]> {
    const rows = await db.query<{ id: string }>(
      'SELECT id FROM contact_lists WHERE organization_id = $1 AND id = ANY($2::text[])',
      [organizationId, ids],
    );
    return rows.map((row) => row.id);
  }

  /**
   * Makes the campaign's recipient rows, in one statement: a follow-up's chosen phones first (in their order),
   * then its lists' members, each phone once (the first contact to hold it), opted-out phones as `skipped`,
   * each pending phone given the sender it got first from this organization's campaigns when that number is in
   * the pool, else one of the pool by a hash of the phone. Then remembers the senders given for the first time.
   * Returns how many rows and how many were skipped.
   */
  async snapshotRecipients(
    tx: Queryable,
    campaign: { id: string; organizationId: string; contactListIds: string[]; senders: string[] },
  ): Promise<{ recipients: number; skipped: number }> {
    await tx.query('DELETE FROM campaign_recipients WHERE campaign_id = $1', [campaign.id]);
    const [counts] = await tx.query<{ recipients: number; skipped: number }>(
      `WITH listed AS (
         SELECT DISTINCT ON (c.phone) c.id, c.phone, c.created_at
           FROM contact_list_members m JOIN contacts c ON c.id = m.contact_id
          WHERE m.list_id = ANY($3::text[]) AND c.organization_id = $2
          ORDER BY c.phone, c.created_at, c.id
       ), members AS (
         SELECT ch.contact_id AS id, ch.phone, 0 AS source, ch.position, NULL::timestamptz AS created_at
           FROM campaign_chosen_recipients ch WHERE ch.campaign_id = $1
         UNION ALL
         SELECT l.id, l.phone, 1, 0, l.created_at FROM listed l
          WHERE NOT EXISTS (SELECT 1 FROM campaign_chosen_recipients ch
                             WHERE ch.campaign_id = $1 AND ch.phone = l.phone)
       ), inserted AS (
         INSERT INTO campaign_recipients (campaign_id, position, phone, contact_id, sender, status)
         SELECT $1, row_number() OVER (ORDER BY mb.source, mb.position, mb.created_at, mb.id), mb.phone, mb.id,
                CASE WHEN o.phone IS NOT NULL THEN NULL
                     WHEN s.sender = ANY($4::text[]) THEN s.sender
                     ELSE ($4::text[])[1 + abs(hashtext(mb.phone)) % cardinality($4::text[])] END,
                CASE WHEN o.phone IS NOT NULL THEN 'skipped' ELSE 'pending' END
           FROM members mb
           LEFT JOIN opt_outs o ON o.organization_id = $2 AND o.phone = mb.phone
           LEFT JOIN campaign_sticky_senders s ON s.organization_id = $2 AND s.phone = mb.phone
         RETURNING phone, sender, status
       ), remembered AS (
         INSERT INTO campaign_sticky_senders (organization_id, phone, sender)
         SELECT $2, phone, sender FROM inserted WHERE status = 'pending'
         ON CONFLICT (organization_id, phone) DO NOTHING
       )
       SELECT count(*)::int AS recipients, count(*) FILTER (WHERE status = 'skipped')::int AS skipped FROM inserted`,
      [campaign.id, campaign.organizationId, campaign.contactListIds, campaign.senders],
    );
    return counts!;
  }

  /** The longest value of each merge field among the campaign's pending recipients. */
  async longestMergeFields(tx: Queryable, campaignId: string): Promise<MergeFieldLengths> {
    const [row] = await tx.query<Record<keyof MergeFieldLengths, number | null>>(
      `SELECT max(length(c.first_name)) AS "firstName", max(length(c.last_name)) AS "lastName",
              max(length(c.company)) AS company, max(length(c.email)) AS email, max(length(r.phone)) AS phone
         FROM campaign_recipients r LEFT JOIN contacts c ON c.id = r.contact_id
        WHERE r.campaign_id = $1 AND r.status = 'pending'`,
      [campaignId],
    );
    return {
      firstName: row?.firstName ?? 0,
      lastName: row?.lastName ?? 0,
      company: row?.company ?? 0,
      email: row?.email ?? 0,
      phone: row?.phone ?? 0,
    };
  }

  /**
   * Every pending recipient with the merge fields of its contact, `chunk` rows at a time, through one cursor
   * (one plan and one pass, even right after the snapshot filled the table in this transaction). Call within a
   * transaction.
   */
  async *pendingWithContacts(
    tx: Queryable,
    campaignId: string,
    chunk: number,
  ): AsyncGenerator<DueRecipient[]> {
    // A cursor takes no bind parameters; the id is ours (cmp_ and base-36), checked before it is quoted.
    if (!/^cmp_[0-9a-z]+$/.test(campaignId)) throw new Error(`Not a campaign id: ${campaignId}`);
    await tx.exec(
      `DECLARE campaign_launch NO SCROLL CURSOR FOR
         SELECT r.position, r.phone, r.sender, r.contact_id, c.first_name, c.last_name, c.company, c.email, c.timezone
           FROM campaign_recipients r LEFT JOIN contacts c ON c.id = r.contact_id
          WHERE r.campaign_id = '${campaignId}' AND r.status = 'pending'`,
    );
    try {
      for (;;) {
        const rows = await tx.query<DueRecipient>(`FETCH ${Math.floor(chunk)} FROM campaign_launch`);
        if (rows.length > 0) yield rows;
        if (rows.length < chunk) return;
      }
    } finally {
      // The cursor ends with the transaction anyway; after a failed statement CLOSE fails too, and must not
      // hide the error that failed it.
      await tx.exec('CLOSE campaign_launch').catch(() => undefined);
    }
  }

  /**
   * The next due pending recipients, locked (rows another worker holds are skipped), each with whether its
   * phone has opted out since the launch.
   */
  async due(
    tx: Queryable,
    campaignId: string,
    organizationId: string,
    now: Date,
    limit: number,
  ): Promise<(DueRecipient & { opted_out: boolean })[]> {
    return tx.query<DueRecipient & { opted_out: boolean }>(
      `SELECT r.position, r.phone, r.sender, r.contact_id, c.first_name, c.last_name, c.company, c.email, c.timezone,
              EXISTS (SELECT 1 FROM opt_outs o WHERE o.organization_id = $4 AND o.phone = r.phone) AS opted_out
         FROM campaign_recipients r LEFT JOIN contacts c ON c.id = r.contact_id
        WHERE r.campaign_id = $1 AND r.status = 'pending' AND r.not_before <= $2
        ORDER BY r.not_before, r.position LIMIT $3
        FOR UPDATE OF r SKIP LOCKED`,
      [campaignId, now, limit, organizationId],
    );
  }

  /** Marks pending recipients skipped (opted out after the launch) and counts them with the launch's. */
  async skip(tx: Queryable, campaignId: string, positions: number[]): Promise<void> {
    if (positions.length === 0) return;
    await tx.query(
      `WITH skipped AS (
         UPDATE campaign_recipients SET status = 'skipped'
          WHERE campaign_id = $1 AND position = ANY($2::int[]) AND status = 'pending' RETURNING 1
       )
       UPDATE campaigns SET skipped_count = skipped_count + (SELECT count(*) FROM skipped) WHERE id = $1`,
      [campaignId, positions],
    );
  }

  /** When the earliest pending recipient is due (`now` if one is due already); undefined when none is pending. */
  async nextDue(db: Queryable, campaignId: string, now: Date): Promise<Date | undefined> {
    const [row] = await db.query<{ pending: boolean; due: Date }>(
      `SELECT count(*) > 0 AS pending, GREATEST(min(not_before), $2::timestamptz) AS due
         FROM (SELECT not_before FROM campaign_recipients
                WHERE campaign_id = $1 AND status = 'pending' ORDER BY not_before LIMIT 1) first`,
      [campaignId, now],
    );
    return row?.pending ? row.due : undefined;
  }

  async markQueued(
    tx: Queryable,
    campaignId: string,
    made: { position: number; messageId: string }[],
  ): Promise<void> {
    if (made.length === 0) return;
    await tx.query(
      `UPDATE campaign_recipients r SET status = 'queued', message_id = made.message_id
         FROM unnest($2::int[], $3::text[]) AS made(position, message_id)
        WHERE r.campaign_id = $1 AND r.position = made.position AND r.status = 'pending'`,
      [campaignId, made.map((m) => m.position), made.map((m) => m.messageId)],
    );
  }

  async defer(
    tx: Queryable,
    campaignId: string,
    deferred: { position: number; notBefore: Date }[],
  ): Promise<void> {
    if (deferred.length === 0) return;
    await tx.query(
      `UPDATE campaign_recipients r SET not_before = d.not_before
         FROM unnest($2::int[], $3::timestamptz[]) AS d(position, not_before)
        WHERE r.campaign_id = $1 AND r.position = d.position AND r.status = 'pending'`,
      [campaignId, deferred.map((d) => d.position), deferred.map((d) => d.notBefore)],
    );
  }

  async cancelPending(tx: Queryable, campaignId: string): Promise<void> {
    await tx.query(
      `UPDATE campaign_recipients SET status = 'cancelled' WHERE campaign_id = $1 AND status = 'pending'`,
      [campaignId],
    );
  }

  /**
   * Locks the organization's plan pacing row (made if new) and returns its next free slot, `now` at the
   * earliest; the caller books slots from it (its plan speed apart) and moves it with setPlanPacing() in the
   * same transaction. The row lock makes every campaign of the organization share the one speed.
   */
  async lockPlanPacing(tx: Queryable, organizationId: string, now: Date): Promise<Date> {
    const [row] = await tx.query<{ next_free_at: Date }>(
      `INSERT INTO campaign_plan_pacing (organization_id, next_free_at) VALUES ($1, $2)
       ON CONFLICT (organization_id) DO UPDATE
         SET next_free_at = GREATEST(campaign_plan_pacing.next_free_at, EXCLUDED.next_free_at)
       RETURNING next_free_at`,
      [organizationId, now],
    );
    return new Date(row!.next_free_at);
  }

  async setPlanPacing(tx: Queryable, organizationId: string, nextFreeAt: Date): Promise<void> {
    await tx.query('UPDATE campaign_plan_pacing SET next_free_at = $2 WHERE organization_id = $1', [
      organizationId,
      nextFreeAt,
    ]);
  }

  recipientsQuery(
    campaignId: string,
    organizationId: string,
  ): Pick<ListQuery<RecipientRow, unknown>, 'select' | 'from' | 'where' | 'params' | 'orderBy'> {
    return {
      select: `r.position, r.phone, r.contact_id, r.sender, r.status,
               CASE WHEN r.not_before = '-infinity' THEN NULL ELSE r.not_before END AS not_before, r.message_id,
               m.status AS message_status, m.error_code, m.error_message, m.sent_at, ca.created_at`,
      from: `campaign_recipients r JOIN campaigns ca ON ca.id = r.campaign_id
             LEFT JOIN messages m ON m.id = r.message_id`,
      where: 'r.campaign_id = $1 AND ca.organization_id = $2',
      params: [campaignId, organizationId],
      // Every row shares the campaign's creation time, so the order is by position, last first.
      orderBy: { createdAt: 'ca.created_at', id: 'r.position' },
    };
  }

  /**
   * Records a STOP from `phone` against the campaign whose message reached it last, when that message was sent
   * at or after `since` (72 hours before the STOP). Once per campaign and phone.
   */
  async recordOptOut(
    db: Queryable,
    organizationId: string,
    phone: string,
    since: Date,
    at: Date,
  ): Promise<void> {
    await db.query(
      `INSERT INTO campaign_opt_outs (campaign_id, phone, opted_out_at)
       SELECT campaign_id, $2, $4 FROM messages
        WHERE organization_id = $1 AND to_number = $2 AND campaign_id IS NOT NULL
          AND status IN ('sent', 'delivered', 'undelivered') AND sent_at >= $3 AND sent_at <= $4
        ORDER BY sent_at DESC LIMIT 1
       ON CONFLICT (campaign_id, phone) DO NOTHING`,
      [organizationId, phone, since, at],
    );
  }
}

// bigint columns arrive as strings from node-postgres.
function numeric(row: CampaignWithCounts): CampaignWithCounts {
  return { ...row, segments: Number(row.segments) };
}

export { numeric as numericCounts };
