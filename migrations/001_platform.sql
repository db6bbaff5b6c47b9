-- Platform mechanisms: the durable job queue and the event outbox.

CREATE TABLE jobs (
  id            text PRIMARY KEY,
  queue         text NOT NULL,
  payload       jsonb NOT NULL,
  status        text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'completed', 'dead')),
  run_at        timestamptz NOT NULL,
  attempts      integer NOT NULL DEFAULT 0,
  max_attempts  integer NOT NULL DEFAULT 10,
  locked_by     text,
  locked_until  timestamptz,
  last_error    text,
  dedupe_key    text UNIQUE,
  created_at    timestamptz NOT NULL,
  finished_at   timestamptz
);
-- Workers only ever look for open jobs; finished ones stay out of the index.
CREATE INDEX jobs_due ON jobs (queue, run_at) WHERE status IN ('pending', 'running');

CREATE TABLE events (
  id               text PRIMARY KEY,
  organization_id  text NOT NULL,
  type             text NOT NULL,
  data             jsonb NOT NULL,
  created_at       timestamptz NOT NULL,
  dispatched_at    timestamptz
);
CREATE INDEX events_org_created ON events (organization_id, created_at DESC, id DESC);
