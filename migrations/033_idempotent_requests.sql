-- Idempotency-Key on every write of the developer API (platform/http/idempotent-writes.ts, docs/idempotency.md).
-- A keyed request first reserves its key (reservation set, reserved_at kept fresh while it runs), then
-- records the HTTP answer it gave (status_code, response_headers, response_body) and clears the reservation.
-- A reservation not refreshed for a minute was left by a crashed process and may be taken over. Rows written
-- by a write that stores its own result in its transaction (messages.send: `response`) leave the new columns
-- empty; the request hash of a multipart upload is known only once its body has been read, so it is
-- rewritten when the answer is recorded.
ALTER TABLE idempotency_keys ALTER COLUMN response DROP NOT NULL;
ALTER TABLE idempotency_keys ADD COLUMN reservation text;
ALTER TABLE idempotency_keys ADD COLUMN reserved_at timestamptz;
ALTER TABLE idempotency_keys ADD COLUMN status_code integer;
ALTER TABLE idempotency_keys ADD COLUMN response_headers jsonb;
ALTER TABLE idempotency_keys ADD COLUMN response_body text;
-- Every write may now leave a row: retention finds the expired ones by age without reading them all.
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
