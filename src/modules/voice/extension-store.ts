// The SQL of extensions. Every method takes the Queryable to run on.

import { assignments } from '../../platform/db/assignments.ts';
import type { Queryable } from '../../platform/db/index.ts';
import type { ListQuery } from '../../platform/pagination.ts';
import type { Party } from './pbx.ts';

export interface ExtensionRow {
  id: string;
  organization_id: string;
  extension: string;
  name: string;
  user_id: string | null;
  voicemail_enabled: boolean;
  voicemail_greeting: string | null;
  /** The uploaded greeting's length; null when the box speaks its text greeting. */
  voicemail_greeting_seconds: number | null;
  voicemail_greeting_uploaded_at: Date | null;
  forward_to: string | null;
  ring_seconds: number;
  sip_username: string;
  sip_password_sealed: string;
  created_at: Date;
  updated_at: Date;
}

/** The columns a create or change sets, by name; undefined leaves a column as it is. */
export interface ExtensionColumns {
  extension?: string;
  name?: string;
  user_id?: string | null;
  voicemail_enabled?: boolean;
  voicemail_greeting?: string | null;
  forward_to?: string | null;
  ring_seconds?: number;
  sip_password_sealed?: string;
}

export class ExtensionStore {
  async insert(
    db: Queryable,
    row: Required<Pick<ExtensionColumns, 'extension' | 'name' | 'sip_password_sealed'>> &
      ExtensionColumns & { id: string; organization_id: string; sip_username: string; now: Date },
  ): Promise<ExtensionRow> {
    const [inserted] = await db.query<ExtensionRow>(
      `INSERT INTO extensions (id, organization_id, extension, name, user_id, voicemail_enabled, voicemail_greeting,
                               forward_to, ring_seconds, sip_username, sip_password_sealed, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, COALESCE($6, true), $7, $8, COALESCE($9, 20), $10, $11, $12, $12)
       RETURNING *`,
      [
        row.id,
        row.organization_id,
        row.extension,
        row.name,
        row.user_id ?? null,
        row.voicemail_enabled ?? null,
        row.voicemail_greeting ?? null,
        row.forward_to ?? null,
        row.ring_seconds ?? null,
        row.sip_username,
        row.sip_password_sealed,
        row.now,
      ],
    );
    return inserted!;
  }

  async find(db: Queryable, organizationId: string, id: string): Promise<ExtensionRow | undefined> {
    const [row] = await db.query<ExtensionRow>(
      'SELECT * FROM extensions WHERE id = $1 AND organization_id = $2',
      [id, organizationId],
    );
    return row;
  }

  /** The organization's extensions among `ids`, in the order of `ids`, each once; ids it no longer has are left out. */
  async findMany(db: Queryable, organizationId: string, ids: readonly string[]): Promise<ExtensionRow[]> {
    if (ids.length === 0) return [];
    const rows = await db.query<ExtensionRow>(
      'SELECT * FROM extensions WHERE organization_id = $1 AND id = ANY($2::text[])',
      [organizationId, [...ids]],
    );
    const byId = new Map(rows.map((row) => [row.id, row]));
    return [...new Set(ids)].flatMap((id) => byId.get(id) ?? []);
  }

  /** The extension whose phones authenticate as `username` (unique across the platform): the registrar's. */
  async findBySipUsername(db: Queryable, username: string): Promise<ExtensionRow | undefined> {
    const [row] = await db.query<ExtensionRow>('SELECT * FROM extensions WHERE sip_username = $1', [
      username,
    ]);
    return row;
  }

  /** The organization's extension with this number (an internal call's ends). */
  async findByNumber(
    db: Queryable,
    organizationId: string,
    extension: string,
  ): Promise<ExtensionRow | undefined> {
    const [row] = await db.query<ExtensionRow>(
      'SELECT * FROM extensions WHERE organization_id = $1 AND extension = $2',
      [organizationId, extension],
    );
    return row;
  }

