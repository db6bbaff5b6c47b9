-- The claim's statements are planned with rough row counts (a jsonb_to_recordset of the quotas is 100 rows
-- to the planner, each queue's head up to a tenth of its due jobs), so once a queue holds a backlog of some
-- thousands of jobs their estimated cost passes jit_above_cost (100,000 by default) and PostgreSQL compiles
-- each claim to machine code before running it: 57-91 ms of compiling for a claim that then runs in 2 ms
-- (auto_explain in `npm run bench:webhooks` at 6,000 events), at every claim, which halved webhook deliveries
-- and made PostgreSQL the bound. The claims are short OLTP statements that JIT cannot repay: it is off for
-- them, whatever the server's setting. (PGlite has no JIT; the setting is accepted and changes nothing.)
ALTER FUNCTION jobs_claim(jsonb, jsonb, timestamptz, integer, text) SET jit = off;
ALTER FUNCTION jobs_claim_by_key(text, text, integer, integer, integer, integer, timestamptz, text) SET jit = off;
ALTER FUNCTION job_keys_room(text, text[], integer, timestamptz) SET jit = off;
