// The SQL of ring groups and their members. Every method takes the Queryable to run on.
import { assignments } from '../../../platform/db/assignments.ts';
import type { Queryable } from '../../../platform/db/index.ts';
import type { ListQuery } from '../../../platform/pagination.ts';
import { replaceMembers } from './members.ts';
import type { RingStrategy } from './ring-order.ts';

export interface RingGroupRow {
  id: string;
  organization_id: string;
  name: string;
  strategy: RingStrategy;
  ring_seconds: number;
  last_answered_extension_id: string | null;
  /** Its members in ring order (aggregated from ring_group_members). */
  extension_ids: string[];
  created_at: Date;
  updated_at: Date;
}

export type RingGroupColumns = Partial<Pick<RingGroupRow, 'name' | 'strategy' | 'ring_seconds'>>;

const GROUP_COLUMNS = `g.*, COALESCE((SELECT array_agg(m.extension_id ORDER BY m.position)
  FROM ring_group_members m WHERE m.ring_group_id = g.id), ARRAY[]::text[]) AS extension_ids`;

export class RingGroupStore {
  async insert(
    db: Queryable,
    row: Required<RingGroupColumns> & { id: string; organization_id: string; now: Date },
  ): Promise<void> {
    await db.query(
      `INSERT INTO ring_groups (id, organization_id, name, strategy, ring_seconds, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $6)`,
      [row.id, row.organization_id, row.name, row.strategy, row.ring_seconds, row.now],
    );
  }

  async find(db: Queryable, organizationId: string, id: string): Promise<RingGroupRow | undefined> {
    const [row] = await db.query<RingGroupRow>(
      `SELECT ${GROUP_COLUMNS} FROM ring_groups g WHERE g.id = $1 AND g.organization_id = $2`,
      [id, organizationId],
    );
    return row;
  }

  listQuery(
    organizationId: string,
  ): Pick<ListQuery<RingGroupRow, unknown>, 'select' | 'from' | 'where' | 'params' | 'orderBy'> {
    return {
      select: GROUP_COLUMNS,
      from: 'ring_groups g',
      where: 'g.organization_id = $1',
      params: [organizationId],
      orderBy: { createdAt: 'g.created_at', id: 'g.id' },
    };
  }

  /** Sets the columns given; false when the group is not the organization's. */
  async update(
    db: Queryable,
    organizationId: string,
    id: string,
    columns: RingGroupColumns,
    now: Date,
  ): Promise<boolean> {
    const params: unknown[] = [id, organizationId, now];
    const sets = ['updated_at = $3', ...assignments(columns, params)];
    const rows = await db.query(
      `UPDATE ring_groups SET ${sets.join(', ')} WHERE id = $1 AND organization_id = $2 RETURNING id`,
      params,
    );
    return rows.length > 0;
  }

  /** Makes `extensionIds` (in this order) the group's members. */
  setMembers(db: Queryable, ringGroupId: string, extensionIds: readonly string[]): Promise<void> {
    return replaceMembers(db, 'ring_group_members', ringGroupId, extensionIds);
  }

  async remove(db: Queryable, organizationId: string, id: string): Promise<boolean> {
    const rows = await db.query(
      'DELETE FROM ring_groups WHERE id = $1 AND organization_id = $2 RETURNING id',
      [id, organizationId],
    );
    return rows.length > 0;
  }

  /** Records who answered the group's call; nothing when they are not (or no longer) a member. */
  async answeredBy(db: Queryable, ringGroupId: string, extensionId: string): Promise<void> {
    await db.query(
      `UPDATE ring_groups SET last_answered_extension_id = $2
        WHERE id = $1
          AND EXISTS (SELECT 1 FROM ring_group_members WHERE ring_group_id = $1 AND extension_id = $2)`,
      [ringGroupId, extensionId],
    );
  }
}
