-- Scheduled messages (CONTRACT section 14, issue 36): POST /messages/send with `sendAt` stores the message as
-- `scheduled` with its due time; a job of the `messages.release` queue (run at that time) re-checks it and
-- queues it for dispatch, or fails it. The job queue holds the due time, so no index on it is needed for the
-- release; the partial index serves the trial burst, which counts a released scheduled message at its send
-- time rather than at its creation.
ALTER TABLE messages DROP CONSTRAINT messages_status_check;
ALTER TABLE messages ADD CONSTRAINT messages_status_check CHECK (status IN
  ('scheduled', 'queued', 'sent', 'delivered', 'failed', 'undelivered', 'cancelled', 'received'));

-- When a scheduled message is (or was) due to leave; null for a message sent at once.
ALTER TABLE messages ADD COLUMN send_at timestamptz;
-- The message's own quiet hours ("HH:MM" in the recipient's local time), checked again when it is released.
ALTER TABLE messages ADD COLUMN quiet_start text;
ALTER TABLE messages ADD COLUMN quiet_end text;

CREATE INDEX messages_org_send_at ON messages (organization_id, send_at) WHERE send_at IS NOT NULL;
