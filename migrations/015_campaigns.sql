-- Campaigns (CONTRACT section 8, docs/campaigns.md): a message sent to the members of contact lists, paced,
-- inside each recipient's waking hours, within the plan's limits, exactly once per recipient.

CREATE TABLE campaigns (
  id                 text PRIMARY KEY,
  organization_id    text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name               text NOT NULL,
  message            text NOT NULL DEFAULT '',
  media_urls         jsonb NOT NULL DEFAULT '[]'::jsonb,
  contact_list_ids   text[] NOT NULL,
  -- Sending numbers (E.164); empty means the organization's default number, chosen at launch.
  senders            text[] NOT NULL DEFAULT '{}',
  timezone           text NOT NULL DEFAULT 'UTC',
  -- Local "HH:MM" bounds of the sending window; both null: quiet hours off.
  quiet_start        text,
  quiet_end          text,
  status             text NOT NULL CHECK (status IN
                       ('draft', 'scheduled', 'sending', 'paused', 'completed', 'cancelled')),
  -- Why a paused campaign paused by itself (a plan limit's code); null when a person paused it.
  paused_reason      text,
  scheduled_at       timestamptz,
  -- The engine's current run: a job carries the token it was enqueued with and does nothing once the
  -- campaign has moved on to another (a resume enqueues a fresh run; the old one, if still pending, idles).
  run_token          text,
  -- When a daily or new-account limit holds the campaign, sending resumes then.
  waiting_until      timestamptz,
  recipient_count    integer NOT NULL DEFAULT 0,
  skipped_count      integer NOT NULL DEFAULT 0,
  launched_at        timestamptz,
  started_at         timestamptz,
  completed_at       timestamptz,
  cancelled_at       timestamptz,
  created_at         timestamptz NOT NULL,
  updated_at         timestamptz NOT NULL
);
CREATE INDEX campaigns_org_created ON campaigns (organization_id, created_at DESC, id DESC);

-- One row per recipient, made at launch: the engine turns each pending row into exactly one message, in the
-- transaction that creates the message, so a crash mid-batch leaves the row pending and nothing sent.
CREATE TABLE campaign_recipients (
  campaign_id   text NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
  position      integer NOT NULL,
  phone         text NOT NULL,
  contact_id    text,
  -- The sending number this recipient keeps (sticky across the sender pool).
  sender        text,
  -- pending: no message yet; queued: its message exists (message_id; the message has its own status);
  -- skipped: opted out at launch; cancelled: the campaign was cancelled before its message was made.
  status        text NOT NULL CHECK (status IN ('pending', 'queued', 'skipped', 'cancelled')),
  -- The earliest time its message may be made (quiet hours in its time zone); '-infinity' until then.
  not_before    timestamptz NOT NULL DEFAULT '-infinity',
  message_id    text,
  PRIMARY KEY (campaign_id, position),
  UNIQUE (campaign_id, phone)
);
-- The engine's next batch: the pending rows that are due, in order.
CREATE INDEX campaign_recipients_due ON campaign_recipients (campaign_id, not_before, position) WHERE status = 'pending';

-- The sender a phone got first from an organization's campaigns, kept so the next campaign with that number
-- in its pool uses it again.
CREATE TABLE campaign_sticky_senders (
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  phone            text NOT NULL,
  sender           text NOT NULL,
  PRIMARY KEY (organization_id, phone)
);

-- The plan's campaign speed per organization (pro 5/s, ultra 25/s, enterprise 100/s): the next free slot.
CREATE TABLE campaign_plan_pacing (
  organization_id  text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
  next_free_at     timestamptz NOT NULL
);

ALTER TABLE messages ADD COLUMN campaign_id text REFERENCES campaigns (id) ON DELETE SET NULL;
-- "No receipt" is a matter of time (sent over 72 hours ago and still `sent`): counted through this index.
CREATE INDEX messages_campaign_sent ON messages (campaign_id, sent_at) WHERE status = 'sent' AND campaign_id IS NOT NULL;
CREATE INDEX messages_campaign_to ON messages (campaign_id, to_number) WHERE campaign_id IS NOT NULL;

-- Delivery statistics as counters, moved by a trigger in the transaction of each message's change, so reading
-- them costs the same at 100 or 100,000 recipients. Spread over 8 shards per campaign (by message id) so that
-- concurrent dispatches of one campaign do not queue on one counter row; a read sums the shards.
CREATE TABLE campaign_counts (
  campaign_id   text NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
  shard         smallint NOT NULL,
  messages      integer NOT NULL DEFAULT 0,
  segments      bigint NOT NULL DEFAULT 0,
  queued        integer NOT NULL DEFAULT 0,
  sent          integer NOT NULL DEFAULT 0,
  delivered     integer NOT NULL DEFAULT 0,
  failed        integer NOT NULL DEFAULT 0,
  undelivered   integer NOT NULL DEFAULT 0,
  cancelled     integer NOT NULL DEFAULT 0,
  PRIMARY KEY (campaign_id, shard)
);

-- Recipients who texted STOP within 72 hours of their campaign message, once each (the event consumer that
-- fills it may see an event twice).
CREATE TABLE campaign_opt_outs (
  campaign_id   text NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
  phone         text NOT NULL,
  opted_out_at  timestamptz NOT NULL,
  PRIMARY KEY (campaign_id, phone)
);

CREATE FUNCTION campaign_counts_move() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  counter_shard smallint := abs(hashtext(NEW.id)) % 8;
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO campaign_counts AS c (campaign_id, shard, messages, segments, queued, sent, delivered, failed,
                                      undelivered, cancelled)
    VALUES (NEW.campaign_id, counter_shard, 1, NEW.segments,
            (NEW.status = 'queued')::int, (NEW.status = 'sent')::int, (NEW.status = 'delivered')::int,
            (NEW.status = 'failed')::int, (NEW.status = 'undelivered')::int, (NEW.status = 'cancelled')::int)
    ON CONFLICT (campaign_id, shard) DO UPDATE SET
      messages = c.messages + 1, segments = c.segments + EXCLUDED.segments,
      queued = c.queued + EXCLUDED.queued, sent = c.sent + EXCLUDED.sent,
      delivered = c.delivered + EXCLUDED.delivered, failed = c.failed + EXCLUDED.failed,
      undelivered = c.undelivered + EXCLUDED.undelivered, cancelled = c.cancelled + EXCLUDED.cancelled;
  ELSE
    UPDATE campaign_counts SET
      queued = queued + (NEW.status = 'queued')::int - (OLD.status = 'queued')::int,
      sent = sent + (NEW.status = 'sent')::int - (OLD.status = 'sent')::int,
      delivered = delivered + (NEW.status = 'delivered')::int - (OLD.status = 'delivered')::int,
      failed = failed + (NEW.status = 'failed')::int - (OLD.status = 'failed')::int,
      undelivered = undelivered + (NEW.status = 'undelivered')::int - (OLD.status = 'undelivered')::int,
      cancelled = cancelled + (NEW.status = 'cancelled')::int - (OLD.status = 'cancelled')::int
    WHERE campaign_id = NEW.campaign_id AND campaign_counts.shard = counter_shard;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER messages_campaign_counts_insert AFTER INSERT ON messages
  FOR EACH ROW WHEN (NEW.campaign_id IS NOT NULL) EXECUTE FUNCTION campaign_counts_move();
CREATE TRIGGER messages_campaign_counts_status AFTER UPDATE OF status ON messages
  FOR EACH ROW WHEN (NEW.campaign_id IS NOT NULL AND OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION campaign_counts_move();

-- Campaign messages are made by the campaign engine: their own origin.
ALTER TABLE messages DROP CONSTRAINT messages_origin_check;
ALTER TABLE messages ADD CONSTRAINT messages_origin_check
  CHECK (origin IN ('api', 'portal', 'auto_reply', 'carrier', 'campaign'));
