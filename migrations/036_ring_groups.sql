-- Ring groups (CONTRACT section 13): a name for several extensions that a call flow's dial step rings, by one
-- of four strategies (src/modules/voice/ring-groups/ring-order.ts). Members are rows, not an array, so that
-- deleting an extension takes it out of every group by the foreign key (ON DELETE CASCADE) without the
-- extensions code knowing groups exist; a group may so end up empty, and then rings nobody.
CREATE TABLE ring_groups (
  id                          text PRIMARY KEY,
  organization_id             text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name                        text NOT NULL,
  strategy                    text NOT NULL CHECK (strategy IN ('simultaneous', 'sequential', 'round_robin',
                                                                'longest_idle')),
  ring_seconds                integer NOT NULL CHECK (ring_seconds BETWEEN 5 AND 300),
  -- round_robin: who answered the group's last call; the next call starts after them. Not a foreign key: when
  -- that extension leaves, the rotation starts over at the top of the list.
  last_answered_extension_id  text,
  created_at                  timestamptz NOT NULL,
  updated_at                  timestamptz NOT NULL
);
CREATE INDEX ring_groups_org_created ON ring_groups (organization_id, created_at DESC, id DESC);

CREATE TABLE ring_group_members (
  ring_group_id  text NOT NULL REFERENCES ring_groups (id) ON DELETE CASCADE,
  extension_id   text NOT NULL REFERENCES extensions (id) ON DELETE CASCADE,
  position       integer NOT NULL,
  PRIMARY KEY (ring_group_id, extension_id)
);
-- Deleting an extension finds its memberships through this, not by scanning every group.
CREATE INDEX ring_group_members_extension ON ring_group_members (extension_id);

-- longest_idle reads each member's most recent ended call: one index probe per member instead of a scan of
-- the organization's calls.
CREATE INDEX calls_extension_ended ON calls (organization_id, extension_id, ended_at DESC)
  WHERE extension_id IS NOT NULL AND ended_at IS NOT NULL;
