// The SQL of users and their memberships. Every method takes the Queryable to run on, so sign-up and the
// operator API can create a user and its memberships in one transaction; the rules stay with UserService.

import { assignments } from '../../platform/db/assignments.ts';
import type { Queryable } from '../../platform/db/index.ts';
import type { Role } from '../../platform/http/caller.ts';

export interface UserRow {
  id: string;
  email: string;
  name: string | null;
  password_hash: string;
  require_password_change: boolean;
  /** Invited from the portal and has not set a password yet (migrations/028_members.sql). */
  invitation_pending: boolean;
  created_at: Date;
}

export interface MembershipRow {
  organizationId: string;
  organizationName: string;
  role: Role;
}

/** The columns an update sets; an absent one is left as it is. */
export interface UserChanges {
  name?: string | null;
  passwordHash?: string;
  requirePasswordChange?: boolean;
}

export class UserStore {
  async insert(
    db: Queryable,
    user: {
      id: string;
      email: string;
      name: string | null;
      passwordHash: string;
      requirePasswordChange: boolean;
      invitationPending?: boolean;
      now: Date;
    },
  ): Promise<UserRow> {
    const [row] = await db.query<UserRow>(
      `INSERT INTO users (id, email, name, password_hash, require_password_change, invitation_pending,
                          created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING *`,
      [
        user.id,
        user.email,
        user.name,
        user.passwordHash,
        user.requirePasswordChange,
        user.invitationPending ?? false,
        user.now,
      ],
    );
    return row!;
  }

  /** Makes the user a member with `role`, or changes the role of a member. */
  async upsertMembership(
    db: Queryable,
    userId: string,
    organizationId: string,
    role: Role,
    now: Date,
    invitedBy: string | null = null,
  ): Promise<void> {
    await db.query(
      `INSERT INTO memberships (user_id, organization_id, role, created_at, invited_by) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (user_id, organization_id) DO UPDATE SET role = EXCLUDED.role`,
      [userId, organizationId, role, now, invitedBy],
    );
  }

  /** The user with this e-mail, whatever its case. */
  async findByEmail(db: Queryable, email: string): Promise<UserRow | undefined> {
    const [row] = await db.query<UserRow>('SELECT * FROM users WHERE lower(email) = lower($1)', [email]);
    return row;
  }

  async find(db: Queryable, id: string): Promise<UserRow | undefined> {
    const [row] = await db.query<UserRow>('SELECT * FROM users WHERE id = $1', [id]);
    return row;
  }

  /** The user's memberships, in the order they were made. */
  async memberships(db: Queryable, userId: string): Promise<MembershipRow[]> {
    return db.query<MembershipRow>(
      `SELECT m.organization_id AS "organizationId", o.name AS "organizationName", m.role
         FROM memberships m JOIN organizations o ON o.id = m.organization_id
        WHERE m.user_id = $1 ORDER BY m.created_at, m.organization_id`,
      [userId],
    );
  }

  async role(db: Queryable, userId: string, organizationId: string): Promise<Role | undefined> {
    const [row] = await db.query<{ role: Role }>(
      'SELECT role FROM memberships WHERE user_id = $1 AND organization_id = $2',
      [userId, organizationId],
    );
    return row?.role;
  }

  /** Applies `changes`; undefined when there is no such user. */
  async update(db: Queryable, id: string, changes: UserChanges, now: Date): Promise<UserRow | undefined> {
    const values: unknown[] = [id, now];
    const sets = assignments(
      {
        name: changes.name,
        password_hash: changes.passwordHash,
        require_password_change: changes.requirePasswordChange,
        // Whoever sets a password has accepted any invitation: they are a member like any other now.
        invitation_pending: changes.passwordHash === undefined ? undefined : false,
      },
      values,
    );
    const [row] = await db.query<UserRow>(
      `UPDATE users SET updated_at = $2${sets.map((s) => `, ${s}`).join('')} WHERE id = $1 RETURNING *`,
      values,
    );
    return row;
  }
}
