-- Extensions (CONTRACT section 9): the internal numbers of an organization's phone system, each with its
-- voicemail box, forwarding and ring time, and SIP credentials for a desk or soft phone. The SIP password is
-- sealed with the secret box (purpose `sip-password`, bound to the extension's id): SIP digest authentication
-- needs the password itself (or a hash per realm and algorithm), so it cannot be stored as a one-way hash.
CREATE TABLE extensions (
  id                   text PRIMARY KEY,
  organization_id      text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  extension            text NOT NULL CHECK (extension ~ '^[0-9]{2,6}$'),
  name                 text NOT NULL,
  user_id              text REFERENCES users (id) ON DELETE SET NULL,
  voicemail_enabled    boolean NOT NULL DEFAULT true,
  voicemail_greeting   text,
  forward_to           text,
  ring_seconds         integer NOT NULL DEFAULT 20 CHECK (ring_seconds BETWEEN 5 AND 120),
  sip_username         text NOT NULL UNIQUE,
  sip_password_sealed  text NOT NULL,
  created_at           timestamptz NOT NULL,
  updated_at           timestamptz NOT NULL,
  CONSTRAINT extensions_number_in_use UNIQUE (organization_id, extension)
);
CREATE INDEX extensions_org_created ON extensions (organization_id, created_at DESC, id DESC);
