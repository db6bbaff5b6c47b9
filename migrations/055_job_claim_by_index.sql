-- A claim marks the jobs it took running with `UPDATE jobs … FROM taken WHERE jobs.id = taken.id`, and the
-- planner, which guesses the size of `taken` from a jsonb_to_recordset of the quotas (100 rows to it, whatever
-- they hold), joined the two by reading the whole jobs table: a sequential scan, or with that forbidden a full
-- walk of its primary key, at every claim. The table keeps finished jobs until retention removes them, so a
-- claim cost more the more work had been done: in `npm run bench:webhooks` at 20,000 events each claim read
-- 24,000-45,000 rows to mark 300, 12.5 ms a claim against 4.8 ms at 6,000 events, and the claims were half of
-- PostgreSQL's time (docs/performance.md, fourteenth session). The rows a claim takes are a few hundred at most
-- and each is one probe of the primary key: the claim functions plan with nested loops and index scans only.
-- Their other joins are between a few hundred rows at most, where a nested loop is as good as any. (The five-
-- argument jobs_claim, kept for the previous release's workers during a rolling restart, gets the same.)
ALTER FUNCTION jobs_claim(jsonb, jsonb, timestamptz, integer, text, integer)
  SET enable_seqscan = off;
ALTER FUNCTION jobs_claim(jsonb, jsonb, timestamptz, integer, text, integer)
  SET enable_hashjoin = off;
ALTER FUNCTION jobs_claim(jsonb, jsonb, timestamptz, integer, text, integer)
  SET enable_mergejoin = off;
ALTER FUNCTION jobs_claim(jsonb, jsonb, timestamptz, integer, text)
  SET enable_seqscan = off;
ALTER FUNCTION jobs_claim(jsonb, jsonb, timestamptz, integer, text)
  SET enable_hashjoin = off;
ALTER FUNCTION jobs_claim(jsonb, jsonb, timestamptz, integer, text)
  SET enable_mergejoin = off;
ALTER FUNCTION jobs_claim_by_key(text, text, integer, integer, integer, integer, timestamptz, text)
  SET enable_seqscan = off;
ALTER FUNCTION jobs_claim_by_key(text, text, integer, integer, integer, integer, timestamptz, text)
  SET enable_hashjoin = off;
ALTER FUNCTION jobs_claim_by_key(text, text, integer, integer, integer, integer, timestamptz, text)
  SET enable_mergejoin = off;
