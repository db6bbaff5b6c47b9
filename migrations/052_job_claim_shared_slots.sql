-- A claim's shared slots. A queue may have slots of its own beside the worker's shared ones (QueueOptions.ownSlots:
-- webhook deliveries, event dispatch), so one claim fills two kinds of room: each own-slot queue up to its own
-- quota, and the shared queues together up to the shared slots free. Each queue's quota alone cannot say the
-- second (two shared queues may each be given every free slot, as before, so that whichever has due jobs gets
-- them), and `total`, which bounded them when every slot was shared, now also counts the own slots: a claim
-- took four shared jobs for two free slots. So each quota says whether it is shared, and `shared_total` bounds
-- the shared jobs taken, oldest first, as `total` did. Everything else is as migration 016 wrote it, with JIT
-- off (migration 051).
-- The five-argument jobs_claim stays for the workers of the previous release during a rolling restart (they
-- pass no `shared` and no `shared_total`); a later migration may drop it.

CREATE FUNCTION jobs_claim(plain jsonb, capped jsonb, now timestamptz, total integer, worker text,
                           shared_total integer)
  RETURNS TABLE (id text, queue text, payload jsonb, attempts integer, max_attempts integer,
                 run_at timestamptz, created_at timestamptz, concurrency_key text, blocked_head boolean)
  LANGUAGE plpgsql VOLATILE
  SET jit = off
  AS $$
