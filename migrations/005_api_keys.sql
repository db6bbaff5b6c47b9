-- API keys of the developer API. Only the SHA-256 of a key is kept: keys are 256-bit random strings, so a
-- fast hash, indexed for lookup, is safe; the full key is shown once, at creation.

CREATE TABLE api_keys (
  id               text PRIMARY KEY,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name             text NOT NULL,
  key_hash         text NOT NULL UNIQUE,
  prefix           text NOT NULL,
  last_four        text NOT NULL,
  environment      text NOT NULL CHECK (environment IN ('live', 'test')),
  scopes           text[] NOT NULL,
  expires_at       timestamptz,
  revoked_at       timestamptz,
  last_used_at     timestamptz,
  created_by       text REFERENCES users (id) ON DELETE SET NULL,
  created_at       timestamptz NOT NULL
);
CREATE INDEX api_keys_org_created ON api_keys (organization_id, created_at DESC, id DESC);
