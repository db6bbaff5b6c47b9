-- Tenancy: organizations with their plan and billing state, users, and who belongs where with what role.

CREATE TABLE organizations (
  id                          text PRIMARY KEY,
  name                        text NOT NULL,
  plan                        text NOT NULL DEFAULT 'pro' CHECK (plan IN ('starter', 'pro', 'ultra', 'enterprise')),
  subscription_state          text NOT NULL DEFAULT 'trial'
                              CHECK (subscription_state IN ('trial', 'paid', 'past_due', 'scheduled_to_cancel')),
  card_verified               boolean NOT NULL DEFAULT false,
  region                      text NOT NULL DEFAULT 'us' CHECK (region IN ('us', 'ca', 'eu')),
  monthly_allowance_segments  integer NOT NULL DEFAULT 1000 CHECK (monthly_allowance_segments >= 0),
  daily_limit_segments        integer NOT NULL DEFAULT 5000 CHECK (daily_limit_segments >= 0),
  trial_message_limit         integer NOT NULL DEFAULT 100 CHECK (trial_message_limit >= 0),
  created_at                  timestamptz NOT NULL,
  updated_at                  timestamptz NOT NULL
);

CREATE TABLE users (
  id                       text PRIMARY KEY,
  email                    text NOT NULL,
  name                     text,
  password_hash            text NOT NULL,
  require_password_change  boolean NOT NULL DEFAULT false,
  created_at               timestamptz NOT NULL,
  updated_at               timestamptz NOT NULL
);
-- E-mail addresses are matched without regard to case.
CREATE UNIQUE INDEX users_email ON users (lower(email));

CREATE TABLE memberships (
  user_id          text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  role             text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
  created_at       timestamptz NOT NULL,
  PRIMARY KEY (user_id, organization_id)
);
CREATE INDEX memberships_org ON memberships (organization_id);
