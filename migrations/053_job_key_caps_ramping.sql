-- Whether a concurrency key's cap is still ramping up (slow start, as TCP's, RFC 5681): while it is, growing
-- the cap doubles it; the first halving ends it for good (until the key starts over: its row is deleted when
-- the endpoint changes its URL, is turned back on or is deleted), and growth is one at a time after that. Kept
-- with the cap, so a halving by one worker ends the ramp for every worker, as it halves the cap for all.
-- Caps that already moved before this migration grew one at a time and may have been halved: they go on one
-- at a time. A key's first move creates its row, ramping.
ALTER TABLE job_key_caps ADD COLUMN ramping boolean NOT NULL DEFAULT false;
ALTER TABLE job_key_caps ALTER COLUMN ramping SET DEFAULT true;