#variable_conflict use_column
BEGIN
  -- While no capped queue has a due job (the usual state of every queue but the busy one), the claim is the
  -- plain one alone: the capped part's plan, however empty its input, costs its setting up at every claim.
  IF NOT EXISTS (
    SELECT 1 FROM jsonb_to_recordset(jobs_claim.capped) AS quota(queue text)
     WHERE EXISTS (
       SELECT 1 FROM jobs
        WHERE jobs.queue = quota.queue
          AND jobs.run_at <= jobs_claim.now
          AND ((jobs.status = 'pending' AND jobs.run_at <= jobs_claim.now)
            OR (jobs.status = 'running' AND jobs.locked_until <= jobs_claim.now)))) THEN
    RETURN QUERY
    WITH plain_quota AS (
      SELECT * FROM jsonb_to_recordset(jobs_claim.plain)
               AS quota(queue text, size integer, lease_seconds integer, shared boolean)),
    due AS (
      SELECT candidate.id, candidate.run_at, quota.lease_seconds, quota.shared
        FROM plain_quota AS quota
        CROSS JOIN LATERAL (
          SELECT jobs.id, jobs.run_at FROM jobs
           WHERE jobs.queue = quota.queue
             AND jobs.run_at <= jobs_claim.now
             AND ((jobs.status = 'pending' AND jobs.run_at <= jobs_claim.now)
               OR (jobs.status = 'running' AND jobs.locked_until <= jobs_claim.now))
           ORDER BY jobs.run_at, jobs.id
           LIMIT quota.size
           FOR UPDATE SKIP LOCKED) AS candidate),
    taken AS (
      SELECT ranked.id, ranked.run_at, ranked.lease_seconds
        FROM (SELECT due.*, row_number() OVER (PARTITION BY due.shared ORDER BY due.run_at, due.id) AS place
                FROM due) AS ranked
       WHERE NOT ranked.shared OR ranked.place <= jobs_claim.shared_total
       ORDER BY ranked.run_at, ranked.id
       LIMIT jobs_claim.total),
    claimed AS (
      UPDATE jobs SET status = 'running', attempts = jobs.attempts + 1, locked_by = jobs_claim.worker,
             locked_until = jobs_claim.now + make_interval(secs => taken.lease_seconds)
        FROM taken WHERE jobs.id = taken.id
      RETURNING jobs.id, jobs.queue, jobs.payload, jobs.attempts, jobs.max_attempts, jobs.run_at,
                jobs.created_at, jobs.concurrency_key)
    SELECT claimed.*, NULL::boolean FROM claimed;
    RETURN;
  END IF;
  RETURN QUERY
  WITH plain_quota AS (
    SELECT * FROM jsonb_to_recordset(jobs_claim.plain)
             AS quota(queue text, size integer, lease_seconds integer, shared boolean)),
  plain_due AS (
    SELECT candidate.id, candidate.run_at, quota.lease_seconds, quota.shared
      FROM plain_quota AS quota
      CROSS JOIN LATERAL (
        SELECT jobs.id, jobs.run_at FROM jobs
         WHERE jobs.queue = quota.queue
           AND jobs.run_at <= jobs_claim.now
           AND ((jobs.status = 'pending' AND jobs.run_at <= jobs_claim.now)
             OR (jobs.status = 'running' AND jobs.locked_until <= jobs_claim.now))
         ORDER BY jobs.run_at, jobs.id
         LIMIT quota.size
         FOR UPDATE SKIP LOCKED) AS candidate),
  capped_quota AS (
    SELECT * FROM jsonb_to_recordset(jobs_claim.capped)
             AS quota(queue text, size integer, lease_seconds integer, per_key integer, head_rows integer,
                      shared boolean)),
  candidate AS (
    SELECT quota.queue, quota.size, quota.lease_seconds, quota.head_rows, quota.shared, oldest.id, oldest.run_at,
           oldest.concurrency_key,
           row_number() OVER (PARTITION BY quota.queue, oldest.concurrency_key
                              ORDER BY oldest.run_at, oldest.id) AS place_in_key
      FROM capped_quota AS quota
      CROSS JOIN LATERAL (
        SELECT jobs.id, jobs.run_at, jobs.concurrency_key FROM jobs
         WHERE jobs.queue = quota.queue
           AND jobs.run_at <= jobs_claim.now
           AND ((jobs.status = 'pending' AND jobs.run_at <= jobs_claim.now)
             OR (jobs.status = 'running' AND jobs.locked_until <= jobs_claim.now))
         ORDER BY jobs.run_at, jobs.id
         LIMIT quota.head_rows) AS oldest),
  key_room AS (
    SELECT quota.queue, room.concurrency_key, room.room
      FROM capped_quota AS quota
      CROSS JOIN LATERAL job_keys_room(
        quota.queue,
        ARRAY(SELECT DISTINCT candidate.concurrency_key FROM candidate
               WHERE candidate.queue = quota.queue AND candidate.concurrency_key IS NOT NULL),
        quota.per_key, jobs_claim.now) AS room),
  allowed AS (
    SELECT candidate.*, row_number() OVER (PARTITION BY candidate.queue
                                           ORDER BY candidate.run_at, candidate.id) AS place_in_queue
      FROM candidate
      LEFT JOIN key_room
        ON key_room.queue = candidate.queue AND key_room.concurrency_key = candidate.concurrency_key
     WHERE candidate.concurrency_key IS NULL OR candidate.place_in_key <= key_room.room),
  keyed_due AS (
    SELECT locked.id, locked.run_at, allowed.lease_seconds, allowed.shared
      FROM allowed
      CROSS JOIN LATERAL (
        SELECT jobs.id, jobs.run_at FROM jobs
         WHERE jobs.id = allowed.id
           AND ((jobs.status = 'pending' AND jobs.run_at <= jobs_claim.now)
             OR (jobs.status = 'running' AND jobs.locked_until <= jobs_claim.now))
           FOR UPDATE SKIP LOCKED) AS locked
     WHERE allowed.place_in_queue <= allowed.size),
  taken AS (
    SELECT ranked.id, ranked.run_at, ranked.lease_seconds
      FROM (SELECT due.*, row_number() OVER (PARTITION BY due.shared ORDER BY due.run_at, due.id) AS place
              FROM (SELECT * FROM plain_due UNION ALL SELECT * FROM keyed_due) AS due) AS ranked
     WHERE NOT ranked.shared OR ranked.place <= jobs_claim.shared_total
     ORDER BY ranked.run_at, ranked.id
     LIMIT jobs_claim.total),
  claimed AS (
    UPDATE jobs SET status = 'running', attempts = jobs.attempts + 1, locked_by = jobs_claim.worker,
           locked_until = jobs_claim.now + make_interval(secs => taken.lease_seconds)
      FROM taken WHERE jobs.id = taken.id
    RETURNING jobs.id, jobs.queue, jobs.payload, jobs.attempts, jobs.max_attempts, jobs.run_at,
              jobs.created_at, jobs.concurrency_key)
  SELECT claimed.*, NULL::boolean FROM claimed
  UNION ALL
  SELECT NULL, candidate.queue, NULL, NULL, NULL, NULL, NULL, NULL, true
    FROM candidate GROUP BY candidate.queue, candidate.head_rows
   HAVING count(*) >= candidate.head_rows;
END
$$;
