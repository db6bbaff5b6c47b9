-- A concurrency key's own cap, moved while it runs (src/platform/jobs.ts, adjustKeyCap): webhook endpoints
-- start at their queue's perKeyConcurrency, grow while the receiver keeps up, halve when it pushes back
-- (429, 503, slow answers) and pause while its Retry-After lasts. A key without a row keeps the queue's cap.
-- The claim reads this through job_keys_room, so the cap holds across every worker, like the queue's own.
CREATE TABLE job_key_caps (
  queue           text NOT NULL,
  concurrency_key text COLLATE "C" NOT NULL,
  cap             integer NOT NULL CHECK (cap >= 1),
  -- No job of the key starts before this (the receiver asked us to wait).
  paused_until    timestamptz,
  updated_at      timestamptz NOT NULL,
  PRIMARY KEY (queue, concurrency_key)
);

-- As migration 013 wrote it, with each key's own cap (or `cap`, the queue's, when it has none) and no room
-- at all while the key is paused.
CREATE OR REPLACE FUNCTION job_keys_room(queue text, keys text[], cap integer, now timestamptz)
  RETURNS TABLE (concurrency_key text, room integer)
  LANGUAGE plpgsql VOLATILE STRICT
  AS $$
#variable_conflict use_column
BEGIN
  PERFORM pg_advisory_xact_lock(727002, turn.lock)
     FROM (SELECT DISTINCT job_key_lock(job_keys_room.queue, key.value) AS lock
             FROM unnest(job_keys_room.keys) AS key(value)
            ORDER BY 1) AS turn;
  RETURN QUERY
    SELECT key.value,
           CASE WHEN own.paused_until > job_keys_room.now THEN 0
                ELSE greatest(COALESCE(own.cap, job_keys_room.cap) - count(jobs.id)::integer, 0) END
      FROM unnest(job_keys_room.keys) AS key(value)
      LEFT JOIN job_key_caps AS own
        ON own.queue = job_keys_room.queue AND own.concurrency_key = key.value
      LEFT JOIN jobs
        ON jobs.queue = job_keys_room.queue AND jobs.concurrency_key = key.value
       AND jobs.status = 'running' AND jobs.locked_until > job_keys_room.now
     GROUP BY key.value, own.cap, own.paused_until;
END
$$;
