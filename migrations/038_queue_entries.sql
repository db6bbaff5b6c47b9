-- The queue runtime (CONTRACT section 13, docs/voice.md "Queues at run time"): one row per time a call joins a
-- queue, and its life as the table of src/modules/voice/queues/entry-states.ts says:
--   waiting -> offered (members ring) -> answered | back to waiting (nobody answered)
--   waiting | offered -> abandoned (the caller hung up) | timed_out (maxWaitSeconds passed; onTimeout runs)
-- Every move is an UPDATE guarded by the state it leaves, so two processes (or a hang-up racing an offer) cannot
-- both move one entry. `offered_to` is who rings for it now: those members are `ringing` in GET /queues/{id}/live.
-- `held_by` is the process whose PBX holds the call: only it offers the caller (its line is there).
-- The row stays after the wait (answered entries give round robin its last member, wrap-up its start and the
-- expected wait its history); the queue's deletion takes its rows.
CREATE TABLE queue_entries (
  id               text PRIMARY KEY,
  queue_id         text NOT NULL REFERENCES queues (id) ON DELETE CASCADE,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  call_id          text NOT NULL,
  from_number      text NOT NULL,
  state            text NOT NULL CHECK (state IN ('waiting', 'offered', 'answered', 'abandoned', 'timed_out')),
  offered_to       text[] NOT NULL DEFAULT ARRAY[]::text[],
  answered_by      text,
  held_by          text NOT NULL,
  joined_at        timestamptz NOT NULL,
  left_at          timestamptz,
  updated_at       timestamptz NOT NULL
);
-- Who waits, in arrival order: the dispatcher's and GET /live's read.
CREATE INDEX queue_entries_waiting ON queue_entries (queue_id, joined_at, id) WHERE state IN ('waiting', 'offered');
-- A call waits in one queue at a time.
CREATE UNIQUE INDEX queue_entries_one_wait ON queue_entries (call_id) WHERE state IN ('waiting', 'offered');
-- Answered entries, newest first: round robin's last member, wrap-up, the expected wait.
CREATE INDEX queue_entries_answered ON queue_entries (queue_id, left_at DESC) WHERE state = 'answered';
