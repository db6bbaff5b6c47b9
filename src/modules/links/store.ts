// The SQL of tracked links and their clicks (migration 050). Rules (what counts as a click, expiry) are in
// service.ts.

import { deleteInBatches } from '../../platform/db/batches.ts';
import type { Queryable } from '../../platform/db/index.ts';
import type { ListQuery } from '../../platform/pagination.ts';

export interface TrackedLinkRow {
  code: string;
  organization_id: string;
  campaign_id: string | null;
  message_id: string;
  recipient_phone: string;
  url: string;
}

export interface ClickRow {
  id: string;
  recipient_phone: string;
  url: string;
  user_agent: string | null;
  created_at: Date;
}

export class LinkStore {
  /** Stores many links in one statement. */
  async insertMany(db: Queryable, rows: TrackedLinkRow[], now: Date, expiresAt: Date): Promise<void> {
    if (rows.length === 0) return;
    await db.query(
      `INSERT INTO tracked_links (code, organization_id, campaign_id, message_id, recipient_phone, url,
                                  created_at, expires_at)
       SELECT code, organization_id, campaign_id, message_id, recipient_phone, url, $7, $8
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
           AS t (code, organization_id, campaign_id, message_id, recipient_phone, url)`,
      [
        rows.map((row) => row.code),
        rows.map((row) => row.organization_id),
        rows.map((row) => row.campaign_id),
        rows.map((row) => row.message_id),
        rows.map((row) => row.recipient_phone),
        rows.map((row) => row.url),
        now,
        expiresAt,
      ],
    );
  }

  /** The link a code names, unless it expired. */
  async find(db: Queryable, code: string, now: Date): Promise<TrackedLinkRow | undefined> {
    const [row] = await db.query<TrackedLinkRow>(
      `SELECT code, organization_id, campaign_id, message_id, recipient_phone, url
         FROM tracked_links WHERE code = $1 AND expires_at > $2`,
      [code, now],
    );
    return row;
  }

  async insertClick(
    db: Queryable,
    click: { id: string; link: TrackedLinkRow; userAgent: string | null; at: Date },
  ): Promise<void> {
    const { link } = click;
    await db.query(
      `INSERT INTO link_clicks (id, organization_id, campaign_id, message_id, recipient_phone, url, user_agent,
                                created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        click.id,
        link.organization_id,
        link.campaign_id,
        link.message_id,
        link.recipient_phone,
        link.url,
        click.userAgent,
        click.at,
      ],
    );
  }

  async campaignCounts(
    db: Queryable,
    campaignId: string,
  ): Promise<{ clicks: number; unique_clicks: number }> {
    const [row] = await db.query<{ clicks: number; unique_clicks: number }>(
      `SELECT count(*)::int AS clicks, count(DISTINCT recipient_phone)::int AS unique_clicks
         FROM link_clicks WHERE campaign_id = $1`,
      [campaignId],
    );
    return row!;
  }

  clicksQuery(
    campaignId: string,
    organizationId: string,
  ): Pick<ListQuery<ClickRow, unknown>, 'select' | 'from' | 'where' | 'params'> {
    return {
      select: 'id, recipient_phone, url, user_agent, created_at',
      from: 'link_clicks',
      where: 'campaign_id = $1 AND organization_id = $2',
      params: [campaignId, organizationId],
    };
  }

  /** Removes the links past their expiry; their codes then answer 404. Clicks stay. */
  removeExpired(db: Queryable, now: Date): Promise<number> {
    return deleteInBatches(
      db,
      `DELETE FROM tracked_links WHERE code IN
         (SELECT code FROM tracked_links WHERE expires_at <= $1 LIMIT $2) RETURNING 1`,
      [now],
    );
  }
}
