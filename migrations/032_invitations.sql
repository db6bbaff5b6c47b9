-- Invitations to an organization (docs/members.md). Inviting an e-mail no longer makes anyone a member: it
-- records a pending invitation, good for 7 days, that the person accepts or declines. A person who can sign in
-- answers it in the portal; a person without an account (or without a password of their own, or without any
-- organization to sign in to) accepts it by choosing a password through the invitation's mailed link. Owners
-- and admins see it in the member list until it is answered, and may revoke it.
CREATE TABLE invitations (
  id               text PRIMARY KEY,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  email            text NOT NULL,
  -- The name the inviter typed, shown to the organization; never the account's own name.
  name             text,
  role             text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
  invited_by       text REFERENCES users (id) ON DELETE SET NULL,
  status           text NOT NULL DEFAULT 'pending'
                   CHECK (status IN ('pending', 'accepted', 'declined', 'revoked')),
  created_at       timestamptz NOT NULL,
  -- When it was last sent: inviting the same e-mail again refreshes the pending row instead of adding one.
  sent_at          timestamptz NOT NULL,
  expires_at       timestamptz NOT NULL,
  answered_at      timestamptz
);
-- One pending invitation per organization and address (any case): the refresh's ON CONFLICT target.
CREATE UNIQUE INDEX invitations_pending ON invitations (organization_id, lower(email)) WHERE status = 'pending';
-- A person's own pending invitations, found by their account's address.
CREATE INDEX invitations_pending_by_email ON invitations (lower(email)) WHERE status = 'pending';
CREATE INDEX invitations_expiry ON invitations (expires_at);

-- Before invitations, a person invited without an account was made a member at once, with an unusable
-- password, until they chose one through the link (users.invitation_pending). Those memberships become the
-- pending invitations they always were, so the link now accepts them; except where that would leave an
-- organization without an owner who can sign in.
WITH legacy AS (
  SELECT m.user_id, m.organization_id, m.role, m.invited_by, m.created_at, u.email, u.name
    FROM memberships m JOIN users u ON u.id = m.user_id
   WHERE u.invitation_pending
     AND (m.role <> 'owner' OR EXISTS (
           SELECT 1 FROM memberships o JOIN users ou ON ou.id = o.user_id
            WHERE o.organization_id = m.organization_id AND o.role = 'owner' AND NOT ou.invitation_pending))
), moved AS (
  INSERT INTO invitations (id, organization_id, email, name, role, invited_by, status, created_at, sent_at,
                           expires_at)
  SELECT 'inv_' || substr(md5(random()::text || clock_timestamp()::text || l.user_id || l.organization_id), 1, 25),
         l.organization_id, l.email, l.name, l.role, l.invited_by, 'pending', l.created_at, l.created_at,
         l.created_at + interval '7 days'
    FROM legacy l
  RETURNING organization_id
)
DELETE FROM memberships m USING legacy l
 WHERE m.user_id = l.user_id AND m.organization_id = l.organization_id;
