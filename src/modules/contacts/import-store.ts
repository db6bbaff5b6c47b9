// The SQL of staged contact imports (contact_import_rows): rows are staged while the file is read, then taken
// off in order, a batch at a time, to be applied. See import.ts for why imports are staged.
import { deleteInBatches } from '../../platform/db/batches.ts';
import type { Queryable } from '../../platform/db/index.ts';
import type { ImportedContact } from './store.ts';

export interface StagedRow {
  position: number;
  row: ImportedContact;
}

export class ContactImportStore {
  /** Stages rows (one per phone within the batch); a phone staged before is replaced by the later row. */
  async stage(db: Queryable, importId: string, rows: StagedRow[], now: Date): Promise<void> {
    await db.query(
      `INSERT INTO contact_import_rows (import_id, phone, position, row, created_at)
       SELECT $1, phone, position, row, $5
         FROM unnest($2::text[], $3::int[], $4::jsonb[]) AS t(phone, position, row)
       ON CONFLICT (import_id, phone) DO UPDATE SET position = EXCLUDED.position, row = EXCLUDED.row`,
      [
        importId,
        rows.map(({ row }) => row.phone),
        rows.map(({ position }) => position),
        rows.map(({ row }) => JSON.stringify(row)),
        now,
      ],
    );
  }

  /** Removes and returns the next `limit` staged rows in file order. */
  async take(db: Queryable, importId: string, limit: number): Promise<ImportedContact[]> {
    const taken = await db.query<{ position: number; row: ImportedContact & { consentDate: string | null } }>(
      `DELETE FROM contact_import_rows
        WHERE import_id = $1
          AND phone IN (SELECT phone FROM contact_import_rows WHERE import_id = $1 ORDER BY position LIMIT $2)
       RETURNING position, row`,
      [importId, limit],
    );
    return taken
      .sort((a, b) => a.position - b.position)
      .map(({ row }) => ({ ...row, consentDate: row.consentDate ? new Date(row.consentDate) : null }));
  }

  async discard(db: Queryable, importId: string): Promise<void> {
    await db.query('DELETE FROM contact_import_rows WHERE import_id = $1', [importId]);
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
