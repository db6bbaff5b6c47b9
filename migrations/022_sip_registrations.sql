-- SIP registrations (CONTRACT section 9, "Real SIP"): where each extension's phones can be reached. Kept in the
-- database, not in a process, so any instance's SIP listener finds the contacts another instance registered.
-- A binding lives until `expires_at` (the Expires the phone asked for, bounded by the registrar); lookups skip
-- expired rows and the registrar deletes them as it goes.
CREATE TABLE sip_registrations (
  extension_id  text NOT NULL REFERENCES extensions (id) ON DELETE CASCADE,
  contact       text NOT NULL,
  -- Where the REGISTER came from (transport, address, port): the way back to a phone behind NAT.
  source        text NOT NULL,
  user_agent    text,
  expires_at    timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL,
  PRIMARY KEY (extension_id, contact)
);
CREATE INDEX sip_registrations_expiry ON sip_registrations (expires_at);
