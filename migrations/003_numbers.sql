-- Phone numbers an organization owns. A number belongs to one organization; its first is the default sender.

CREATE TABLE phone_numbers (
  id               text PRIMARY KEY,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  number           text NOT NULL UNIQUE,
  type             text NOT NULL CHECK (type IN ('local', 'toll_free', 'ca_local')),
  is_default       boolean NOT NULL DEFAULT false,
  created_at       timestamptz NOT NULL
);
CREATE INDEX phone_numbers_org ON phone_numbers (organization_id, created_at);
-- At most one default sender per organization.
CREATE UNIQUE INDEX phone_numbers_one_default ON phone_numbers (organization_id) WHERE is_default;
