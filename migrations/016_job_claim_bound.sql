-- The claim reads a queue's due jobs with an upper bound on run_at in the index range, as jobs_claim_by_key
-- already did. A due job is pending with run_at passed or running under a lease that ran out, and a running
-- job's run_at is the moment it was due, before its claim, so `run_at <= now` holds for every due job; but
-- written only inside the OR, it bounded nothing, and each claim read on through every job booked for later
-- (a campaign keeps a few seconds of paced dispatches booked ahead: some hundreds of rows, at every claim).
-- Everything else is as migration 013 wrote it.

CREATE OR REPLACE FUNCTION jobs_claim(plain jsonb, capped jsonb, now timestamptz, total integer, worker text)
  RETURNS TABLE (id text, queue text, payload jsonb, attempts integer, max_attempts integer,
                 run_at timestamptz, created_at timestamptz, concurrency_key text, blocked_head boolean)
  LANGUAGE plpgsql VOLATILE
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
      SELECT * FROM jsonb_to_recordset(jobs_claim.plain) AS quota(queue text, size integer, lease_seconds integer)),
    taken AS (
      SELECT candidate.id, candidate.run_at, quota.lease_seconds
        FROM plain_quota AS quota
        CROSS JOIN LATERAL (
          SELECT jobs.id, jobs.run_at FROM jobs
           WHERE jobs.queue = quota.queue
             AND jobs.run_at <= jobs_claim.now
             AND ((jobs.status = 'pending' AND jobs.run_at <= jobs_claim.now)
               OR (jobs.status = 'running' AND jobs.locked_until <= jobs_claim.now))
           ORDER BY jobs.run_at, jobs.id
           LIMIT quota.size
           FOR UPDATE SKIP LOCKED) AS candidate
       ORDER BY candidate.run_at, candidate.id
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
    SELECT * FROM jsonb_to_recordset(jobs_claim.plain) AS quota(queue text, size integer, lease_seconds integer)),
  plain_due AS (
    SELECT candidate.id, candidate.run_at, quota.lease_seconds
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
             AS quota(queue text, size integer, lease_seconds integer, per_key integer, head_rows integer)),
  candidate AS (
    SELECT quota.queue, quota.size, quota.lease_seconds, quota.head_rows, oldest.id, oldest.run_at,
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
    SELECT locked.id, locked.run_at, allowed.lease_seconds
      FROM allowed
      CROSS JOIN LATERAL (
        SELECT jobs.id, jobs.run_at FROM jobs
         WHERE jobs.id = allowed.id
           AND ((jobs.status = 'pending' AND jobs.run_at <= jobs_claim.now)
             OR (jobs.status = 'running' AND jobs.locked_until <= jobs_claim.now))
           FOR UPDATE SKIP LOCKED) AS locked
     WHERE allowed.place_in_queue <= allowed.size),
  taken AS (
    SELECT * FROM plain_due UNION ALL SELECT * FROM keyed_due
     ORDER BY 2, 1
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
