-- Webhooks: endpoints an organization registers, one delivery per (event, endpoint), and every attempt made.
-- Secrets are sealed with the app's secret box (AES-256-GCM, purpose `webhook-secret`, bound to the endpoint
-- id): we must read them back to sign, so they cannot be hashed.

CREATE TABLE webhook_endpoints (
  id                          text PRIMARY KEY,
  organization_id             text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  url                         text NOT NULL,
  description                 text,
  events                      text[] NOT NULL,
  enabled                     boolean NOT NULL DEFAULT true,
  disabled_reason             text,
  disabled_at                 timestamptz,
  secret_sealed               text NOT NULL,
  -- After a rotation the old secret still signs (beside the new one) until previous_secret_expires_at.
  previous_secret_sealed      text,
  previous_secret_expires_at  timestamptz,
  -- First failure of the current unbroken run of failures; cleared by any success. 5 days: disabled.
  failing_since               timestamptz,
  created_at                  timestamptz NOT NULL,
  updated_at                  timestamptz NOT NULL
);
CREATE INDEX webhook_endpoints_org_created ON webhook_endpoints (organization_id, created_at DESC, id DESC);

-- One row per event per subscribed endpoint. The body is frozen as text when the delivery is created, so
-- every attempt sends the same bytes under the same webhook-id (the event id).
CREATE TABLE webhook_deliveries (
  id                     text PRIMARY KEY,
  organization_id        text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  endpoint_id            text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id               text NOT NULL,
  event_type             text NOT NULL,
  body                   text NOT NULL,
  status                 text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempts               integer NOT NULL DEFAULT 0,
  last_status_code       integer,
  last_duration_ms       integer,
  last_error             text,
  last_response_excerpt  text,
  last_attempt_at        timestamptz,
  next_attempt_at        timestamptz,
  created_at             timestamptz NOT NULL,
  -- Event dispatch is at-least-once: a second fan-out of the same event finds its rows already here.
  UNIQUE (event_id, endpoint_id)
);
CREATE INDEX webhook_deliveries_endpoint_created ON webhook_deliveries (endpoint_id, created_at DESC, id DESC);

CREATE TABLE webhook_attempts (
  id                text PRIMARY KEY,
  delivery_id       text NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  attempt           integer NOT NULL,
  status_code       integer,
  duration_ms       integer NOT NULL,
  error             text,
  response_excerpt  text,
  created_at        timestamptz NOT NULL
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, attempt);
