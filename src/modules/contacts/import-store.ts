// The SQL of staged contact imports (contact_import_rows): rows are staged while the file is read, then
// applied to contacts in file order, a range of positions per statement. See import.ts for why imports are
// staged. Rows never travel back through Node once staged: one statement per batch takes them off the
// staging table, upserts them into contacts and records the consent they give.
import { deleteInBatches } from '../../platform/db/batches.ts';
import { isUniqueViolation, type Queryable } from '../../platform/db/index.ts';
import type { ImportedContact } from './store.ts';

/**
 * A valid row as it is staged: its phone and its position in the file in columns of their own, and in `row`
 * only the fields that have a value (the apply reads a missing one as null), with the ids its contact and its
 * consent event get if the apply creates them (made here, by the one id maker, so the apply needs nothing from
 * Node). A whole file is staged before any of it is applied, so a staged row's size is the import's memory on
 * PGlite in memory: every field of every row, nulls and names included and phone and position twice, took 388
 * bytes a row; 184 now (issue 31, finding 10). Built once per row, straight from the validated contact: the
 * copies made on the way there were a fifth of reading a file (docs/performance.md).
 */
export interface StagedRow {
  phone: string;
  position: number;
  row: Partial<Record<StoredField, unknown>>;
}

type StoredField = Exclude<keyof ImportedContact, 'phone'> | 'contactId' | 'consentEventId';

const STAGE = 'INSERT INTO contact_import_rows (import_id, phone, position, row, created_at)';
const STAGED_VALUES = `$1, staged->>'phone', (staged->>'position')::int, staged->'row', $3
  FROM jsonb_array_elements($2::jsonb) AS staged`;

/** A validated contact as it is staged, at `position` in the file, with the ids the apply may give it. */
export function stagedRow(
  contact: ImportedContact,
  position: number,
  contactId: string,
  consentEventId: string | null,
): StagedRow {
  const row: StagedRow['row'] = { contactId };
  if (contact.firstName !== null) row.firstName = contact.firstName;
  if (contact.lastName !== null) row.lastName = contact.lastName;
  if (contact.email !== null) row.email = contact.email;
  if (contact.company !== null) row.company = contact.company;
  if (contact.timezone !== null) row.timezone = contact.timezone;
  if (contact.consentStatus !== null) row.consentStatus = contact.consentStatus;
  if (contact.consentDate !== null) row.consentDate = contact.consentDate;
  if (contact.consentMethod !== null) row.consentMethod = contact.consentMethod;
  if (consentEventId !== null) row.consentEventId = consentEventId;
  for (const _ in contact.customFields) {
    row.customFields = contact.customFields;
    break;
  }
  return { phone: contact.phone, position, row };
}

export interface AppliedCounts {
  imported: number;
  updated: number;
}

export class ContactImportStore {
  /**
   * Stages rows (one per phone within the batch); a phone staged before, by an earlier batch, is replaced by
   * the later row. The batch travels as one JSON document: serialising it is one native call, where an array
   * parameter per column cost a string escape per value.
   */
  async stage(db: Queryable, importId: string, rows: StagedRow[], now: Date): Promise<void> {
    const params = [importId, JSON.stringify(rows), now];
    // A plain insert first: a phone repeated across batches is rare, and ON CONFLICT's speculative insertion
    // made staging a quarter slower on both engines. The staged rows are this import's alone, so a conflict
    // can only be a repeat in the file, and the statement failing whole changes nothing.
    try {
      await db.query(`${STAGE} SELECT ${STAGED_VALUES}`, params);
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      await db.query(
        `${STAGE} SELECT ${STAGED_VALUES}
         ON CONFLICT (import_id, phone) DO UPDATE SET position = EXCLUDED.position, row = EXCLUDED.row`,
        params,
      );
    }
  }

