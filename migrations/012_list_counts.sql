-- Offset-mode totals without counting every row on every page (docs/pagination.md, "What `total` costs").
--
-- list_counts holds, per organization, how many rows an unfiltered list shows: every message of the
-- organization (`messages`), every contact (`contacts`; contacts are deleted outright, never hidden). Triggers
-- keep it in the same transaction as the write, so it is exact: a rolled-back write rolls its count back, and
-- the counter row's lock makes concurrent writers of one organization add up one after another.
--
-- The triggers are per statement with transition tables, so a statement costs one counter upsert per
-- organization it touched however many rows it wrote (an import batch of 1,000 contacts: one). Counter rows
-- are locked in organization_id order, so two statements spanning several organizations cannot deadlock on
-- them. An INSERT … ON CONFLICT DO UPDATE that updates a row puts it only in the UPDATE transition table, so an
-- import row that updates an existing contact does not count.
--
-- The filtered lists still count the rows they match (an exact total over arbitrary filters has no cheaper
-- form), each through an index that starts with organization_id: the new ones below for messages; contacts'
-- opted-out filter uses the existing (organization_id, phone) keys of contacts and opt_outs.

CREATE TABLE list_counts (
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  -- Which list: the table it counts ('messages', 'contacts').
  list             text NOT NULL,
  count            bigint NOT NULL,
  PRIMARY KEY (organization_id, list)
);

-- TG_ARGV[0] names the list. Transition tables are called `inserted_rows` / `deleted_rows` by every trigger
-- below, so one function serves each table.
CREATE FUNCTION list_counts_add_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO list_counts (organization_id, list, count)
    SELECT organization_id, TG_ARGV[0], count(*) FROM inserted_rows
     GROUP BY organization_id ORDER BY organization_id
  ON CONFLICT (organization_id, list) DO UPDATE SET count = list_counts.count + EXCLUDED.count;
  RETURN NULL;
END $$;

-- An UPDATE, not an upsert: when an organization is deleted its counter rows may already be gone in the same
-- cascade, and re-inserting one would break the foreign key. Rows exist for every organization with rows
-- (the inserts made them, or the backfill below).
CREATE FUNCTION list_counts_subtract_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  removed record;
BEGIN
  FOR removed IN
    SELECT organization_id, count(*) AS removed_rows FROM deleted_rows GROUP BY organization_id ORDER BY organization_id
  LOOP
    UPDATE list_counts SET count = count - removed.removed_rows
     WHERE organization_id = removed.organization_id AND list = TG_ARGV[0];
  END LOOP;
  RETURN NULL;
END $$;

CREATE FUNCTION list_counts_clear() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM list_counts WHERE list = TG_ARGV[0];
  RETURN NULL;
END $$;

-- Rows never move between organizations; a counter would silently drift if one did, so it is refused.
CREATE FUNCTION refuse_organization_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '%: organization_id cannot change (list_counts counts rows per organization)', TG_TABLE_NAME;
END $$;

CREATE TRIGGER messages_count_inserted AFTER INSERT ON messages
  REFERENCING NEW TABLE AS inserted_rows
  FOR EACH STATEMENT EXECUTE FUNCTION list_counts_add_inserted('messages');
CREATE TRIGGER messages_count_deleted AFTER DELETE ON messages
  REFERENCING OLD TABLE AS deleted_rows
  FOR EACH STATEMENT EXECUTE FUNCTION list_counts_subtract_deleted('messages');
CREATE TRIGGER messages_count_truncated AFTER TRUNCATE ON messages
  FOR EACH STATEMENT EXECUTE FUNCTION list_counts_clear('messages');
CREATE TRIGGER messages_organization_fixed BEFORE UPDATE OF organization_id ON messages
  FOR EACH ROW WHEN (OLD.organization_id IS DISTINCT FROM NEW.organization_id)
  EXECUTE FUNCTION refuse_organization_change();

CREATE TRIGGER contacts_count_inserted AFTER INSERT ON contacts
  REFERENCING NEW TABLE AS inserted_rows
  FOR EACH STATEMENT EXECUTE FUNCTION list_counts_add_inserted('contacts');
CREATE TRIGGER contacts_count_deleted AFTER DELETE ON contacts
  REFERENCING OLD TABLE AS deleted_rows
  FOR EACH STATEMENT EXECUTE FUNCTION list_counts_subtract_deleted('contacts');
CREATE TRIGGER contacts_count_truncated AFTER TRUNCATE ON contacts
  FOR EACH STATEMENT EXECUTE FUNCTION list_counts_clear('contacts');
CREATE TRIGGER contacts_organization_fixed BEFORE UPDATE OF organization_id ON contacts
  FOR EACH ROW WHEN (OLD.organization_id IS DISTINCT FROM NEW.organization_id)
  EXECUTE FUNCTION refuse_organization_change();

-- The backfill runs after the triggers exist and in the migration's transaction, whose CREATE TRIGGER locks
-- keep writers out until it commits, so no row is counted twice or missed.
INSERT INTO list_counts (organization_id, list, count)
  SELECT organization_id, 'messages', count(*) FROM messages GROUP BY organization_id;
INSERT INTO list_counts (organization_id, list, count)
  SELECT organization_id, 'contacts', count(*) FROM contacts GROUP BY organization_id;

-- Message history filters (GET /messages): each served by an index led by organization_id, ordered like the
-- list, so a filtered count reads only the matching index entries and a filtered page stops after `limit`.
-- `number` matches from or to, hence two. `since`/`until` alone use messages_org_created.
CREATE INDEX messages_org_status_created ON messages (organization_id, status, created_at DESC, id DESC);
CREATE INDEX messages_org_direction_created ON messages (organization_id, direction, created_at DESC, id DESC);
CREATE INDEX messages_org_from_created ON messages (organization_id, from_number, created_at DESC, id DESC);
CREATE INDEX messages_org_to_created ON messages (organization_id, to_number, created_at DESC, id DESC);
