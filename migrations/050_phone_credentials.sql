-- Phone credentials (CONTRACT section 16, issue 37): short-lived SIP digest credentials the portal issues to a
-- signed-in member for their own extension, so the console's phone registers without anyone typing a
-- password. Each belongs to the portal session it was issued to: ending the session (logout, a switch of
-- organization, the session's retention) deletes them, and with them every binding a phone registered with
-- them. A revoked session's credentials are refused by the registrar (it asks identity whether the session is
-- live). The password is sealed (AEAD, purpose `sip-phone-credential`, bound to the row's id), not hashed:
-- digest authentication needs it back, as for the extension's own password (docs/voice.md).
CREATE TABLE phone_credentials (
  id               text PRIMARY KEY,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  extension_id     text NOT NULL REFERENCES extensions (id) ON DELETE CASCADE,
  user_id          text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  session_id       text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  username         text NOT NULL UNIQUE,
  password_sealed  text NOT NULL,
  created_at       timestamptz NOT NULL,
  expires_at       timestamptz NOT NULL
);
CREATE INDEX phone_credentials_session ON phone_credentials (session_id, created_at DESC);
CREATE INDEX phone_credentials_expires_at ON phone_credentials (expires_at);

-- Which phone credential a binding was registered with (null: the extension's own password). Deleting the
-- credential deletes the binding: a browser signed out stops ringing at once, not when its binding expires.
ALTER TABLE sip_registrations
  ADD COLUMN credential_id text REFERENCES phone_credentials (id) ON DELETE CASCADE;
CREATE INDEX sip_registrations_credential ON sip_registrations (credential_id) WHERE credential_id IS NOT NULL;
