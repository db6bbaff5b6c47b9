-- Call flows served by the customer's app (issue 33, docs/voice.md "Flows from your app"). A number's voice
-- route may be a webhook: its target is the app's URL, and the flow of the organization that runs when the
-- app cannot be reached or answers nonsense is kept beside it (only on a webhook route).
ALTER TABLE phone_numbers ADD COLUMN voice_route_fallback_flow_id text;
ALTER TABLE phone_numbers DROP CONSTRAINT phone_numbers_voice_route_type;
ALTER TABLE phone_numbers ADD CONSTRAINT phone_numbers_voice_route_type
  CHECK (voice_route_type IN ('extension', 'agent', 'forward', 'voicemail', 'flow', 'webhook'));
ALTER TABLE phone_numbers ADD CONSTRAINT phone_numbers_route_fallback
  CHECK (voice_route_fallback_flow_id IS NULL OR voice_route_type = 'webhook');

-- The secret the organization's requests to its apps are signed with (Standard Webhooks, `whsec_…`), sealed
-- with the secret box (purpose `flow-app-secret`, bound to the organization id). After a rotation the
-- previous one keeps signing beside it for 24 hours, as an endpoint's does.
CREATE TABLE flow_app_secrets (
  organization_id             text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
  secret_sealed               text NOT NULL,
  previous_secret_sealed      text,
  previous_secret_expires_at  timestamptz,
  created_at                  timestamptz NOT NULL,
  updated_at                  timestamptz NOT NULL
);
