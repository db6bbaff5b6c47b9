// The SQL of contact lists and their members. Like store.ts, every method takes the Queryable to run on; the
// rules stay with ContactListService.
import type { Queryable } from '../../platform/db/index.ts';
import { CONTACT_SELECT, type ContactRow, type ListSql } from './store.ts';

export interface ContactListRow {
  id: string;
  name: string;
  description: string | null;
  member_count: number;
  created_at: Date;
  updated_at: Date;
}

export type ContactMemberRow = ContactRow & { added_at: Date };

const LIST_SELECT = `l.id, l.name, l.description, l.created_at, l.updated_at,
  (SELECT count(*)::int FROM contact_list_members m WHERE m.list_id = l.id) AS member_count`;

export class ContactListStore {
  async insert(
    db: Queryable,
    list: { id: string; organizationId: string; name: string; description: string | null; now: Date },
  ): Promise<void> {
    await db.query(
      `INSERT INTO contact_lists (id, organization_id, name, description, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $5)`,
      [list.id, list.organizationId, list.name, list.description, list.now],
    );
  }

  async find(db: Queryable, organizationId: string, id: string): Promise<ContactListRow | undefined> {
    const [row] = await db.query<ContactListRow>(
      `SELECT ${LIST_SELECT} FROM contact_lists l WHERE l.organization_id = $1 AND l.id = $2`,
      [organizationId, id],
    );
    return row;
  }

  listQuery(organizationId: string): ListSql<ContactListRow> {
    return {
      select: LIST_SELECT,
      from: 'contact_lists l',
      where: 'l.organization_id = $1',
      params: [organizationId],
      orderBy: { createdAt: 'l.created_at', id: 'l.id' },
    };
  }

  /** Renames a list (`name` null: kept) and sets its description when `description` is given; false: no list. */
  async update(
    db: Queryable,
    organizationId: string,
    id: string,
    changes: { name: string | null; description?: string | null },
    now: Date,
  ): Promise<boolean> {
    const rows = await db.query(
      `UPDATE contact_lists SET updated_at = $3, name = COALESCE($4, name),
              description = CASE WHEN $5::boolean THEN $6 ELSE description END
        WHERE organization_id = $1 AND id = $2 RETURNING id`,
      [organizationId, id, now, changes.name, changes.description !== undefined, changes.description ?? null],
    );
    return rows.length > 0;
  }

  async delete(db: Queryable, organizationId: string, id: string): Promise<boolean> {
    const rows = await db.query(
      'DELETE FROM contact_lists WHERE organization_id = $1 AND id = $2 RETURNING id',
      [organizationId, id],
    );
    return rows.length > 0;
  }

  /** Locks the list's row for the rest of the transaction; false when there is no such list. */
  async lock(db: Queryable, organizationId: string, id: string): Promise<boolean> {
    const rows = await db.query(
      'SELECT id FROM contact_lists WHERE organization_id = $1 AND id = $2 FOR UPDATE',
      [organizationId, id],
    );
    return rows.length > 0;
  }

  /** Which of `ids` are contacts of the organization. */
  async existingContactIds(db: Queryable, organizationId: string, ids: string[]): Promise<string[]> {
    const rows = await db.query<{ id: string }>(
      'SELECT id FROM contacts WHERE organization_id = $1 AND id = ANY($2::text[])',
      [organizationId, ids],
    );
    return rows.map((row) => row.id);
  }

  /** Adds the contacts to the list; returns how many were not members yet. */
  async addMembers(db: Queryable, listId: string, contactIds: string[], now: Date): Promise<number> {
    const added = await db.query(
      `INSERT INTO contact_list_members (list_id, contact_id, added_at)
       SELECT $1, id, $3 FROM unnest($2::text[]) AS t(id)
       ON CONFLICT (list_id, contact_id) DO NOTHING RETURNING contact_id`,
      [listId, contactIds, now],
    );
    return added.length;
  }

  async touch(db: Queryable, listId: string, now: Date): Promise<void> {
    await db.query('UPDATE contact_lists SET updated_at = $2 WHERE id = $1', [listId, now]);
  }

  /** Removes the contacts from the list; returns how many were members. */
  async removeMembers(db: Queryable, listId: string, contactIds: string[]): Promise<number> {
    const removed = await db.query(
      'DELETE FROM contact_list_members WHERE list_id = $1 AND contact_id = ANY($2::text[]) RETURNING contact_id',
      [listId, contactIds],
    );
    return removed.length;
  }

  membersQuery(organizationId: string, listId: string): ListSql<ContactMemberRow> {
    return {
      select: `${CONTACT_SELECT}, m.added_at`,
      from: `contact_list_members m JOIN contacts c ON c.id = m.contact_id
             LEFT JOIN opt_outs o ON o.organization_id = c.organization_id AND o.phone = c.phone`,
      where: 'm.list_id = $1 AND c.organization_id = $2',
      params: [listId, organizationId],
      orderBy: { createdAt: 'm.added_at', id: 'c.id' },
    };
  }
}
