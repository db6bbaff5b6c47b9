// The SQL of invitations to an organization (migrations/032_invitations.sql). An invitation is matched to a
// person by their account's e-mail, in any case. Every write is one conditional statement, so of two racing
// answers (accept and revoke, accept twice) exactly one finds the invitation still pending.
import { deleteInBatches } from '../../platform/db/batches.ts';
import type { Queryable } from '../../platform/db/index.ts';
import type { Role } from '../../platform/http/caller.ts';
import type { ListQuery } from '../../platform/pagination.ts';

export type InvitationStatus = 'pending' | 'accepted' | 'declined' | 'revoked';

export interface InvitationRow {
  id: string;
  organization_id: string;
  email: string;
  name: string | null;
  role: Role;
  invited_by: string | null;
  status: InvitationStatus;
  created_at: Date;
  sent_at: Date;
  expires_at: Date;
  answered_at: Date | null;
}

/** An invitation as its invitee sees it: with the organization's name and who invited. */
export interface ReceivedInvitationRow extends InvitationRow {
  organization_name: string;
  inviter_name: string | null;
  inviter_email: string | null;
}

const RECEIVED_COLUMNS = `i.*, o.name AS organization_name, u.name AS inviter_name, u.email AS inviter_email`;
const RECEIVED_FROM = `invitations i JOIN organizations o ON o.id = i.organization_id
                       LEFT JOIN users u ON u.id = i.invited_by`;

export class InvitationStore {
  /**
   * Records a pending invitation, or refreshes the pending one of the same organization and address: the new
   * role, inviter and expiry, the name if one is given. Returns the row either way.
   */
  async upsertPending(
    tx: Queryable,
    invitation: {
      id: string;
      organizationId: string;
      email: string;
      name: string | null;
      role: Role;
      invitedBy: string;
      now: Date;
      expiresAt: Date;
    },
  ): Promise<InvitationRow> {
    const [row] = await tx.query<InvitationRow>(
      `INSERT INTO invitations (id, organization_id, email, name, role, invited_by, status, created_at, sent_at,
                                expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $7, $8)
       ON CONFLICT (organization_id, lower(email)) WHERE status = 'pending'
       DO UPDATE SET role = EXCLUDED.role, invited_by = EXCLUDED.invited_by, sent_at = EXCLUDED.sent_at,
                     expires_at = EXCLUDED.expires_at, name = COALESCE(EXCLUDED.name, invitations.name)
       RETURNING *`,
      [
        invitation.id,
        invitation.organizationId,
        invitation.email,
        invitation.name,
        invitation.role,
        invitation.invitedBy,
        invitation.now,
        invitation.expiresAt,
      ],
    );
    return row!;
  }

  /** The organization's outstanding invitations (pending, expired or not), for a list. */
  organizationListQuery(
    organizationId: string,
  ): Pick<ListQuery<InvitationRow, unknown>, 'select' | 'from' | 'where' | 'params' | 'orderBy'> {
    return {
      select: '*',
      from: 'invitations',
      where: `organization_id = $1 AND status = 'pending'`,
      params: [organizationId],
      orderBy: { createdAt: 'created_at', id: 'id' },
    };
  }

  async find(db: Queryable, organizationId: string, id: string): Promise<InvitationRow | undefined> {
    const [row] = await db.query<InvitationRow>(
      'SELECT * FROM invitations WHERE organization_id = $1 AND id = $2',
      [organizationId, id],
    );
    return row;
  }

  /** The organization's pending invitation of `email` (any case), expired or not. */
  async findPending(
    db: Queryable,
    organizationId: string,
    email: string,
  ): Promise<InvitationRow | undefined> {
    const [row] = await db.query<InvitationRow>(
      `SELECT * FROM invitations WHERE organization_id = $1 AND lower(email) = lower($2) AND status = 'pending'`,
      [organizationId, email],
    );
    return row;
  }

  /** Marks a pending invitation of the organization revoked; undefined when there is none by that id. */
  async revoke(
    tx: Queryable,
    organizationId: string,
    id: string,
    now: Date,
  ): Promise<InvitationRow | undefined> {
    const [row] = await tx.query<InvitationRow>(
      `UPDATE invitations SET status = 'revoked', answered_at = $3
        WHERE organization_id = $1 AND id = $2 AND status = 'pending' RETURNING *`,
      [organizationId, id, now],
    );
    return row;
  }

  /** The live (pending, unexpired) invitations addressed to `email`, newest first, for a list. */
  receivedListQuery(
    email: string,
    now: Date,
  ): Pick<ListQuery<ReceivedInvitationRow, unknown>, 'select' | 'from' | 'where' | 'params' | 'orderBy'> {
    return {
      select: RECEIVED_COLUMNS,
      from: RECEIVED_FROM,
      where: `lower(i.email) = lower($1) AND i.status = 'pending' AND i.expires_at > $2`,
      params: [email, now],
      orderBy: { createdAt: 'i.created_at', id: 'i.id' },
    };
  }

  async countReceived(db: Queryable, email: string, now: Date): Promise<number> {
    const [row] = await db.query<{ count: number }>(
      `SELECT count(*)::int AS count FROM invitations
        WHERE lower(email) = lower($1) AND status = 'pending' AND expires_at > $2`,
      [email, now],
    );
    return row?.count ?? 0;
  }

  /** One invitation addressed to `email`, whatever its state (to say why it cannot be answered). */
  async findReceived(db: Queryable, email: string, id: string): Promise<ReceivedInvitationRow | undefined> {
    const [row] = await db.query<ReceivedInvitationRow>(
      `SELECT ${RECEIVED_COLUMNS} FROM ${RECEIVED_FROM} WHERE i.id = $1 AND lower(i.email) = lower($2)`,
      [id, email],
    );
    return row;
  }

  /** Answers a live invitation addressed to `email`; undefined when it is not one (any more). */
  async answer(
    tx: Queryable,
    email: string,
    id: string,
    status: 'accepted' | 'declined',
    now: Date,
  ): Promise<InvitationRow | undefined> {
    const [row] = await tx.query<InvitationRow>(
      `UPDATE invitations SET status = $3, answered_at = $4
        WHERE id = $1 AND lower(email) = lower($2) AND status = 'pending' AND expires_at > $4 RETURNING *`,
      [id, email, status, now],
    );
    return row;
  }

  /** Accepts the organization's live invitation of `email` (its link was followed); undefined if none. */
  async acceptFor(
    tx: Queryable,
    organizationId: string,
    email: string,
    now: Date,
  ): Promise<InvitationRow | undefined> {
    const [row] = await tx.query<InvitationRow>(
      `UPDATE invitations SET status = 'accepted', answered_at = $3
        WHERE organization_id = $1 AND lower(email) = lower($2) AND status = 'pending' AND expires_at > $3
        RETURNING *`,
      [organizationId, email, now],
    );
    return row;
  }

  /** What the notice mail says: the invitation with its organization and inviter. */
  async describe(db: Queryable, id: string): Promise<ReceivedInvitationRow | undefined> {
    const [row] = await db.query<ReceivedInvitationRow>(
      `SELECT ${RECEIVED_COLUMNS} FROM ${RECEIVED_FROM} WHERE i.id = $1`,
      [id],
    );
    return row;
  }

  /** Retention: invitations (answered or not) whose expiry passed before `before`; returns how many. */
  async deleteExpired(db: Queryable, before: Date): Promise<number> {
    return deleteInBatches(
      db,
      `DELETE FROM invitations WHERE id IN (SELECT id FROM invitations WHERE expires_at < $1 LIMIT $2)
       RETURNING 1`,
      [before],
    );
  }
}
