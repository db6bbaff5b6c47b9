-- SIP digest nonce counts (issue 32, RFC 7616 section 3.3): the highest `nc` each nonce has been used with, so
-- a captured Authorization (same nonce, same or lower nc) is refused instead of accepted for the nonce's five
-- minutes. In the database, not in a process: a phone's next request may reach another instance. A row is
-- written only after the digest answer proved the password, and lives as long as its nonce could still be taken
-- as fresh (`expires_at`); the hourly clean-up deletes it after that.
CREATE TABLE sip_digest_nonces (
  nonce       text PRIMARY KEY,
  -- Eight hex digits (RFC 7616 section 3.4): up to 2^32 - 1, more than an integer holds.
  nc          bigint NOT NULL,
  expires_at  timestamptz NOT NULL
);
CREATE INDEX sip_digest_nonces_expiry ON sip_digest_nonces (expires_at);