  listQuery(
    organizationId: string,
  ): Pick<ListQuery<ExtensionRow, unknown>, 'select' | 'from' | 'where' | 'params'> {
    return { select: '*', from: 'extensions', where: 'organization_id = $1', params: [organizationId] };
  }

  /** Sets the columns given; undefined when the extension is not the organization's. */
  async update(
    db: Queryable,
    organizationId: string,
    id: string,
    columns: ExtensionColumns,
    now: Date,
  ): Promise<ExtensionRow | undefined> {
    const params: unknown[] = [id, organizationId, now];
    const sets = ['updated_at = $3', ...assignments({ ...columns }, params)];
    const [row] = await db.query<ExtensionRow>(
      `UPDATE extensions SET ${sets.join(', ')} WHERE id = $1 AND organization_id = $2 RETURNING *`,
      params,
    );
    return row;
  }

  /** Keeps `audio` as the extension's greeting (replacing any before); undefined when it is not the organization's. */
  async saveGreeting(
    db: Queryable,
    organizationId: string,
    id: string,
    greeting: { audio: Buffer; seconds: number },
    now: Date,
  ): Promise<ExtensionRow | undefined> {
    const [row] = await db.query<ExtensionRow>(
      `UPDATE extensions SET voicemail_greeting_seconds = $3, voicemail_greeting_uploaded_at = $4, updated_at = $4
       WHERE id = $1 AND organization_id = $2 RETURNING *`,
      [id, organizationId, greeting.seconds, now],
    );
    if (!row) return undefined;
    await db.query(
      `INSERT INTO voicemail_greetings (extension_id, organization_id, audio) VALUES ($1, $2, $3)
       ON CONFLICT (extension_id) DO UPDATE SET audio = EXCLUDED.audio`,
      [id, organizationId, greeting.audio],
    );
    return row;
  }

  /** The uploaded greeting's WAV, if the extension has one. */
  async greeting(db: Queryable, organizationId: string, id: string): Promise<Buffer | undefined> {
    const [row] = await db.query<{ audio: Uint8Array }>(
      'SELECT audio FROM voicemail_greetings WHERE extension_id = $1 AND organization_id = $2',
      [id, organizationId],
    );
    return row ? Buffer.from(row.audio.buffer, row.audio.byteOffset, row.audio.byteLength) : undefined;
  }

  /** Removes the uploaded greeting; undefined when the extension had none (or is not the organization's). */
  async removeGreeting(
    db: Queryable,
    organizationId: string,
    id: string,
    now: Date,
  ): Promise<ExtensionRow | undefined> {
    const removed = await db.query(
      'DELETE FROM voicemail_greetings WHERE extension_id = $1 AND organization_id = $2 RETURNING extension_id',
      [id, organizationId],
    );
    if (removed.length === 0) return undefined;
    const [row] = await db.query<ExtensionRow>(
      `UPDATE extensions SET voicemail_greeting_seconds = NULL, voicemail_greeting_uploaded_at = NULL, updated_at = $3
       WHERE id = $1 AND organization_id = $2 RETURNING *`,
      [id, organizationId, now],
    );
    return row;
  }

  async remove(db: Queryable, organizationId: string, id: string): Promise<boolean> {
    const rows = await db.query(
      'DELETE FROM extensions WHERE id = $1 AND organization_id = $2 RETURNING id',
      [id, organizationId],
    );
    return rows.length > 0;
  }
}

/** The party that rings an extension's phones. */
export function extensionParty(extension: ExtensionRow): Extract<Party, { kind: 'extension' }> {
  return { kind: 'extension', extensionId: extension.id, extension: extension.extension };
}

/** The party that rings these extensions together (one extension's own party when there is one). */
export function extensionsParty(extensions: readonly ExtensionRow[]): Party {
  return extensions.length === 1
    ? extensionParty(extensions[0]!)
    : { kind: 'extensions', members: extensions.map(extensionParty) };
}
