// The SQL of campaign messages (campaign-messages.ts). Every method takes the Queryable to run on.
import type { Queryable } from '../../platform/db/index.ts';

export interface CampaignMessageValues {
  id: string;
  organizationId: string;
  campaignId: string;
  from: string;
  to: string;
  body: string;
  segments: number;
  encoding: 'GSM-7' | 'UCS-2';
  mediaUrls: string[];
  now: Date;
}

export class CampaignMessageStore {
  async insert(tx: Queryable, values: CampaignMessageValues): Promise<void> {
    await tx.query(
      `INSERT INTO messages (id, organization_id, campaign_id, direction, origin, from_number, to_number, body,
                             segments, encoding, media_urls, media_count, status, status_updated_at, created_at)
       VALUES ($1, $2, $3, 'outbound', 'campaign', $4, $5, $6, $7, $8, $9::jsonb, $10, 'queued', $11, $11)`,
      [
        values.id,
        values.organizationId,
        values.campaignId,
        values.from,
        values.to,
        values.body,
        values.segments,
        values.encoding,
        JSON.stringify(values.mediaUrls),
        values.mediaUrls.length,
        values.now,
      ],
    );
  }

  /** What the organization has used of the limits that do not reset soon: trial messages, this month's segments. */
  async usage(
    db: Queryable,
    organizationId: string,
    monthStart: Date,
  ): Promise<{ trialMessages: number; monthSegments: number }> {
    const [row] = await db.query<{ trial_messages: number; month_segments: string }>(
      `SELECT COALESCE((SELECT trial_messages FROM send_limit_accounts WHERE organization_id = $1), 0) AS trial_messages,
              COALESCE((SELECT segments FROM send_usage
                         WHERE organization_id = $1 AND period = 'month' AND period_start = $2), 0) AS month_segments`,
      [organizationId, monthStart],
    );
    return { trialMessages: Number(row!.trial_messages), monthSegments: Number(row!.month_segments) };
  }

  async cancelQueued(tx: Queryable, campaignId: string, now: Date): Promise<number> {
    const rows = await tx.query(
      `UPDATE messages SET status = 'cancelled', error_code = 'CAMPAIGN_CANCELLED',
              error_message = 'The campaign was cancelled before the message was sent', status_updated_at = $2
        WHERE campaign_id = $1 AND status = 'queued' RETURNING id`,
      [campaignId, now],
    );
    return rows.length;
  }
}
