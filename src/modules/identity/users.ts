// Users and their memberships in organizations. A user signs in once and may belong to several
// organizations, with one role in each (CONTRACT section 4: owner, admin, member).
import { hashPassword } from '../../platform/auth/passwords.ts';
import type { Clock } from '../../platform/clock.ts';
import { isUniqueViolation, type Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import { ROLES, type Role } from '../../platform/http/caller.ts';
import { newId } from '../../platform/ids.ts';
import type { PortalUserData, PublicUser } from './schemas.ts';
import { type MembershipRow, type UserChanges, type UserRow, UserStore } from './user-store.ts';

export { ROLES, type Role };

export interface User {
  id: string;
  email: string;
  name: string | null;
  passwordHash: string;
  requirePasswordChange: boolean;
  /** Made by an invitation and has not chosen a password yet, so cannot sign in (members.ts). */
  invitationPending: boolean;
  createdAt: Date;
}

/** A user's role in one organization, with the organization's name for choosing between them. */
export type Membership = MembershipRow;

export class UserService {
  private readonly db: Queryable;
  private readonly clock: Clock;
  private readonly store = new UserStore();

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
      /** Invited from the portal: no password of their own yet (members.ts). */
      invitationPending?: boolean;
    },
    tx: Queryable = this.db,
  ): Promise<User> {
    const now = this.clock.now();
    const passwordHash = input.passwordHash ?? (await hashPassword(input.password!));
    try {
      const row = await this.store.insert(tx, {
        id: newId('usr', now.getTime()),
        email: input.email.trim(),
        name: input.name ?? null,
        passwordHash,
        requirePasswordChange: input.requirePasswordChange ?? false,
        invitationPending: input.invitationPending ?? false,
        now,
      });
      return toUser(row);
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
    invitedBy: string | null = null,
  ): Promise<void> {
    await this.store.upsertMembership(tx, userId, organizationId, role, this.clock.now(), invitedBy);
  }

  async findByEmail(email: string, tx: Queryable = this.db): Promise<User | undefined> {
    const row = await this.store.findByEmail(tx, email.trim());
    return row && toUser(row);
  }

  async get(id: string, tx: Queryable = this.db): Promise<User> {
    const row = await this.store.find(tx, id);
    if (!row) throw ApiError.notFound('User');
    return toUser(row);
  }

  async memberships(userId: string, tx: Queryable = this.db): Promise<Membership[]> {
    return this.store.memberships(tx, userId);
  }

  async roleIn(userId: string, organizationId: string, tx: Queryable = this.db): Promise<Role | undefined> {
    return this.store.role(tx, userId, organizationId);
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
    const now = this.clock.now();
    const changes: UserChanges = { name: input.name, requirePasswordChange: input.requirePasswordChange };
    if (input.password !== undefined || input.passwordHash !== undefined) {
      changes.passwordHash = input.passwordHash ?? (await hashPassword(input.password!));
    }
    const row = await this.store.update(tx, id, changes, now);
    if (!row) throw ApiError.notFound('User');
    return toUser(row);
  }
}

/** The user as clients see it: never the password hash. */
export function publicUser(user: User): PublicUser {
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    requirePasswordChange: user.requirePasswordChange,
    createdAt: user.createdAt.toISOString(),
  };
}

/** The user as the portal shows them to themselves. */
export function portalUser(user: User, twoFactorEnabled: boolean): PortalUserData {
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    requirePasswordChange: user.requirePasswordChange,
    twoFactorEnabled,
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
    invitationPending: row.invitation_pending,
    createdAt: row.created_at,
  };
}
