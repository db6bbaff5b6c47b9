// Contact lists: named groups of an organization's contacts, for campaigns. Lists and their members are
// paged by offset only (spec: a `cursor` has no effect on them).
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { PageQueryInput, Paginator } from '../../platform/pagination.ts';
import { CONTACT_SELECT, type ContactRow, toContact } from './service.ts';

export const MAX_MEMBERS_PER_CALL = 1000;

export interface ContactList {
  id: string;
  name: string;
  description: string | null;
  memberCount: number;
  createdAt: string;
  updatedAt: string;
}

interface ListRow {
  id: string;
  name: string;
  description: string | null;
  member_count: number;
  created_at: Date;
  updated_at: Date;
}

const LIST_SELECT = `l.id, l.name, l.description, l.created_at, l.updated_at,
  (SELECT count(*)::int FROM contact_list_members m WHERE m.list_id = l.id) AS member_count`;

export class ContactListService {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly pagination: Paginator;

  constructor(deps: { db: Database; clock: Clock; pagination: Paginator }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.pagination = deps.pagination;
  }

  async create(
    organizationId: string,
    input: { name: string; description?: string | null },
  ): Promise<ContactList> {
    const now = this.clock.now();
    const id = newId('cl', now.getTime());
    await this.db.query(
      `INSERT INTO contact_lists (id, organization_id, name, description, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $5)`,
      [id, organizationId, input.name.trim(), input.description ?? null, now],
    );
    return this.get(organizationId, id);
  }

  async get(organizationId: string, id: string): Promise<ContactList> {
    const [row] = await this.db.query<ListRow>(
      `SELECT ${LIST_SELECT} FROM contact_lists l WHERE l.organization_id = $1 AND l.id = $2`,
      [organizationId, id],
    );
    if (!row) throw ApiError.notFound('Contact list');
    return toList(row);
  }

  list(organizationId: string, query: PageQueryInput, surface: string) {
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.contact-lists.list`,
      keyset: false,
      organizationId,
      select: LIST_SELECT,
      from: 'contact_lists l',
      where: 'l.organization_id = $1',
      params: [organizationId],
      orderBy: { createdAt: 'l.created_at', id: 'l.id' },
      map: toList,
    });
  }

  async update(organizationId: string, id: string, input: { name?: string; description?: string | null }) {
    const [row] = await this.db.query<{ id: string }>(
      `UPDATE contact_lists SET updated_at = $3, name = COALESCE($4, name),
              description = CASE WHEN $5::boolean THEN $6 ELSE description END
        WHERE organization_id = $1 AND id = $2 RETURNING id`,
      [
        organizationId,
        id,
        this.clock.now(),
        input.name?.trim() ?? null,
        input.description !== undefined,
        input.description ?? null,
      ],
    );
    if (!row) throw ApiError.notFound('Contact list');
    return this.get(organizationId, id);
  }

  async delete(organizationId: string, id: string): Promise<void> {
    const rows = await this.db.query(
      'DELETE FROM contact_lists WHERE organization_id = $1 AND id = $2 RETURNING id',
      [organizationId, id],
    );
    if (rows.length === 0) throw ApiError.notFound('Contact list');
  }

  /**
   * Adds contacts to a list. Every id must be a contact of the organization, or nothing is added (404 naming
   * the unknown ids). Adding a member twice is not an error. Returns how many were newly added.
   */
  async addMembers(organizationId: string, listId: string, contactIds: string[]): Promise<{ added: number }> {
    const ids = [...new Set(contactIds)];
    return this.db.transaction(async (tx) => {
      await this.lockList(tx, organizationId, listId);
      const found = await tx.query<{ id: string }>(
        'SELECT id FROM contacts WHERE organization_id = $1 AND id = ANY($2::text[])',
        [organizationId, ids],
      );
      if (found.length !== ids.length) {
        const known = new Set(found.map((row) => row.id));
        const unknown = ids.filter((id) => !known.has(id));
        throw new ApiError(404, `Contacts not found: ${unknown.slice(0, 10).join(', ')}`);
      }
      const added = await tx.query(
        `INSERT INTO contact_list_members (list_id, contact_id, added_at)
         SELECT $1, id, $3 FROM unnest($2::text[]) AS t(id)
         ON CONFLICT (list_id, contact_id) DO NOTHING RETURNING contact_id`,
        [listId, ids, this.clock.now()],
      );
      await tx.query('UPDATE contact_lists SET updated_at = $2 WHERE id = $1', [listId, this.clock.now()]);
      return { added: added.length };
    });
  }

  async removeMembers(
    organizationId: string,
    listId: string,
    contactIds: string[],
  ): Promise<{ removed: number }> {
    return this.db.transaction(async (tx) => {
      await this.lockList(tx, organizationId, listId);
      const removed = await tx.query(
        'DELETE FROM contact_list_members WHERE list_id = $1 AND contact_id = ANY($2::text[]) RETURNING contact_id',
        [listId, [...new Set(contactIds)]],
      );
      return { removed: removed.length };
    });
  }

  async members(organizationId: string, listId: string, query: PageQueryInput, surface: string) {
    await this.get(organizationId, listId);
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.contact-lists.members`,
      keyset: false,
      organizationId,
      filters: { listId },
      select: `${CONTACT_SELECT}, m.added_at`,
      from: `contact_list_members m JOIN contacts c ON c.id = m.contact_id
             LEFT JOIN opt_outs o ON o.organization_id = c.organization_id AND o.phone = c.phone`,
      where: 'm.list_id = $1 AND c.organization_id = $2',
      params: [listId, organizationId],
      orderBy: { createdAt: 'm.added_at', id: 'c.id' },
      map: (row: ContactRow & { added_at: Date }) => ({
        ...toContact(row),
        addedAt: row.added_at.toISOString(),
      }),
    });
  }

  private async lockList(tx: { query: Database['query'] }, organizationId: string, listId: string) {
    const rows = await tx.query(
      'SELECT id FROM contact_lists WHERE organization_id = $1 AND id = $2 FOR UPDATE',
      [organizationId, listId],
    );
    if (rows.length === 0) throw ApiError.notFound('Contact list');
  }
}

function toList(row: ListRow): ContactList {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    memberCount: row.member_count,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
