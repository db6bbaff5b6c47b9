-- Contact imports are staged before they are applied (src/modules/contacts/import.ts): the whole file is read
-- and validated into this table in short batches, so a file that turns out unreadable or too large changes no
-- contact, and then applied to `contacts` in short batches, so an import never holds the database (on
-- embedded PGlite, its one connection) for longer than one batch. A later row for the same phone replaces an
-- earlier one (`position` keeps the file's order).
CREATE TABLE contact_import_rows (
  import_id   text NOT NULL,
  phone       text NOT NULL,
  position    integer NOT NULL,
  row         jsonb NOT NULL,
  created_at  timestamptz NOT NULL,
  PRIMARY KEY (import_id, phone)
);
CREATE INDEX contact_import_rows_order ON contact_import_rows (import_id, position);
