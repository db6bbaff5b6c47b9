-- Contacts, their consent, opt-outs, consent history and contact lists.

CREATE TABLE contacts (
  id               text PRIMARY KEY,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  phone            text NOT NULL,
  first_name       text,
  last_name        text,
  email            text,
  company          text,
  custom_fields    jsonb NOT NULL DEFAULT '{}'::jsonb,
  consent_status   text NOT NULL DEFAULT 'unknown' CHECK (consent_status IN ('granted', 'denied', 'unknown')),
  consent_date     timestamptz,
  consent_method   text,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  UNIQUE (organization_id, phone)
);
CREATE INDEX contacts_org_created ON contacts (organization_id, created_at DESC, id DESC);

-- Opt-outs are kept per phone number, apart from contacts: deleting or re-importing a contact must never
-- let a number that texted STOP be messaged again. A contact is opted out when its phone is in here.
CREATE TABLE opt_outs (
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  phone            text NOT NULL,
  method           text NOT NULL CHECK (method IN ('sms_stop', 'manual', 'api')),
  opted_out_at     timestamptz NOT NULL,
  PRIMARY KEY (organization_id, phone)
);

-- Every consent change, by phone number (so the history outlives a deleted contact).
CREATE TABLE consent_events (
  id               text PRIMARY KEY,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  phone            text NOT NULL,
  contact_id       text,
  action           text NOT NULL CHECK (action IN ('opted_out', 'opted_in', 'consent_recorded')),
  method           text,
  reason           text,
  actor            text NOT NULL,
  created_at       timestamptz NOT NULL
);
CREATE INDEX consent_events_phone ON consent_events (organization_id, phone, created_at DESC, id DESC);

CREATE TABLE contact_lists (
  id               text PRIMARY KEY,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name             text NOT NULL,
  description      text,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL
);
CREATE INDEX contact_lists_org_created ON contact_lists (organization_id, created_at DESC, id DESC);

CREATE TABLE contact_list_members (
  list_id     text NOT NULL REFERENCES contact_lists (id) ON DELETE CASCADE,
  contact_id  text NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
  added_at    timestamptz NOT NULL,
  PRIMARY KEY (list_id, contact_id)
);
CREATE INDEX contact_list_members_contact ON contact_list_members (contact_id);
