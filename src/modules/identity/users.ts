// Users and their memberships in organizations. A user signs in once and may belong to several
// organizations, with one role in each (CONTRACT section 4: owner, admin, member).

import { hashPassword } from '../../platform/auth/passwords.ts';
import type { Clock } from '../../platform/clock.ts';
import { isUniqueViolation, type Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import { ROLES, type Role } from '../../platform/http/caller.ts';
import { newId } from '../../platform/ids.ts';

export { ROLES, type Role };

export interface User {
  id: string;
  email: string;
  name: string | null;
  passwordHash: string;
  requirePasswordChange: boolean;
  createdAt: Date;
}

export interface Membership {
  organizationId: string;
  organizationName: string;
  role: Role;
}

interface UserRow {
  id: string;
  email: string;
  name: string | null;
  password_hash: string;
  require_password_change: boolean;
  created_at: Date;
}

export class UserService {
  private readonly db: Queryable;
  private readonly clock: Clock;

  constructor(deps: { db: Queryable; clock: Clock }) {
    this.db = deps.db;
    this.clock = deps.clock;
  }

  async create(
    input: {
      email: string;
      /** Either the password, or its argon2id hash when the caller hashed it outside a transaction. */
      password?: string;
      passwordHash?: string;
      name?: string | null;
      requirePasswordChange?: boolean;
    },
    tx: Queryable = this.db,
  ): Promise<User> {
    const now = this.clock.now();
    const passwordHash = input.passwordHash ?? (await hashPassword(input.password!));
    try {
      const [row] = await tx.query<UserRow>(
        `INSERT INTO users (id, email, name, password_hash, require_password_change, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING *`,
        [
          newId('usr', now.getTime()),
          input.email.trim(),
          input.name ?? null,
          passwordHash,
          input.requirePasswordChange ?? false,
          now,
        ],
      );
      return toUser(row!);
    } catch (error) {
      if (isUniqueViolation(error)) throw ApiError.conflict('A user with this e-mail already exists');
      throw error;
    }
  }

  async addMembership(
    userId: string,
    organizationId: string,
    role: Role,
    tx: Queryable = this.db,
  ): Promise<void> {
    await tx.query(
      `INSERT INTO memberships (user_id, organization_id, role, created_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (user_id, organization_id) DO UPDATE SET role = EXCLUDED.role`,
      [userId, organizationId, role, this.clock.now()],
    );
  }

  async findByEmail(email: string, tx: Queryable = this.db): Promise<User | undefined> {
    const [row] = await tx.query<UserRow>('SELECT * FROM users WHERE lower(email) = lower($1)', [
      email.trim(),
    ]);
    return row && toUser(row);
  }

  async get(id: string, tx: Queryable = this.db): Promise<User> {
    const [row] = await tx.query<UserRow>('SELECT * FROM users WHERE id = $1', [id]);
    if (!row) throw ApiError.notFound('User');
    return toUser(row);
  }

  async memberships(userId: string, tx: Queryable = this.db): Promise<Membership[]> {
    return tx.query<Membership>(
      `SELECT m.organization_id AS "organizationId", o.name AS "organizationName", m.role
         FROM memberships m JOIN organizations o ON o.id = m.organization_id
        WHERE m.user_id = $1 ORDER BY m.created_at, m.organization_id`,
      [userId],
    );
  }

  async roleIn(userId: string, organizationId: string, tx: Queryable = this.db): Promise<Role | undefined> {
    const [row] = await tx.query<{ role: Role }>(
      'SELECT role FROM memberships WHERE user_id = $1 AND organization_id = $2',
      [userId, organizationId],
    );
    return row?.role;
  }

  async update(
    id: string,
    input: {
      name?: string | null;
      password?: string;
      passwordHash?: string;
      requirePasswordChange?: boolean;
    },
    tx: Queryable = this.db,
  ): Promise<User> {
    const sets: string[] = [];
    const values: unknown[] = [id, this.clock.now()];
    if (input.name !== undefined) {
      values.push(input.name);
      sets.push(`name = $${values.length}`);
    }
    if (input.password !== undefined || input.passwordHash !== undefined) {
      values.push(input.passwordHash ?? (await hashPassword(input.password!)));
      sets.push(`password_hash = $${values.length}`);
    }
    if (input.requirePasswordChange !== undefined) {
      values.push(input.requirePasswordChange);
      sets.push(`require_password_change = $${values.length}`);
    }
    const [row] = await tx.query<UserRow>(
      `UPDATE users SET updated_at = $2${sets.map((s) => `, ${s}`).join('')} WHERE id = $1 RETURNING *`,
      values,
    );
    if (!row) throw ApiError.notFound('User');
    return toUser(row);
  }
}

/** The user as clients see it: never the password hash. */
export function publicUser(user: User) {
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    requirePasswordChange: user.requirePasswordChange,
    createdAt: user.createdAt.toISOString(),
  };
}

function toUser(row: UserRow): User {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    passwordHash: row.password_hash,
    requirePasswordChange: row.require_password_change,
    createdAt: row.created_at,
  };
}
