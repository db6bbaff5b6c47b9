-- An organization's API version (docs/versioning.md), pinned when it is created, as Stripe does: a request
-- without an API-Version header is answered as of this version, so a new version never changes what an
-- organization's existing integration sees until someone chooses to move. Organizations made before this
-- migration are pinned to the version current at the time.
ALTER TABLE organizations ADD COLUMN api_version text NOT NULL DEFAULT '2026-09-01';
