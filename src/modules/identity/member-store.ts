// The SQL of an organization's members: who belongs with what role, the list of members and pending
// invitations together, and the owners' rows locked while a change could take the last one away.
import type { Queryable } from '../../platform/db/index.ts';
import type { Role } from '../../platform/http/caller.ts';
import type { ListQuery } from '../../platform/pagination.ts';

export interface MemberRow {
  user_id: string;
  email: string;
  name: string | null;
  role: Role;
  created_at: Date;
}

/** A row of the member list: a member (user_id) or an invitation not yet answered (invitation_id). */
export interface MemberEntryRow {
  user_id: string | null;
  invitation_id: string | null;
  email: string;
  name: string | null;
  role: Role;
  created_at: Date;
  sent_at: Date | null;
  expires_at: Date | null;
  expired: boolean;
  entry_id: string;
}

/** A member as a single read selects it, from `memberships m JOIN users u`. */
const MEMBER_COLUMNS = 'u.id AS user_id, u.email, u.name, m.role, m.created_at';

/**
 * The members ($1: organization) and its pending invitations ($2: now, to tell the expired ones), in one
 * relation so the one pagination helper pages through both. An invitation shows the name the inviter typed.
 */
const ENTRIES = `(
  SELECT u.id AS user_id, NULL::text AS invitation_id, u.email, u.name, m.role, m.created_at,
         NULL::timestamptz AS sent_at, NULL::timestamptz AS expires_at, false AS expired, u.id AS entry_id
    FROM memberships m JOIN users u ON u.id = m.user_id
   WHERE m.organization_id = $1
  UNION ALL
  SELECT NULL, i.id, i.email, i.name, i.role, i.created_at, i.sent_at, i.expires_at, i.expires_at <= $2, i.id
    FROM invitations i
   WHERE i.organization_id = $1 AND i.status = 'pending'
) AS entries`;

export class MemberStore {
  listQuery(
    organizationId: string,
    now: Date,
  ): Pick<ListQuery<MemberEntryRow, unknown>, 'select' | 'from' | 'where' | 'params' | 'orderBy'> {
    return {
      select: '*',
      from: ENTRIES,
      where: 'true',
      params: [organizationId, now],
      orderBy: { createdAt: 'created_at', id: 'entry_id' },
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
