-- Calls, voicemails, recordings and transcriptions (CONTRACT section 9), and each region's PBX capacity.
--
-- Capacity is a lease, not a counter: a call holds a place in its region while it has not ended and its
-- `lease_expires_at` is in the future. The PBX that holds the call renews the lease while the call lives; a
-- PBX that dies stops renewing, its calls' leases run out, and the places free themselves (the next admission
-- in the region marks such calls failed with the cause `pbx_lost`). A counter would leak on every crash.
CREATE TABLE voice_regions (
  region                text PRIMARY KEY CHECK (region IN ('us', 'ca', 'eu')),
  max_concurrent_calls  integer NOT NULL CHECK (max_concurrent_calls BETWEEN 0 AND 1000000),
  updated_at            timestamptz NOT NULL
);
INSERT INTO voice_regions (region, max_concurrent_calls, updated_at)
VALUES ('us', 100, now()), ('ca', 100, now()), ('eu', 100, now());

CREATE TABLE calls (
  id                text PRIMARY KEY,
  organization_id   text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  region            text NOT NULL,
  direction         text NOT NULL CHECK (direction IN ('inbound', 'outbound', 'internal')),
  from_number       text NOT NULL,
  to_number         text NOT NULL,
  status            text NOT NULL CHECK (status IN ('queued', 'ringing', 'in_progress', 'completed', 'busy',
                                                    'no_answer', 'failed', 'canceled')),
  started_at        timestamptz NOT NULL,
  answered_at       timestamptz,
  ended_at          timestamptz,
  duration_seconds  integer NOT NULL DEFAULT 0,
  hangup_cause      text,
  -- Ids of what the call touched, kept as history: deleting the extension does not rewrite its calls.
  extension_id      text,
  agent_id          text,
  recording_id      text,
  voicemail_id      text,
  record            boolean NOT NULL DEFAULT false,
  lease_expires_at  timestamptz,
  created_at        timestamptz NOT NULL,
  updated_at        timestamptz NOT NULL
);
CREATE INDEX calls_org_created ON calls (organization_id, created_at DESC, id DESC);
-- The calls holding a place: what admission counts and what the sweep of lost calls reads.
CREATE INDEX calls_live ON calls (region, lease_expires_at) WHERE ended_at IS NULL;

-- Audio is kept in the database beside its record (TOAST stores it out of line), so one backup holds
-- everything and both engines (PGlite, PostgreSQL) serve it alike. Lists never select it.
CREATE TABLE voicemails (
  id                text PRIMARY KEY,
  organization_id   text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  call_id           text NOT NULL,
  extension_id      text,
  from_number       text NOT NULL,
  to_number         text NOT NULL,
  duration_seconds  integer NOT NULL,
  voice             text NOT NULL,
  read              boolean NOT NULL DEFAULT false,
  audio             bytea NOT NULL,
  created_at        timestamptz NOT NULL,
  updated_at        timestamptz NOT NULL
);
CREATE INDEX voicemails_org_created ON voicemails (organization_id, created_at DESC, id DESC);

CREATE TABLE recordings (
  id                text PRIMARY KEY,
  organization_id   text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  call_id           text NOT NULL,
  duration_seconds  integer NOT NULL,
  voice             text NOT NULL,
  audio             bytea NOT NULL,
  created_at        timestamptz NOT NULL
);
CREATE INDEX recordings_org_created ON recordings (organization_id, created_at DESC, id DESC);

-- A transcription goes with its audio: deleting the voicemail or recording deletes what was heard in it.
CREATE TABLE transcriptions (
  id               text PRIMARY KEY,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  recording_id     text REFERENCES recordings (id) ON DELETE CASCADE,
  voicemail_id     text REFERENCES voicemails (id) ON DELETE CASCADE,
  status           text NOT NULL CHECK (status IN ('queued', 'completed', 'failed')),
  text             text,
  engine           text NOT NULL,
  error            text,
  created_at       timestamptz NOT NULL,
  completed_at     timestamptz,
  CHECK ((recording_id IS NULL) <> (voicemail_id IS NULL))
);
CREATE INDEX transcriptions_org_created ON transcriptions (organization_id, created_at DESC, id DESC);

-- The roadmap declared the voicemail event as `voicemail.received`; CONTRACT section 9 names it
-- `voicemail.created`, the name the voice module declares. Endpoints subscribed early keep their subscription.
UPDATE webhook_endpoints SET events = array_replace(events, 'voicemail.received', 'voicemail.created')
 WHERE 'voicemail.received' = ANY (events);
