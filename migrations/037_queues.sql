-- Call queues (CONTRACT section 13) as a resource: who answers (member extensions, in order, by a strategy of
-- ring-order.ts), what the waiting caller hears, how long they may wait and the call-flow steps run when that
-- time is up. The runtime that holds callers and tracks members' states is not built yet (docs/voice.md).
-- Members are rows with ON DELETE CASCADE for the same reason as ring groups' (036_ring_groups.sql).
CREATE TABLE queues (
  id                 text PRIMARY KEY,
  organization_id    text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name               text NOT NULL,
  strategy           text NOT NULL CHECK (strategy IN ('simultaneous', 'sequential', 'round_robin',
                                                       'longest_idle')),
  hold_audio_id      text,
  announce_position  boolean NOT NULL,
  max_wait_seconds   integer NOT NULL CHECK (max_wait_seconds BETWEEN 10 AND 7200),
  -- Call-flow steps, validated by the flow step schema before they are written.
  on_timeout         jsonb NOT NULL,
  wrap_up_seconds    integer NOT NULL CHECK (wrap_up_seconds BETWEEN 0 AND 600),
  created_at         timestamptz NOT NULL,
  updated_at         timestamptz NOT NULL
);
CREATE INDEX queues_org_created ON queues (organization_id, created_at DESC, id DESC);

CREATE TABLE queue_members (
  queue_id      text NOT NULL REFERENCES queues (id) ON DELETE CASCADE,
  extension_id  text NOT NULL REFERENCES extensions (id) ON DELETE CASCADE,
  position      integer NOT NULL,
  PRIMARY KEY (queue_id, extension_id)
);
CREATE INDEX queue_members_extension ON queue_members (extension_id);
