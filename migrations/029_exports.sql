-- Data exports (CONTRACT section 11, docs/exports.md): a durable job writes an organization's messages,
-- contacts, calls or campaign recipients as CSV or JSON Lines into chunks of at most a few hundred kilobytes,
-- so neither building nor downloading holds the whole file; kept 7 days after they are asked for.
CREATE TABLE exports (
  id               text PRIMARY KEY,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  resource         text NOT NULL CHECK (resource IN ('messages', 'contacts', 'calls', 'campaign_recipients')),
  format           text NOT NULL CHECK (format IN ('csv', 'jsonl')),
  filters          jsonb NOT NULL DEFAULT '{}',
  status           text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
  row_count        integer,
  size_bytes       bigint,
  error            text,
  created_by       text,
  created_at       timestamptz NOT NULL,
  completed_at     timestamptz,
  expires_at       timestamptz NOT NULL
);
CREATE INDEX exports_org_created ON exports (organization_id, created_at DESC, id DESC);
CREATE INDEX exports_expires ON exports (expires_at);

CREATE TABLE export_chunks (
  export_id  text NOT NULL REFERENCES exports (id) ON DELETE CASCADE,
  seq        integer NOT NULL,
  data       bytea NOT NULL,
  PRIMARY KEY (export_id, seq)
);
