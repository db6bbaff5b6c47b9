-- Campaign counters moved once per statement and per transaction's shard, so batched writes cannot deadlock.
--
-- The counters of 015 were moved by row triggers into the shard of each message's id. A statement that wrote
-- many messages (the dispatch batch marking 16 sent, the receipts batch, a campaign run inserting 100) locked
-- up to 8 counter rows of a campaign in the order of its rows; two such transactions locking them in
-- different orders deadlocked (PostgreSQL found one every few seconds under a 100/s campaign, each costing a
-- second's wait and a retried batch).
--
-- Now a statement adds its changes per campaign, in campaign_id order, to the shard of its transaction
-- (txid % 8): a transaction holds one counter row per campaign whatever it writes, each statement takes them
-- in campaign_id order, and concurrent transactions still spread over the 8 rows. (A transaction whose
-- statements touch several campaigns in different orders can still meet another's on a shard: rare, and the
-- dispatch's recording transaction is retried on a deadlock rather than resent.) A message is counted into one shard and moved out of
-- another, so a single shard may go below zero; a read sums the shards (CampaignStore), and the sums are
-- exact, as before. Existing counts need nothing: their sums are unchanged.
--
-- The UPDATE trigger fires for every UPDATE of messages (a trigger with transition tables cannot name
-- columns) and counts only rows of a campaign whose status changed. An upsert, not an UPDATE: the
-- transaction's shard may have no row yet for the campaign. Only campaigns that still exist are counted into,
-- so the SET NULL of a deleted campaign's messages never re-creates its counters.

DROP TRIGGER messages_campaign_counts_insert ON messages;
DROP TRIGGER messages_campaign_counts_status ON messages;
DROP FUNCTION campaign_counts_move();

CREATE FUNCTION campaign_counts_add_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO campaign_counts AS c (campaign_id, shard, messages, segments, queued, sent, delivered, failed,
                                    undelivered, cancelled)
    SELECT campaign_id, (txid_current() % 8)::smallint, count(*), sum(segments),
           count(*) FILTER (WHERE status = 'queued'), count(*) FILTER (WHERE status = 'sent'),
           count(*) FILTER (WHERE status = 'delivered'), count(*) FILTER (WHERE status = 'failed'),
           count(*) FILTER (WHERE status = 'undelivered'), count(*) FILTER (WHERE status = 'cancelled')
      FROM inserted_rows
     WHERE campaign_id IS NOT NULL
     GROUP BY campaign_id ORDER BY campaign_id
  ON CONFLICT (campaign_id, shard) DO UPDATE SET
    messages = c.messages + EXCLUDED.messages, segments = c.segments + EXCLUDED.segments,
    queued = c.queued + EXCLUDED.queued, sent = c.sent + EXCLUDED.sent,
    delivered = c.delivered + EXCLUDED.delivered, failed = c.failed + EXCLUDED.failed,
    undelivered = c.undelivered + EXCLUDED.undelivered, cancelled = c.cancelled + EXCLUDED.cancelled;
  RETURN NULL;
END $$;

CREATE FUNCTION campaign_counts_move_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO campaign_counts AS c (campaign_id, shard, queued, sent, delivered, failed, undelivered, cancelled)
    SELECT moved.campaign_id, (txid_current() % 8)::smallint,
           sum((moved.new_status = 'queued')::int - (moved.old_status = 'queued')::int),
           sum((moved.new_status = 'sent')::int - (moved.old_status = 'sent')::int),
           sum((moved.new_status = 'delivered')::int - (moved.old_status = 'delivered')::int),
           sum((moved.new_status = 'failed')::int - (moved.old_status = 'failed')::int),
           sum((moved.new_status = 'undelivered')::int - (moved.old_status = 'undelivered')::int),
           sum((moved.new_status = 'cancelled')::int - (moved.old_status = 'cancelled')::int)
      FROM (SELECT n.campaign_id, n.status AS new_status, o.status AS old_status
              FROM updated_rows n JOIN previous_rows o ON o.id = n.id
             WHERE n.campaign_id IS NOT NULL AND n.status IS DISTINCT FROM o.status) moved
     WHERE EXISTS (SELECT 1 FROM campaigns WHERE campaigns.id = moved.campaign_id)
     GROUP BY moved.campaign_id ORDER BY moved.campaign_id
  ON CONFLICT (campaign_id, shard) DO UPDATE SET
    queued = c.queued + EXCLUDED.queued, sent = c.sent + EXCLUDED.sent,
    delivered = c.delivered + EXCLUDED.delivered, failed = c.failed + EXCLUDED.failed,
    undelivered = c.undelivered + EXCLUDED.undelivered, cancelled = c.cancelled + EXCLUDED.cancelled;
  RETURN NULL;
END $$;

CREATE TRIGGER messages_campaign_counts_inserted AFTER INSERT ON messages
  REFERENCING NEW TABLE AS inserted_rows FOR EACH STATEMENT EXECUTE FUNCTION campaign_counts_add_inserted();
CREATE TRIGGER messages_campaign_counts_updated AFTER UPDATE ON messages
  REFERENCING OLD TABLE AS previous_rows NEW TABLE AS updated_rows
  FOR EACH STATEMENT EXECUTE FUNCTION campaign_counts_move_updated();
