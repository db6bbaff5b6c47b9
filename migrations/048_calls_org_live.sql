-- The live calls page (issue 37) lists an organization's calls that have not ended (GET /calls?live=true),
-- newest first: a partial index of those only, so the list reads the few live calls rather than scanning every
-- call the organization ever had.
CREATE INDEX calls_org_live ON calls (organization_id, created_at DESC, id DESC) WHERE ended_at IS NULL;
