// The SQL of phone credentials (migrations/050_phone_credentials.sql). Every method takes the Queryable to run on.
import type { Queryable } from '../../platform/db/index.ts';
import type { ExtensionRow } from './extension-store.ts';

export interface PhoneCredentialRow {
  id: string;
  organization_id: string;
  extension_id: string;
  user_id: string;
  session_id: string;
  username: string;
  password_sealed: string;
  created_at: Date;
  expires_at: Date;
}

export class PhoneCredentialStore {
  async insert(db: Queryable, row: PhoneCredentialRow): Promise<void> {
    await db.query(
      `INSERT INTO phone_credentials (id, organization_id, extension_id, user_id, session_id, username,
                                      password_sealed, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [
        row.id,
        row.organization_id,
        row.extension_id,
        row.user_id,
        row.session_id,
        row.username,
        row.password_sealed,
        row.created_at,
        row.expires_at,
      ],
    );
  }

  async findByUsername(db: Queryable, username: string): Promise<PhoneCredentialRow | undefined> {
    const [row] = await db.query<PhoneCredentialRow>('SELECT * FROM phone_credentials WHERE username = $1', [
      username,
    ]);
    return row;
  }

  async find(db: Queryable, id: string): Promise<PhoneCredentialRow | undefined> {
    const [row] = await db.query<PhoneCredentialRow>('SELECT * FROM phone_credentials WHERE id = $1', [id]);
    return row;
  }

  /**
   * The user's extension in the organization: the one named, or their oldest when none is. Another user's or
   * another organization's extension is not theirs (undefined).
   */
  async extensionOf(
    db: Queryable,
    organizationId: string,
    userId: string,
    extensionId: string | undefined,
  ): Promise<ExtensionRow | undefined> {
    const [row] = await db.query<ExtensionRow>(
      `SELECT * FROM extensions
        WHERE organization_id = $1 AND user_id = $2 AND ($3::text IS NULL OR id = $3::text)
        ORDER BY created_at, id LIMIT 1`,
      [organizationId, userId, extensionId ?? null],
    );
    return row;
  }

  /**
   * Keeps the session's `keep` newest credentials and deletes the rest (their bindings go with them): a
   * console renewing its credentials leaves the previous ones to its next REGISTER, never an unbounded pile.
   */
  async trimSession(db: Queryable, sessionId: string, keep: number): Promise<void> {
    await db.query(
      `DELETE FROM phone_credentials WHERE id IN (
         SELECT id FROM phone_credentials WHERE session_id = $1 ORDER BY created_at DESC, id DESC OFFSET $2)`,
      [sessionId, keep],
    );
  }

  async remove(db: Queryable, id: string): Promise<void> {
    await db.query('DELETE FROM phone_credentials WHERE id = $1', [id]);
  }

  /** Deletes credentials expired at `now` (with their bindings); returns how many. */
  async removeExpired(db: Queryable, now: Date): Promise<number> {
    const rows = await db.query('DELETE FROM phone_credentials WHERE expires_at <= $1 RETURNING id', [now]);
    return rows.length;
  }
}
