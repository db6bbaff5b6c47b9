// An organization's members, managed from the portal (CONTRACT section 11, docs/members.md):
//   list     every member may see who belongs, and who is invited and has not answered yet
//   invite   owner or admin: records an invitation (invitations.ts), good for 7 days; inviting the same address
//            again refreshes it. Nobody is added without saying yes: a person who can sign in is told by mail
//            and accepts or declines in the portal; a person without an account gets one with no usable
//            password and a mail to choose one, which accepts the invitation. Both look the same to the
//            organization, so the list does not tell who already has an account.
//   revoke   owner or admin: the invitation (and its link) stops working
//   role     owner or admin; only an owner makes someone an owner or changes an owner's role
//   remove   owner or admin; only an owner removes an owner; their sessions in the organization end at once
// Invitations to be an owner follow the owners' rule: only an owner makes, changes or revokes one.
// The organization always keeps an owner: taking away the last one is 409 LAST_OWNER, decided with the
// owners' rows locked so two owners demoting each other at once cannot both succeed.
import { hashPassword } from '../../platform/auth/passwords.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { Role } from '../../platform/http/caller.ts';
import { randomSecret } from '../../platform/ids.ts';
import type { Page, PageQueryInput, Paginator } from '../../platform/pagination.ts';
import type { InvitationRow } from './invitation-store.ts';
import type { InvitationService } from './invitations.ts';
import { type MemberEntryRow, type MemberRow, MemberStore } from './member-store.ts';
import type { PasswordResetMail } from './password-reset-mail.ts';
import type { UserService } from './users.ts';

/** A row of the member list: a member, or an invitation not answered yet (`userId` null). */
export interface Member {
  userId: string | null;
  email: string;
  name: string | null;
  role: Role;
  status: 'active' | 'invited' | 'expired';
  joinedAt: string | null;
  invitation: { id: string; invitedAt: string; expiresAt: string } | null;
}

/** Who is asking: their user id and role in the organization (the session guard's caller). */
export interface Actor {
  organizationId: string;
  userId: string;
  role: Role;
}

export class MemberService {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly users: UserService;
  private readonly invitations: InvitationService;
  private readonly pagination: Paginator;
  private readonly mail: PasswordResetMail;
  private readonly store = new MemberStore();

  constructor(deps: {
    db: Database;
    clock: Clock;
    users: UserService;
    invitations: InvitationService;
    pagination: Paginator;
    mail: PasswordResetMail;
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.users = deps.users;
    this.invitations = deps.invitations;
    this.pagination = deps.pagination;
    this.mail = deps.mail;
  }

  /** Members and the invitations not answered yet, newest first. */
  list(organizationId: string, query: PageQueryInput): Promise<Page<Member>> {
    return this.pagination.list(this.db, query, {
      endpoint: 'portal.members.list',
      keyset: false,
      organizationId,
      ...this.store.listQuery(organizationId, this.clock.now()),
      map: toMember,
    });
  }

  /** Invites an e-mail, or refreshes its pending invitation; answers the invitation's row of the list. */
  async invite(actor: Actor, input: { email: string; role: Role; name?: string | null }): Promise<Member> {
    if (input.role === 'owner' && actor.role !== 'owner') {
      throw ApiError.forbidden('Only an owner can make someone an owner');
    }
    const email = input.email.trim();
    const existing = await this.users.findByEmail(email);
    if (existing && (await this.store.find(this.db, actor.organizationId, existing.id))) {
      throw ApiError.conflict(`${existing.email} is already a member`, 'MEMBER_EXISTS');
    }
    // Who can sign in answers in the portal; anyone else through a link to choose a password. An account
    // without an organization has nowhere to sign in to, so it is asked like a new person.
    const signsIn =
      existing !== undefined &&
      !existing.invitationPending &&
      (await this.users.memberships(existing.id)).length > 0;
    // Hashed outside the transaction (argon2 takes a while; PGlite holds the database during one). Nobody
    // knows this password: the invited person chooses theirs through the mailed link.
    const unusable = existing ? undefined : await hashPassword(randomSecret(32));
    const invitation = await this.db.transaction(async (tx) => {
      const pending = await this.invitations.pending(tx, actor.organizationId, { email });
      if (pending?.role === 'owner' && actor.role !== 'owner') {
        throw ApiError.forbidden('Only an owner can change an invitation to be an owner');
      }
      const invitation = await this.invitations.record(tx, {
        organizationId: actor.organizationId,
        email: existing?.email ?? email,
        name: input.name ?? null,
        role: input.role,
        invitedBy: actor.userId,
      });
      if (signsIn) {
        await this.invitations.notify(tx, invitation.id);
      } else {
        const user =
          existing ??
          (await this.users.create(
            { email, passwordHash: unusable, name: input.name ?? null, invitationPending: true },
            tx,
          ));
        await this.mail.invitation(tx, {
          userId: user.id,
          organizationId: actor.organizationId,
          invitedBy: actor.userId,
        });
      }
      return invitation;
    });
    return invitedMember(invitation, this.clock.now());
  }

  /** Revokes a pending invitation: it leaves the list and its link stops working. */
  async revokeInvitation(actor: Actor, invitationId: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      const pending = await this.invitations.pending(tx, actor.organizationId, { id: invitationId });
      if (!pending) throw ApiError.notFound('Invitation');
      if (pending.role === 'owner' && actor.role !== 'owner') {
        throw ApiError.forbidden('Only an owner can revoke an invitation to be an owner');
      }
      const revoked = await this.invitations.revoke(tx, actor.organizationId, invitationId);
      const invitee = await this.users.findByEmail(revoked.email, tx);
      if (invitee) await this.mail.voidInvitation(tx, invitee.id, actor.organizationId);
    });
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
    return activeMember(row);
  }
}

function activeMember(row: MemberRow): Member {
  return {
    userId: row.user_id,
    email: row.email,
    name: row.name,
    role: row.role,
    status: 'active',
    joinedAt: row.created_at.toISOString(),
    invitation: null,
  };
}

function toMember(row: MemberEntryRow): Member {
  if (row.user_id !== null) return activeMember({ ...row, user_id: row.user_id });
  return {
    userId: null,
    email: row.email,
    name: row.name,
    role: row.role,
    status: row.expired ? 'expired' : 'invited',
    joinedAt: null,
    invitation: {
      id: row.invitation_id!,
      invitedAt: row.sent_at!.toISOString(),
      expiresAt: row.expires_at!.toISOString(),
    },
  };
}

/** The list's row of an invitation just made or refreshed. */
function invitedMember(row: InvitationRow, now: Date): Member {
  return toMember({
    user_id: null,
    invitation_id: row.id,
    email: row.email,
    name: row.name,
    role: row.role,
    created_at: row.created_at,
    sent_at: row.sent_at,
    expires_at: row.expires_at,
    expired: row.expires_at.getTime() <= now.getTime(),
    entry_id: row.id,
  });
}
