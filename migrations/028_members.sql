-- Members managed from the portal (docs/auth.md "Members"). A person invited by e-mail who has no account yet
-- gets one with an unusable random password until they set theirs through the invitation's link, which is a
-- password-reset token of purpose 'invite' (lives 7 days, mailed through the same job queue). A person who
-- already has an account is added at once and told by a mail of purpose 'added' (no token: they sign in as
-- they always do).
ALTER TABLE users ADD COLUMN invitation_pending boolean NOT NULL DEFAULT false;

ALTER TABLE password_reset_tokens
  ADD COLUMN purpose text NOT NULL DEFAULT 'reset' CHECK (purpose IN ('reset', 'invite', 'added')),
  ADD COLUMN organization_id text REFERENCES organizations (id) ON DELETE CASCADE,
  ADD COLUMN invited_by text REFERENCES users (id) ON DELETE SET NULL;

ALTER TABLE memberships ADD COLUMN invited_by text REFERENCES users (id) ON DELETE SET NULL;
