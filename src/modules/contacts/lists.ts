// Contact lists: named groups of an organization's contacts, for campaigns. Lists and their members are
// paged by offset only (spec: a `cursor` has no effect on them).
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { PageQueryInput, Paginator } from '../../platform/pagination.ts';
import { type ContactListRow, ContactListStore, type ContactMemberRow } from './list-store.ts';
import type { ContactList, ContactListMember } from './schemas.ts';
import { toContact } from './service.ts';

export class ContactListService {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly pagination: Paginator;
  private readonly store = new ContactListStore();

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
    await this.store.insert(this.db, {
      id,
      organizationId,
      name: input.name.trim(),
      description: input.description ?? null,
      now,
    });
    return this.get(organizationId, id);
  }

  async get(organizationId: string, id: string): Promise<ContactList> {
    const row = await this.store.find(this.db, organizationId, id);
    if (!row) throw ApiError.notFound('Contact list');
    return toList(row);
  }

  list(organizationId: string, query: PageQueryInput, surface: string) {
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.contact-lists.list`,
      keyset: false,
      organizationId,
      ...this.store.listQuery(organizationId),
      map: toList,
    });
  }

  async update(organizationId: string, id: string, input: { name?: string; description?: string | null }) {
    const changes = { name: input.name?.trim() ?? null, description: input.description };
    if (!(await this.store.update(this.db, organizationId, id, changes, this.clock.now()))) {
      throw ApiError.notFound('Contact list');
    }
    return this.get(organizationId, id);
  }

  async delete(organizationId: string, id: string): Promise<void> {
    if (!(await this.store.delete(this.db, organizationId, id))) throw ApiError.notFound('Contact list');
  }

  /**
   * Adds contacts to a list. Every id must be a contact of the organization, or nothing is added (404 naming
   * the unknown ids). Adding a member twice is not an error. Returns how many were newly added.
   */
  async addMembers(organizationId: string, listId: string, contactIds: string[]): Promise<{ added: number }> {
    const ids = [...new Set(contactIds)];
    return this.db.transaction(async (tx) => {
      if (!(await this.store.lock(tx, organizationId, listId))) throw ApiError.notFound('Contact list');
      const found = await this.store.existingContactIds(tx, organizationId, ids);
      if (found.length !== ids.length) {
        const known = new Set(found);
        const unknown = ids.filter((id) => !known.has(id));
        throw new ApiError(404, `Contacts not found: ${unknown.slice(0, 10).join(', ')}`);
      }
      const added = await this.store.addMembers(tx, listId, ids, this.clock.now());
      await this.store.touch(tx, listId, this.clock.now());
      return { added };
    });
  }

  async removeMembers(
    organizationId: string,
    listId: string,
    contactIds: string[],
  ): Promise<{ removed: number }> {
    return this.db.transaction(async (tx) => {
      if (!(await this.store.lock(tx, organizationId, listId))) throw ApiError.notFound('Contact list');
      return { removed: await this.store.removeMembers(tx, listId, [...new Set(contactIds)]) };
    });
  }

  async members(organizationId: string, listId: string, query: PageQueryInput, surface: string) {
    await this.get(organizationId, listId);
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.contact-lists.members`,
      keyset: false,
      organizationId,
      filters: { listId },
      ...this.store.membersQuery(organizationId, listId),
      map: (row: ContactMemberRow): ContactListMember => ({
        ...toContact(row),
        addedAt: row.added_at.toISOString(),
      }),
    });
  }
}

function toList(row: ContactListRow): ContactList {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    memberCount: row.member_count,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
