-- Uploaded voicemail greetings (docs/voice.md): an extension's box plays the owner's own recording instead of
-- the synthesised text greeting. The audio (8 kHz mono 16-bit WAV, converted from what was uploaded) lives in
-- its own table so that reading an extension, which the registrar does on every REGISTER, never loads it; its
-- length and time of upload sit on the extension, written in the same transaction.
CREATE TABLE voicemail_greetings (
  extension_id     text PRIMARY KEY REFERENCES extensions (id) ON DELETE CASCADE,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  audio            bytea NOT NULL
);

ALTER TABLE extensions
  ADD COLUMN voicemail_greeting_seconds  integer,
  ADD COLUMN voicemail_greeting_uploaded_at timestamptz;
