-- Conversations (CONTRACT section 14, docs/conversations.md): one thread per organization, contact phone and
-- our number, and the timeline of what passed between them (texts, calls, voicemails, AI agent calls). The
-- items are threaded as their events are recorded (src/modules/conversations/threading.ts); each keeps what
-- the timeline shows of it (`details`), so a thread reads one table and never another module's.

CREATE TABLE conversations (
  id                text PRIMARY KEY,
  organization_id   text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  -- The other party, E.164.
  phone             text NOT NULL,
  -- Our number in the thread, E.164.
  number            text NOT NULL,
  status            text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed')),
  -- A member of the organization (a user id); null: nobody.
  assigned_to       text,
  last_activity_at  timestamptz NOT NULL,
  -- The newest inbound item: unread while it is newer than last_read_at.
  last_inbound_at   timestamptz,
  last_read_at      timestamptz,
  closed_at         timestamptz,
  created_at        timestamptz NOT NULL,
  updated_at        timestamptz NOT NULL,
  UNIQUE (organization_id, phone, number)
);
-- The inbox, newest activity first, offset and keyset (docs/pagination.md).
CREATE INDEX conversations_org_activity ON conversations (organization_id, last_activity_at DESC, id DESC);

CREATE TABLE conversation_items (
  conversation_id  text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  -- msg_…, call_…, vm_…, acall_…: prefixed, so unique across kinds.
  item_id          text NOT NULL,
  kind             text NOT NULL CHECK (kind IN ('message', 'call', 'voicemail', 'agent_call')),
  at               timestamptz NOT NULL,
  direction        text NOT NULL CHECK (direction IN ('inbound', 'outbound')),
  details          jsonb NOT NULL,
  PRIMARY KEY (conversation_id, item_id)
);
CREATE INDEX conversation_items_timeline ON conversation_items (conversation_id, at DESC, item_id DESC);

-- Backfill: every message already stored joins its thread, set-based. History from before conversations
-- existed counts as read (an inbox does not open with every old thread unread); calls and voicemails from
-- before stay out of threads (their records remain under /calls and /voicemails).
INSERT INTO conversations (id, organization_id, phone, number, status, last_activity_at, last_inbound_at,
                           last_read_at, created_at, updated_at)
SELECT 'conv_' || substr(replace(gen_random_uuid()::text, '-', ''), 1, 25),
       pair.organization_id, pair.phone, pair.number, 'open', pair.last_at, pair.last_inbound_at,
       pair.last_inbound_at, pair.first_at, pair.last_at
  FROM (SELECT organization_id,
               CASE WHEN direction = 'inbound' THEN from_number ELSE to_number END AS phone,
               CASE WHEN direction = 'inbound' THEN to_number ELSE from_number END AS number,
               min(created_at) AS first_at,
               max(created_at) AS last_at,
               max(created_at) FILTER (WHERE direction = 'inbound') AS last_inbound_at
          FROM messages
         GROUP BY 1, 2, 3) pair;

INSERT INTO conversation_items (conversation_id, item_id, kind, at, direction, details)
SELECT c.id, m.id, 'message', m.created_at, m.direction,
       jsonb_build_object('status', m.status, 'body', m.body, 'mediaCount', m.media_count)
  FROM messages m
  JOIN conversations c
    ON c.organization_id = m.organization_id
   AND c.phone = CASE WHEN m.direction = 'inbound' THEN m.from_number ELSE m.to_number END
   AND c.number = CASE WHEN m.direction = 'inbound' THEN m.to_number ELSE m.from_number END;
