// The SQL of campaign follow-ups (CONTRACT section 14, issue 36; the rules are CampaignService.retry): the draft
// copied from its parent, and its chosen recipients, the parent's whose messages ended as asked, minus the
// phones that opted out since. The chosen phones are the draft's recipients at launch (store.ts
// snapshotRecipients), where opt-outs are checked once more.
import type { Queryable } from '../../platform/db/index.ts';

export const RETRY_INCLUDES = ['failed', 'undelivered', 'no_receipt'] as const;
export type RetryInclude = (typeof RETRY_INCLUDES)[number];

export class FollowUpStore {
  /** A draft with the parent's text, media, senders, time zone and quiet hours, naming the parent. */
  async insert(tx: Queryable, row: { id: string; name: string; parentId: string; now: Date }): Promise<void> {
    await tx.query(
      `INSERT INTO campaigns (id, organization_id, name, message, media_urls, contact_list_ids, senders, timezone,
                              quiet_start, quiet_end, status, parent_campaign_id, created_at, updated_at,
                              track_links)
       SELECT $1, organization_id, $2, message, media_urls, '{}', senders, timezone, quiet_start, quiet_end,
              'draft', id, $3, $3, track_links
         FROM campaigns WHERE id = $4`,
      [row.id, row.name, row.now, row.parentId],
    );
  }

  /**
   * Chooses the follow-up's recipients, in the parent's order: those whose message is `failed` or `undelivered`
   * (as `include` says), or with `no_receipt`, still `sent` from before `receiptCutoff`; never a phone on the
   * organization's opt-out list. Returns how many, also kept as the draft's recipient count.
   */
  async choose(
    tx: Queryable,
    followUp: { id: string; parentId: string; organizationId: string },
    include: readonly RetryInclude[],
    receiptCutoff: Date,
  ): Promise<number> {
    const statuses = include.filter((each) => each !== 'no_receipt');
    const [chosen] = await tx.query<{ count: number }>(
      `WITH chosen AS (
         INSERT INTO campaign_chosen_recipients (campaign_id, position, phone, contact_id)
         SELECT $1, row_number() OVER (ORDER BY r.position), r.phone, r.contact_id
           FROM campaign_recipients r
           JOIN messages m ON m.id = r.message_id AND m.organization_id = $3
          WHERE r.campaign_id = $2 AND r.status = 'queued'
            AND (m.status = ANY($4::text[]) OR ($5 AND m.status = 'sent' AND m.sent_at < $6))
            AND NOT EXISTS (SELECT 1 FROM opt_outs o WHERE o.organization_id = $3 AND o.phone = r.phone)
         RETURNING 1
       ), counted AS (
         UPDATE campaigns SET recipient_count = (SELECT count(*) FROM chosen) WHERE id = $1
         RETURNING recipient_count
       )
       SELECT recipient_count::int AS count FROM counted`,
      [
        followUp.id,
        followUp.parentId,
        followUp.organizationId,
        statuses,
        include.includes('no_receipt'),
        receiptCutoff,
      ],
    );
    return chosen?.count ?? 0;
  }
}
