-- Messaging: messages (outbound and inbound), their uploaded media, the send-limit counters, idempotency
-- keys and the simulated carrier's per-number pacing.

CREATE TABLE messages (
  id                  text PRIMARY KEY,
  organization_id     text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  direction           text NOT NULL CHECK (direction IN ('outbound', 'inbound')),
  -- Who made it: a developer API send, the portal, an automatic keyword reply, or the carrier (inbound).
  origin              text NOT NULL CHECK (origin IN ('api', 'portal', 'auto_reply', 'carrier')),
  from_number         text NOT NULL,
  to_number           text NOT NULL,
  body                text NOT NULL DEFAULT '',
  -- Chargeable segments (an MMS counts a flat 3, docs/messaging.md); what the limits counted.
  segments            integer NOT NULL,
  encoding            text NOT NULL CHECK (encoding IN ('GSM-7', 'UCS-2')),
  -- Hosted URLs as given and metadata of uploads ([{id, contentType, size, filename}]); bytes in message_media.
  media_urls          jsonb NOT NULL DEFAULT '[]'::jsonb,
  media_files         jsonb NOT NULL DEFAULT '[]'::jsonb,
  media_count         integer NOT NULL DEFAULT 0,
  status              text NOT NULL CHECK (status IN
                        ('queued', 'sent', 'delivered', 'failed', 'undelivered', 'cancelled', 'received')),
  error_code          text,
  error_message       text,
  carrier             text,
  carrier_message_id  text,
  idempotency_key     text,
  sent_at             timestamptz,
  delivered_at        timestamptz,
  status_updated_at   timestamptz NOT NULL,
  created_at          timestamptz NOT NULL
);
-- History, newest first, offset and keyset (docs/pagination.md); also the trial burst window.
CREATE INDEX messages_org_created ON messages (organization_id, created_at DESC, id DESC);
CREATE UNIQUE INDEX messages_carrier_id ON messages (carrier, carrier_message_id) WHERE carrier_message_id IS NOT NULL;

-- Uploaded MMS media, stored exactly as sent (never transcoded).
CREATE TABLE message_media (
  id            text PRIMARY KEY,
  message_id    text NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
  position      integer NOT NULL,
  content_type  text NOT NULL,
  filename      text,
  size          integer NOT NULL,
  bytes         bytea NOT NULL
);
CREATE INDEX message_media_message ON message_media (message_id, position);

-- One row per organization that has sent: every send locks it (SELECT … FOR UPDATE) so the limit checks of
-- concurrent sends of one organization take turns, on every engine and across instances.
CREATE TABLE send_limit_accounts (
  organization_id        text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
  -- Trial lifetime: messages sent while in trial, ever.
  trial_messages         integer NOT NULL DEFAULT 0,
  -- New-account velocity: segments sent in the first 72 hours after the organization was created.
  first_72h_segments     integer NOT NULL DEFAULT 0,
  updated_at             timestamptz NOT NULL
);

-- Segments and messages per period: `day` (UTC calendar day) and `month` (UTC calendar month, the pool).
CREATE TABLE send_usage (
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  period           text NOT NULL CHECK (period IN ('day', 'month')),
  period_start     timestamptz NOT NULL,
  messages         integer NOT NULL DEFAULT 0,
  segments         integer NOT NULL DEFAULT 0,
  PRIMARY KEY (organization_id, period, period_start)
);

-- Idempotency-Key of POST /messages/send: the same key and body within 24 hours answers the same.
CREATE TABLE message_idempotency_keys (
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  key              text NOT NULL,
  request_hash     text NOT NULL,
  message_id       text NOT NULL,
  response         jsonb NOT NULL,
  created_at       timestamptz NOT NULL,
  PRIMARY KEY (organization_id, key)
);

-- The simulated carrier's pacing: the next free send slot of each sending number.
CREATE TABLE carrier_pacing (
  number        text PRIMARY KEY,
  next_free_at  timestamptz NOT NULL
);
