// The SQL of campaign messages (campaign-messages.ts). Every method takes the Queryable to run on.
import type { Queryable } from '../../platform/db/index.ts';

/** A batch of one campaign's messages, stored at once. */
export interface CampaignMessageBatch {
  organizationId: string;
  campaignId: string;
  mediaUrls: string[];
  now: Date;
  messages: {
    id: string;
    from: string;
    to: string;
    body: string;
    segments: number;
    encoding: 'GSM-7' | 'UCS-2';
  }[];
}

export class CampaignMessageStore {
  async insertMany(tx: Queryable, batch: CampaignMessageBatch): Promise<void> {
    const column = <K extends keyof CampaignMessageBatch['messages'][number]>(key: K) =>
      batch.messages.map((message) => message[key]);
    await tx.query(
      `INSERT INTO messages (id, organization_id, campaign_id, direction, origin, from_number, to_number, body,
                             segments, encoding, media_urls, media_count, status, status_updated_at, created_at)
       SELECT made.id, $1::text, $2::text, 'outbound', 'campaign', made.from_number, made.to_number, made.body,
              made.segments, made.encoding, $3::jsonb, $4::int, 'queued', $5::timestamptz, $5::timestamptz
         FROM unnest($6::text[], $7::text[], $8::text[], $9::text[], $10::int[], $11::text[])
              AS made(id, from_number, to_number, body, segments, encoding)`,
      [
        batch.organizationId,
        batch.campaignId,
        JSON.stringify(batch.mediaUrls),
        batch.mediaUrls.length,
        batch.now,
        column('id'),
        column('from'),
        column('to'),
        column('body'),
        column('segments'),
        column('encoding'),
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
