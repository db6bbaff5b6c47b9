// An organization's members, managed from the portal (CONTRACT section 11, docs/auth.md "Members"):
//   list     every member may see who belongs
//   invite   owner or admin: a person with an account is added at once and told by mail; a person without one
//            gets an account with no usable password and a mail to choose one (7 days); either way they are a
//            member from now on, `invited` until they have a password of their own
//   role     owner or admin; only an owner makes someone an owner or changes an owner's role
//   remove   owner or admin; only an owner removes an owner; their sessions in the organization end at once
// The organization always keeps an owner: taking away the last one is 409 LAST_OWNER, decided with the
// owners' rows locked so two owners demoting each other at once cannot both succeed.
import { hashPassword } from '../../platform/auth/passwords.ts';
import type { Database } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { Role } from '../../platform/http/caller.ts';
import { randomSecret } from '../../platform/ids.ts';
import type { Page, PageQueryInput, Paginator } from '../../platform/pagination.ts';
import { type MemberRow, MemberStore } from './member-store.ts';
import type { PasswordResetMail } from './password-reset-mail.ts';
import type { UserService } from './users.ts';

export interface Member {
  userId: string;
  email: string;
  name: string | null;
  role: Role;
  status: 'active' | 'invited';
  joinedAt: string;
}

/** Who is asking: their user id and role in the organization (the session guard's caller). */
export interface Actor {
  organizationId: string;
  userId: string;
  role: Role;
}

export class MemberService {
  private readonly db: Database;
  private readonly users: UserService;
  private readonly pagination: Paginator;
  private readonly mail: PasswordResetMail;
  private readonly store = new MemberStore();

  constructor(deps: { db: Database; users: UserService; pagination: Paginator; mail: PasswordResetMail }) {
    this.db = deps.db;
    this.users = deps.users;
    this.pagination = deps.pagination;
    this.mail = deps.mail;
  }

  list(organizationId: string, query: PageQueryInput): Promise<Page<Member>> {
    return this.pagination.list(this.db, query, {
      endpoint: 'portal.members.list',
      keyset: false,
      organizationId,
      ...this.store.listQuery(organizationId),
      map: toMember,
    });
  }

  async invite(actor: Actor, input: { email: string; role: Role; name?: string | null }): Promise<Member> {
    if (input.role === 'owner' && actor.role !== 'owner') {
      throw ApiError.forbidden('Only an owner can make someone an owner');
    }
    const existing = await this.users.findByEmail(input.email);
    if (existing && (await this.store.find(this.db, actor.organizationId, existing.id))) {
      throw ApiError.conflict(`${existing.email} is already a member`, 'MEMBER_EXISTS');
    }
    // Hashed outside the transaction (argon2 takes a while; PGlite holds the database during one). Nobody
    // knows this password: the invited person chooses theirs through the mailed link.
    const unusable = existing ? undefined : await hashPassword(randomSecret(32));
    const userId = await this.db.transaction(async (tx) => {
      const user =
        existing ??
        (await this.users.create(
          { email: input.email, passwordHash: unusable, name: input.name ?? null, invitationPending: true },
          tx,
        ));
      await this.users.addMembership(user.id, actor.organizationId, input.role, tx, actor.userId);
      await this.mail.member(tx, {
        userId: user.id,
        organizationId: actor.organizationId,
        invitedBy: actor.userId,
        purpose: existing ? 'added' : 'invite',
      });
      return user.id;
    });
    return this.get(actor.organizationId, userId);
  }

  async changeRole(actor: Actor, userId: string, role: Role): Promise<Member> {
    await this.db.transaction(async (tx) => {
      const owners = await this.store.lockOwners(tx, actor.organizationId);
      const target = await this.store.find(tx, actor.organizationId, userId);
      if (!target) throw ApiError.notFound('Member');
      if (target.role === role) return;
      if ((target.role === 'owner' || role === 'owner') && actor.role !== 'owner') {
        throw ApiError.forbidden("Only an owner can make someone an owner or change an owner's role");
      }
      if (target.role === 'owner' && owners <= 1) {
        throw ApiError.conflict(
          'The organization needs an owner: make someone else owner first',
          'LAST_OWNER',
        );
      }
      await this.store.setRole(tx, actor.organizationId, userId, role);
    });
    return this.get(actor.organizationId, userId);
  }

  async remove(actor: Actor, userId: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      const owners = await this.store.lockOwners(tx, actor.organizationId);
      const target = await this.store.find(tx, actor.organizationId, userId);
      if (!target) throw ApiError.notFound('Member');
      if (target.role === 'owner' && actor.role !== 'owner') {
        throw ApiError.forbidden('Only an owner can remove an owner');
      }
      if (target.role === 'owner' && owners <= 1) {
        throw ApiError.conflict(
          'The last owner cannot be removed: make someone else owner first',
          'LAST_OWNER',
        );
      }
      await this.store.remove(tx, actor.organizationId, userId);
    });
  }

  private async get(organizationId: string, userId: string): Promise<Member> {
    const row = await this.store.find(this.db, organizationId, userId);
    if (!row) throw ApiError.notFound('Member');
    return toMember(row);
  }
}

function toMember(row: MemberRow): Member {
  return {
    userId: row.user_id,
    email: row.email,
    name: row.name,
    role: row.role,
    status: row.invitation_pending ? 'invited' : 'active',
    joinedAt: row.created_at.toISOString(),
  };
}