  /**
   * Applies the staged rows at positions `from` to `to` (inclusive) and removes them from staging: new phones
   * become contacts, existing ones are updated (non-empty cells replace values, empty cells keep them (a time
   * zone too), custom fields are merged, consent given in the file replaces the stored consent), and each
   * row that gives consent adds a `consent_recorded` event to the number's history. One statement, so one
   * batch is one atomic step whichever transaction it runs in.
   */
  async apply(
    db: Queryable,
    importId: string,
    range: { from: number; to: number },
    organizationId: string,
    actor: string,
    now: Date,
  ): Promise<AppliedCounts> {
    const [counts] = await db.query<AppliedCounts>(
      `WITH taken AS (
         DELETE FROM contact_import_rows
          WHERE import_id = $1 AND position BETWEEN $2 AND $3
         RETURNING phone, row
       ), upserted AS (
         INSERT INTO contacts (id, organization_id, phone, first_name, last_name, email, company, custom_fields,
                               timezone, consent_status, consent_date, consent_method, created_at, updated_at)
         SELECT row->>'contactId', $4, phone, row->>'firstName', row->>'lastName', row->>'email',
                row->>'company', COALESCE(row->'customFields', '{}'), row->>'timezone',
                COALESCE(row->>'consentStatus', 'unknown'), (row->>'consentDate')::timestamptz,
                row->>'consentMethod', $5, $5
           FROM taken
         ON CONFLICT (organization_id, phone) DO UPDATE SET
           first_name = COALESCE(EXCLUDED.first_name, contacts.first_name),
           last_name = COALESCE(EXCLUDED.last_name, contacts.last_name),
           email = COALESCE(EXCLUDED.email, contacts.email),
           company = COALESCE(EXCLUDED.company, contacts.company),
           custom_fields = contacts.custom_fields || EXCLUDED.custom_fields,
           timezone = COALESCE(EXCLUDED.timezone, contacts.timezone),
           consent_status = CASE WHEN EXCLUDED.consent_date IS NOT NULL OR EXCLUDED.consent_status <> 'unknown'
                                 THEN EXCLUDED.consent_status ELSE contacts.consent_status END,
           consent_date = COALESCE(EXCLUDED.consent_date, contacts.consent_date),
           consent_method = COALESCE(EXCLUDED.consent_method, contacts.consent_method),
           updated_at = EXCLUDED.updated_at
         RETURNING id, phone, (xmax = 0) AS inserted
       ), consented AS (
         INSERT INTO consent_events (id, organization_id, phone, contact_id, action, method, reason, actor,
                                     created_at)
         SELECT taken.row->>'consentEventId', $4, taken.phone, upserted.id, 'consent_recorded',
                COALESCE(taken.row->>'consentMethod', 'import'), 'contact import', $6, $5
           FROM taken JOIN upserted ON upserted.phone = taken.phone
          WHERE taken.row->>'consentEventId' IS NOT NULL
       )
       SELECT count(*) FILTER (WHERE inserted)::int AS imported, count(*) FILTER (WHERE NOT inserted)::int AS updated
         FROM upserted`,
      [importId, range.from, range.to, organizationId, now, actor],
    );
    return counts!;
  }

  /** Removes the rows an import left staged at positions `from` to `to` (a refused or failed import's). */
  async discard(db: Queryable, importId: string, range: { from: number; to: number }): Promise<void> {
    await db.query('DELETE FROM contact_import_rows WHERE import_id = $1 AND position BETWEEN $2 AND $3', [
      importId,
      range.from,
      range.to,
    ]);
  }

  /** Empties the staging table, giving its files back; only when no import is staging (see import.ts). */
  async truncate(db: Queryable): Promise<void> {
    await db.exec('TRUNCATE contact_import_rows');
  }

  /** Retention: rows staged before `before`, left behind by an import that crashed midway. */
  async deleteStale(db: Queryable, before: Date): Promise<number> {
    return deleteInBatches(
      db,
      `DELETE FROM contact_import_rows WHERE ctid IN (
         SELECT ctid FROM contact_import_rows WHERE created_at < $1 LIMIT $2)
       RETURNING 1`,
      [before],
    );
  }
}
