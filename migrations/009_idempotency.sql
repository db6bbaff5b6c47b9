-- Idempotency keys for any write (platform/idempotency.ts), not only message sends: the same key and body
-- within 24 hours answer the first response again. `operation` names the write (e.g. `messages.send`), so
-- one key may be used once per operation. The send's existing keys move over unchanged.
CREATE TABLE idempotency_keys (
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  operation        text NOT NULL,
  key              text NOT NULL,
  request_hash     text NOT NULL,
  response         jsonb NOT NULL,
  created_at       timestamptz NOT NULL,
  PRIMARY KEY (organization_id, operation, key)
);

INSERT INTO idempotency_keys (organization_id, operation, key, request_hash, response, created_at)
  SELECT organization_id, 'messages.send', key, request_hash, response, created_at FROM message_idempotency_keys;

DROP TABLE message_idempotency_keys;
