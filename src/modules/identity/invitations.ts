// Invitations to an organization (docs/members.md), from the invitee's side and their mail:
//   record      members.ts records (or refreshes) one when an owner or admin invites an e-mail
//   notify      a person who can sign in is told by mail and answers in the portal, where
//   received    lists their own live invitations, matched by their account's e-mail;
//   accept      makes them a member with the invited role, in the same statement's transaction;
//   decline     leaves everything as it was (the organization stops seeing the invitation)
//   by link     a person who cannot sign in (no account, no password of their own, no organization left) got
//               a link to choose a password instead (password-reset-mail.ts); following it accepts
// Nobody becomes a member of an organization without having said yes to it.
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { Role } from '../../platform/http/caller.ts';
import { newId } from '../../platform/ids.ts';
import type { JobQueue } from '../../platform/jobs.ts';
import type { Mailer } from '../../platform/mail.ts';
import type { JobSpec } from '../../platform/module.ts';
import type { Page, PageQueryInput, Paginator } from '../../platform/pagination.ts';
import {
  type InvitationRow,
  type InvitationStatus,
  InvitationStore,
  type ReceivedInvitationRow,
} from './invitation-store.ts';
import type { UserService } from './users.ts';

export const INVITATION_MAIL_QUEUE = 'identity.invitation-mail';
/** How long an invitation, and a link mailed to choose a password with it, stays good. */
export const INVITATION_LIFETIME_SECONDS = 7 * 24 * 3600;

/** A job's payload: the invitation's id only; the mail is written from the row when it is sent. */
export interface InvitationMailJob {
  invitationId: string;
}

/** An invitation as the invited person sees it. */
export interface ReceivedInvitation {
  id: string;
  organization: { id: string; name: string };
  role: Role;
  invitedBy: { name: string | null; email: string } | null;
  status: InvitationStatus;
  invitedAt: string;
  expiresAt: string;
}

/**
 * An invitation as the inviting organization sees it. Whether the address has an account is not said: both
 * kinds of invitee look the same until they accept.
 */
export interface OrganizationInvitation {
  id: string;
  email: string;
  name: string | null;
  role: Role;
  status: 'pending' | 'expired';
  invitedBy: string | null;
  invitedAt: string;
  expiresAt: string;
}

export class InvitationService {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly users: UserService;
  private readonly jobs: JobQueue;
  private readonly mailer: Mailer;
  private readonly pagination: Paginator;
  private readonly publicUrl: string;
  private readonly store = new InvitationStore();

