// The SQL of SIP registrations. Every method takes the Queryable to run on.
import type { Queryable } from '../../../platform/db/index.ts';

export interface RegistrationRow {
  extension_id: string;
  contact: string;
  source: string;
  user_agent: string | null;
  expires_at: Date;
  updated_at: Date;
  /** The phone credential it was registered with (the console's phone); null: the extension's own password. */
  credential_id: string | null;
}

export class RegistrationStore {
  /** Adds or refreshes a binding. */
  async upsert(db: Queryable, row: Omit<RegistrationRow, 'updated_at'>, now: Date): Promise<void> {
    await db.query(
      `INSERT INTO sip_registrations (extension_id, contact, source, user_agent, expires_at, updated_at, credential_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (extension_id, contact)
       DO UPDATE SET source = $3, user_agent = $4, expires_at = $5, updated_at = $6, credential_id = $7`,
      [row.extension_id, row.contact, row.source, row.user_agent, row.expires_at, now, row.credential_id],
    );
  }

  /** Bindings not expired at `now`, and the extensions they belong to (metrics). */
  async countActive(db: Queryable, now: Date): Promise<{ bindings: number; extensions: number }> {
    const [row] = await db.query<{ bindings: number; extensions: number }>(
      `SELECT count(*)::int AS bindings, count(DISTINCT extension_id)::int AS extensions
         FROM sip_registrations WHERE expires_at > $1`,
      [now],
    );
    return row!;
  }

  async remove(db: Queryable, extensionId: string, contact?: string): Promise<void> {
    await db.query(
      'DELETE FROM sip_registrations WHERE extension_id = $1 AND ($2::text IS NULL OR contact = $2)',
      [extensionId, contact ?? null],
    );
  }

  /** Deletes the bindings that came through one connection (`ws:address:port`); returns how many. */
  async removeBySource(db: Queryable, source: string): Promise<number> {
    const rows = await db.query('DELETE FROM sip_registrations WHERE source = $1 RETURNING contact', [
      source,
    ]);
    return rows.length;
  }

  /** Deletes every expired binding (the hourly clean-up); returns how many. */
  async removeExpired(db: Queryable, now: Date): Promise<number> {
    const rows = await db.query('DELETE FROM sip_registrations WHERE expires_at <= $1 RETURNING contact', [
      now,
    ]);
    return rows.length;
  }

  /** The extension's live bindings (expired ones are deleted first). */
  async live(db: Queryable, extensionId: string, now: Date): Promise<RegistrationRow[]> {
    await db.query('DELETE FROM sip_registrations WHERE extension_id = $1 AND expires_at <= $2', [
      extensionId,
      now,
    ]);
    return db.query<RegistrationRow>(
      'SELECT * FROM sip_registrations WHERE extension_id = $1 ORDER BY contact',
      [extensionId],
    );
  }
}
