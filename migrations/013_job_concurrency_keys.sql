-- Concurrency groups in the job queue, and the claim as functions (src/platform/jobs/store.ts calls them).
-- A job may name a key, and a queue that declares `perKeyConcurrency` never runs more than that many jobs of
-- one key at once, across every worker on the database. Webhook deliveries use their endpoint's id as key, so
-- one slow receiver holds a few slots, never all of them.
-- The claim lives here, in PL/pgSQL, because a session keeps the plans of a function's statements: a claim
-- sent as a statement of its size is parsed and planned again at every claim on embedded PGlite (it cost
-- more than running it), where this is done once per connection on both engines. Changing the claim is a
-- migration that replaces these functions.

-- Byte order ("C"): keys are ids, and a claim steps through them in the order the worker compares them in.
ALTER TABLE jobs ADD COLUMN concurrency_key text COLLATE "C";

-- A claim reads a queue's due jobs in (run_at, id) order. With `id` in the index as well, the index scan
-- yields exactly that order and a claim reads only the rows it takes; with (queue, run_at) alone the
-- planner may sort every due job of the queue for each claim (it did, with a young table's statistics).
DROP INDEX jobs_due;
CREATE INDEX jobs_due ON jobs (queue, run_at, id) WHERE status IN ('pending', 'running');

-- A key's open jobs in order: a claim reads each key's oldest due jobs from here, and steps from one key to
-- the next (one probe each) when the oldest due jobs of a queue all belong to keys that have no room.
CREATE INDEX jobs_open_by_key ON jobs (queue, concurrency_key, run_at, id)
  WHERE status IN ('pending', 'running') AND concurrency_key IS NOT NULL;
-- The jobs of a key running now: what a claim counts to know the key's room. Small: running jobs only.
CREATE INDEX jobs_running_by_key ON jobs (queue, concurrency_key, locked_until)
  WHERE status = 'running' AND concurrency_key IS NOT NULL;

-- The advisory lock (in the space 727002) that makes claims of one (queue, key) take turns.
CREATE FUNCTION job_key_lock(queue text, concurrency_key text) RETURNS integer
  LANGUAGE sql IMMUTABLE STRICT
  AS $$ SELECT hashtext(queue || chr(31) || concurrency_key) $$;

-- How many more jobs of each key a claim may start: `cap` minus the key's jobs running under a live lease.
-- Two claims running at once must not both see the same room, and a statement's snapshot predates any wait,
-- so the count is made here, after taking every key's turn (held until the claim commits): a VOLATILE
-- function reads each of its queries with a fresh snapshot, which shows every claim of these keys that
-- committed before us. Turns are taken in the order of job_key_lock, so two claims never wait in a circle.
CREATE FUNCTION job_keys_room(queue text, keys text[], cap integer, now timestamptz)
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
    SELECT key.value, greatest(job_keys_room.cap - count(jobs.id)::integer, 0)
      FROM unnest(job_keys_room.keys) AS key(value)
      LEFT JOIN jobs
        ON jobs.queue = job_keys_room.queue AND jobs.concurrency_key = key.value
       AND jobs.status = 'running' AND jobs.locked_until > job_keys_room.now
     GROUP BY key.value;
END
$$;

-- A claim: up to `total` due jobs, oldest first, at most each quota's `size` of its queue. A due job is
-- pending with run_at passed, or running under a lease that ran out (its worker died). `plain` quotas
-- ([{queue, size, lease_seconds}]) read each queue's due jobs from its own index range, locked with SKIP
-- LOCKED, so a backlog in one queue cannot hide another's and concurrent claims never wait on each other's
-- rows. `capped` quotas ([{queue, size, lease_seconds, per_key, head_rows}]) read the queue's `head_rows`
-- oldest due jobs, keep at most each key's room of them (a job without a key has no cap), then lock those.
-- Returns the jobs taken, and a row without id (blocked_head) for each capped queue whose head was read to
-- its bound: due jobs of other keys may wait past it (jobs_claim_by_key finds them).
-- The quotas arrive as JSON: PostgreSQL cannot count the rows of jsonb_to_recordset, so the plan it makes for
-- some quotas suits any and the session keeps one (with arrays it can count, it planned every claim anew).
CREATE FUNCTION jobs_claim(plain jsonb, capped jsonb, now timestamptz, total integer, worker text)
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

-- A claim past the head of a capped queue, key by key: the next `keys_per_look` keys after `after` that have
-- open jobs (a loose index scan of jobs_open_by_key, one probe per key however many jobs the key before it
-- holds), each key's oldest due jobs within its room, at most `size` in all, taken in key order (so every
-- key's turn comes as the caller moves `after` on). Returns the jobs taken, and a row without id telling how
-- many keys were visited and the last of them.
CREATE FUNCTION jobs_claim_by_key(queue text, after text, keys_per_look integer, size integer,
                                  lease_seconds integer, per_key integer, now timestamptz, worker text)
  RETURNS TABLE (id text, queue_name text, payload jsonb, attempts integer, max_attempts integer,
                 run_at timestamptz, created_at timestamptz, concurrency_key text, keys_visited integer,
                 last_key text)
  LANGUAGE plpgsql VOLATILE
  AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH RECURSIVE lane (concurrency_key, visited) AS (
    SELECT (SELECT jobs.concurrency_key FROM jobs
             WHERE jobs.queue = jobs_claim_by_key.queue AND jobs.concurrency_key > jobs_claim_by_key.after
               AND jobs.status IN ('pending', 'running')
             ORDER BY jobs.concurrency_key LIMIT 1), 1
    UNION ALL
    SELECT (SELECT jobs.concurrency_key FROM jobs
             WHERE jobs.queue = jobs_claim_by_key.queue AND jobs.concurrency_key > lane.concurrency_key
               AND jobs.status IN ('pending', 'running')
             ORDER BY jobs.concurrency_key LIMIT 1), lane.visited + 1
      FROM lane WHERE lane.concurrency_key IS NOT NULL AND lane.visited < jobs_claim_by_key.keys_per_look),
  candidate AS (
    SELECT oldest.id, oldest.run_at, oldest.concurrency_key,
           row_number() OVER (PARTITION BY oldest.concurrency_key ORDER BY oldest.run_at, oldest.id) AS place_in_key
      FROM lane
      CROSS JOIN LATERAL (
        SELECT jobs.id, jobs.run_at, jobs.concurrency_key FROM jobs
         WHERE jobs.queue = jobs_claim_by_key.queue AND jobs.concurrency_key = lane.concurrency_key
           AND jobs.run_at <= jobs_claim_by_key.now
           AND ((jobs.status = 'pending' AND jobs.run_at <= jobs_claim_by_key.now)
             OR (jobs.status = 'running' AND jobs.locked_until <= jobs_claim_by_key.now))
         ORDER BY jobs.run_at, jobs.id
         LIMIT jobs_claim_by_key.per_key) AS oldest
     WHERE lane.concurrency_key IS NOT NULL),
  key_room AS (
    SELECT * FROM job_keys_room(jobs_claim_by_key.queue,
                                ARRAY(SELECT DISTINCT candidate.concurrency_key FROM candidate),
                                jobs_claim_by_key.per_key, jobs_claim_by_key.now)),
  allowed AS (
    SELECT candidate.*, row_number() OVER (ORDER BY candidate.concurrency_key, candidate.run_at,
                                                    candidate.id) AS place
      FROM candidate JOIN key_room ON key_room.concurrency_key = candidate.concurrency_key
     WHERE candidate.place_in_key <= key_room.room),
  keyed_due AS (
    SELECT locked.id FROM allowed
      CROSS JOIN LATERAL (
        SELECT jobs.id FROM jobs
         WHERE jobs.id = allowed.id
           AND ((jobs.status = 'pending' AND jobs.run_at <= jobs_claim_by_key.now)
             OR (jobs.status = 'running' AND jobs.locked_until <= jobs_claim_by_key.now))
           FOR UPDATE SKIP LOCKED) AS locked
     WHERE allowed.place <= jobs_claim_by_key.size),
  claimed AS (
    UPDATE jobs SET status = 'running', attempts = jobs.attempts + 1, locked_by = jobs_claim_by_key.worker,
           locked_until = jobs_claim_by_key.now + make_interval(secs => jobs_claim_by_key.lease_seconds)
      FROM keyed_due WHERE jobs.id = keyed_due.id
    RETURNING jobs.id, jobs.queue, jobs.payload, jobs.attempts, jobs.max_attempts, jobs.run_at,
              jobs.created_at, jobs.concurrency_key)
  SELECT claimed.*, NULL::integer, NULL::text FROM claimed
  UNION ALL
  SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, count(lane.concurrency_key)::integer,
         max(lane.concurrency_key)
    FROM lane;
END
$$;

-- 16 random characters of the alphabet of src/platform/ids.ts, for ids a statement makes for many rows at
-- once (a webhook fan-out's deliveries and jobs): `prefix || random_id_tail()` has the shape of newId(). In
-- PL/pgSQL because a session keeps its plan, where an SQL function's body is planned again in every statement.
CREATE FUNCTION random_id_tail() RETURNS text
  LANGUAGE plpgsql VOLATILE
  AS $$
DECLARE
  bytes bytea := sha256(uuid_send(gen_random_uuid()));
  tail text := '';
BEGIN
  FOR i IN 0..15 LOOP
    tail := tail || substr('0123456789abcdefghijklmnopqrstuvwxyz', get_byte(bytes, i) % 36 + 1, 1);
  END LOOP;
  RETURN tail;
END
$$;

-- Delivery jobs waiting at the upgrade take their endpoint as key, like every delivery job enqueued after it.
UPDATE jobs SET concurrency_key = webhook_deliveries.endpoint_id
  FROM webhook_deliveries
 WHERE jobs.queue = 'webhooks.deliver' AND jobs.status IN ('pending', 'running')
   AND webhook_deliveries.id = jobs.payload ->> 'deliveryId';