  constructor(deps: {
    db: Database;
    clock: Clock;
    users: UserService;
    jobs: JobQueue;
    mailer: Mailer;
    pagination: Paginator;
    publicUrl: string;
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.users = deps.users;
    this.jobs = deps.jobs;
    this.mailer = deps.mailer;
    this.pagination = deps.pagination;
    this.publicUrl = deps.publicUrl;
  }

  /** Records a pending invitation, or refreshes the pending one for the same address (7 days from now). */
  record(
    tx: Queryable,
    input: { organizationId: string; email: string; name: string | null; role: Role; invitedBy: string },
  ): Promise<InvitationRow> {
    const now = this.clock.now();
    return this.store.upsertPending(tx, {
      ...input,
      id: newId('inv', now.getTime()),
      now,
      expiresAt: new Date(now.getTime() + INVITATION_LIFETIME_SECONDS * 1000),
    });
  }

  /** Enqueues the notice mail in the caller's transaction: it goes once the invitation is committed. */
  async notify(tx: Queryable, invitationId: string): Promise<void> {
    const job: InvitationMailJob = { invitationId };
    await this.jobs.enqueue(tx, INVITATION_MAIL_QUEUE, job);
  }

  /** The notice mail queue, registered by the module (index.ts); retried like the reset mail. */
  get queue(): JobSpec<InvitationMailJob> {
    return {
      handler: (payload) => this.deliver(payload),
      options: { maxAttempts: 12, retryDelaysSeconds: [5, 15, 30, 60, 120, 300, 600] },
    };
  }

  /** Tells the invited person, if the invitation is still live; a failure to send is thrown, so it retries. */
  async deliver(job: InvitationMailJob): Promise<void> {
    const invitation = await this.store.describe(this.db, job.invitationId);
    if (!invitation || !isLive(invitation, this.clock.now())) return;
    const user = await this.users.findByEmail(invitation.email);
    if (!user) return;
    const base = this.publicUrl.replace(/\/$/, '');
    const by = invitation.inviter_name ?? invitation.inviter_email;
    await this.mailer.send({
      to: user.email,
      subject: `You are invited to ${invitation.organization_name}`,
      text: [
        `${by ? `${by} invited you` : 'You are invited'} to join ${invitation.organization_name} as ${invitation.role}.`,
        '',
        `Sign in and accept or decline it before ${invitation.expires_at.toISOString()} (7 days): ${base}/invitations`,
        'Nothing changes until you accept. If you did not expect this, decline it or ignore this message.',
      ].join('\n'),
    });
  }

  /** The signed-in person's live invitations, newest first. */
  async received(
    user: { id: string; email: string },
    organizationId: string,
    query: PageQueryInput,
  ): Promise<Page<ReceivedInvitation>> {
    return this.pagination.list(this.db, query, {
      endpoint: 'portal.invitations.list',
      keyset: false,
      organizationId,
      filters: { userId: user.id },
      ...this.store.receivedListQuery(user.email, this.clock.now()),
      map: toReceived,
    });
  }

  /** How many live invitations wait for the person (GET /auth/me `pendingInvitations`). */
  countReceived(email: string): Promise<number> {
    return this.store.countReceived(this.db, email, this.clock.now());
  }

  /** Accepts the person's invitation: they become a member with the invited role. */
  async accept(userId: string, invitationId: string): Promise<ReceivedInvitation> {
    const user = await this.users.get(userId);
    const accepted = await this.db.transaction(async (tx) => {
      const accepted = await this.store.answer(tx, user.email, invitationId, 'accepted', this.clock.now());
      if (accepted) await this.join(tx, user.id, accepted);
      return accepted;
    });
    // Told outside the transaction: PGlite serves one connection, held by a transaction until it ends.
    if (!accepted) throw await this.refusal(user.email, invitationId);
    return this.receivedOne(user.email, invitationId);
  }

  /** Declines the person's invitation: nothing else changes. */
  async decline(userId: string, invitationId: string): Promise<ReceivedInvitation> {
    const user = await this.users.get(userId);
    const declined = await this.store.answer(this.db, user.email, invitationId, 'declined', this.clock.now());
    if (!declined) throw await this.refusal(user.email, invitationId);
    return this.receivedOne(user.email, invitationId);
  }

  /**
   * The person chose their password through an invitation's link (password-reset.ts), in the caller's
   * transaction: the organization's live invitation of their address is accepted. Revoked or expired: nothing.
   */
  async acceptByLink(tx: Queryable, userId: string, organizationId: string): Promise<void> {
    const user = await this.users.get(userId, tx);
    const accepted = await this.store.acceptFor(tx, organizationId, user.email, this.clock.now());
    if (accepted) await this.join(tx, user.id, accepted);
  }

  /** The organization's pending invitation (expired or not) with this id, or of this address. */
  async pending(
    tx: Queryable,
    organizationId: string,
    by: { id: string } | { email: string },
  ): Promise<InvitationRow | undefined> {
    if ('email' in by) return this.store.findPending(tx, organizationId, by.email);
    const row = await this.store.find(tx, organizationId, by.id);
    return row?.status === 'pending' ? row : undefined;
  }

  /** Marks the organization's pending invitation revoked; 404 when there is none by that id. */
  async revoke(tx: Queryable, organizationId: string, invitationId: string): Promise<InvitationRow> {
    const revoked = await this.store.revoke(tx, organizationId, invitationId, this.clock.now());
    if (!revoked) throw ApiError.notFound('Invitation');
    return revoked;
  }

  /** The organization's outstanding invitations, newest first (expired ones too, until revoked). */
  organizationList(organizationId: string, query: PageQueryInput): Promise<Page<OrganizationInvitation>> {
    const now = this.clock.now();
    return this.pagination.list(this.db, query, {
      endpoint: 'portal.members.invitations.list',
      keyset: false,
      organizationId,
      ...this.store.organizationListQuery(organizationId),
      map: (row: InvitationRow) => toOrganizationInvitation(row, now),
    });
  }

  /** Retention: invitations whose expiry passed before `before`. */
  removeExpired(before: Date): Promise<number> {
    return this.store.deleteExpired(this.db, before);
  }

  /** Adds the membership; someone who meanwhile became a member keeps the role they have. */
  private async join(tx: Queryable, userId: string, invitation: InvitationRow): Promise<void> {
    if (await this.users.roleIn(userId, invitation.organization_id, tx)) return;
    await this.users.addMembership(
      userId,
      invitation.organization_id,
      invitation.role,
      tx,
      invitation.invited_by,
    );
  }

  /** Why an invitation of the person cannot be answered: gone (404), expired (410) or answered (409). */
  private async refusal(email: string, invitationId: string): Promise<ApiError> {
    const found = await this.store.findReceived(this.db, email, invitationId);
    if (!found || found.status === 'revoked') return ApiError.notFound('Invitation');
    if (found.status !== 'pending') {
      return ApiError.conflict(`This invitation was already ${found.status}`, 'INVITATION_ANSWERED');
    }
    return new ApiError(410, 'This invitation has expired; ask for a new one', {
      code: 'INVITATION_EXPIRED',
    });
  }

  private async receivedOne(email: string, invitationId: string): Promise<ReceivedInvitation> {
    const row = await this.store.findReceived(this.db, email, invitationId);
    if (!row) throw ApiError.notFound('Invitation');
    return toReceived(row);
  }
}

/** An invitation as its organization sees it: the address and the name the inviter typed, nothing more. */
export function toOrganizationInvitation(row: InvitationRow, now: Date): OrganizationInvitation {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    role: row.role,
    status: isLive(row, now) ? 'pending' : 'expired',
    invitedBy: row.invited_by,
    invitedAt: row.sent_at.toISOString(),
    expiresAt: row.expires_at.toISOString(),
  };
}

function isLive(row: InvitationRow, now: Date): boolean {
  return row.status === 'pending' && row.expires_at.getTime() > now.getTime();
}

function toReceived(row: ReceivedInvitationRow): ReceivedInvitation {
  return {
    id: row.id,
    organization: { id: row.organization_id, name: row.organization_name },
    role: row.role,
    invitedBy: row.inviter_email ? { name: row.inviter_name, email: row.inviter_email } : null,
    status: row.status,
    invitedAt: row.sent_at.toISOString(),
    expiresAt: row.expires_at.toISOString(),
  };
}
