// The SQL of an organization's members: who belongs with what role, and the owners' rows locked while a
// change could take the last one away.
import type { Queryable } from '../../platform/db/index.ts';
import type { Role } from '../../platform/http/caller.ts';
import type { ListQuery } from '../../platform/pagination.ts';

export interface MemberRow {
  user_id: string;
  email: string;
  name: string | null;
  role: Role;
  invitation_pending: boolean;
  created_at: Date;
}

/** A member as the list and a single read select it, from `memberships m JOIN users u`. */
const MEMBER_COLUMNS = 'u.id AS user_id, u.email, u.name, m.role, u.invitation_pending, m.created_at';

export class MemberStore {
  listQuery(
    organizationId: string,
  ): Pick<ListQuery<MemberRow, unknown>, 'select' | 'from' | 'where' | 'params' | 'orderBy'> {
    return {
      select: MEMBER_COLUMNS,
      from: 'memberships m JOIN users u ON u.id = m.user_id',
      where: 'm.organization_id = $1',
      params: [organizationId],
      orderBy: { createdAt: 'm.created_at', id: 'u.id' },
    };
  }

  async find(db: Queryable, organizationId: string, userId: string): Promise<MemberRow | undefined> {
    const [row] = await db.query<MemberRow>(
      `SELECT ${MEMBER_COLUMNS}
         FROM memberships m JOIN users u ON u.id = m.user_id
        WHERE m.organization_id = $1 AND m.user_id = $2`,
      [organizationId, userId],
    );
    return row;
  }

  /** Locks the organization's owner rows for the rest of `tx` and returns how many there are. */
  async lockOwners(tx: Queryable, organizationId: string): Promise<number> {
    const rows = await tx.query(
      `SELECT user_id FROM memberships WHERE organization_id = $1 AND role = 'owner' FOR UPDATE`,
      [organizationId],
    );
    return rows.length;
  }

  async setRole(tx: Queryable, organizationId: string, userId: string, role: Role): Promise<void> {
    await tx.query('UPDATE memberships SET role = $3 WHERE organization_id = $1 AND user_id = $2', [
      organizationId,
      userId,
      role,
    ]);
  }

  async remove(tx: Queryable, organizationId: string, userId: string): Promise<void> {
    await tx.query('DELETE FROM memberships WHERE organization_id = $1 AND user_id = $2', [
      organizationId,
      userId,
    ]);
  }
}
