-- The console's live pages (issue 37).
-- The live calls page lists an organization's calls that have not ended (GET /calls?live=true), newest first: a
-- partial index of those only, so the list reads the few live calls rather than scanning every call the
-- organization ever had.
CREATE INDEX calls_org_live ON calls (organization_id, created_at DESC, id DESC) WHERE ended_at IS NULL;
-- A queue's wallboard counts how the waits that ended today ended (GET /queues/{id}/live `outcomes`).
CREATE INDEX queue_entries_left ON queue_entries (queue_id, left_at) WHERE left_at IS NOT NULL;
