// Password-reset mail through the durable job queue, so that an SMTP failure is retried rather than lost,
// without a usable reset token waiting anywhere in clear (operators can read the jobs table).
//   request  records the request without a token and enqueues its mail job, in one transaction. An e-mail
//            without an account is recorded and enqueued alike (user_id NULL): the same SELECT and the same
//            two INSERTs either way, so neither the answer nor its time tells whether the account exists.
//   deliver  the job: arms the request with a fresh token (only its SHA-256 is stored), then sends the mail.
//            Nothing to arm (no account, already used, voided by a password change or reset, or past the
//            hour) means nothing to send. A retry arms a new token, so only the latest mail's link works.
// We chose to create the token at send time over sealing it into the job payload with a secret box: then no
// form of the token is stored at all, not even one the app's key could open, and a pending request is voided
// by a password change like any unused token. The cost: if a mail is delivered but its attempt still fails
// (the connection drops after the server took it), the retry's mail supersedes the first one's link.
import { sha256Hex } from '../../platform/auth/secrets.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { newId, randomSecret } from '../../platform/ids.ts';
import type { JobQueue } from '../../platform/jobs.ts';
import type { Mailer } from '../../platform/mail.ts';
import type { JobSpec } from '../../platform/module.ts';
import { INVITATION_LIFETIME_SECONDS } from './invitations.ts';
import { RESET_TOKEN_LIFETIME_SECONDS } from './password-reset.ts';
import { PasswordResetStore } from './password-reset-store.ts';
import type { UserService } from './users.ts';

export const PASSWORD_RESET_MAIL_QUEUE = 'identity.password-reset-mail';

/** A job's payload: the request's id only, never an address or a token. */
export interface PasswordResetMailJob {
  requestId: string;
}

export class PasswordResetMail {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly users: UserService;
  private readonly jobs: JobQueue;
  private readonly mailer: Mailer;
  private readonly publicUrl: string;
  private readonly store = new PasswordResetStore();

  constructor(deps: {
    db: Database;
    clock: Clock;
    users: UserService;
    jobs: JobQueue;
    mailer: Mailer;
    publicUrl: string;
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.users = deps.users;
    this.jobs = deps.jobs;
    this.mailer = deps.mailer;
    this.publicUrl = deps.publicUrl;
  }

  /** Retention: removes reset requests and tokens that expired before `before`; returns how many. */
  removeExpired(before: Date): Promise<number> {
    return this.store.deleteExpired(this.db, before);
  }

  /** The mail queue, registered by the module (index.ts). */
  get queue(): JobSpec<PasswordResetMailJob> {
    return {
      handler: (payload) => this.deliver(payload),
      // Quick retries first (a mail server restarting), then every 10 minutes until the request's hour is
      // over; after that an attempt finds nothing to send and the job ends.
      options: { maxAttempts: 12, retryDelaysSeconds: [5, 15, 30, 60, 120, 300, 600] },
    };
  }

  /** Records a reset request for the e-mail and enqueues its mail; does the same work for an unknown one. */
  async request(emailKey: string): Promise<void> {
    const user = await this.users.findByEmail(emailKey);
    const now = this.clock.now();
    const id = newId('pwr', now.getTime());
    const expiresAt = new Date(now.getTime() + RESET_TOKEN_LIFETIME_SECONDS * 1000);
    await this.db.transaction(async (tx) => {
      await this.store.insertRequest(tx, { id, userId: user?.id ?? null, now, expiresAt });
      const job: PasswordResetMailJob = { requestId: id };
      await this.jobs.enqueue(tx, PASSWORD_RESET_MAIL_QUEUE, job);
    });
  }

  /**
   * Records an invitation's mail (members.ts) in the caller's transaction, which also records the invitation:
   * a link to choose a password (a token good for 7 days, made when the mail is sent) for a person who cannot
   * sign in. Choosing it accepts the organization's invitation (password-reset.ts). The mail goes once the
   * transaction commits.
   */
  async invitation(
    tx: Queryable,
    input: { userId: string; organizationId: string; invitedBy: string },
  ): Promise<void> {
    const now = this.clock.now();
    const id = newId('pwr', now.getTime());
    await this.store.insertRequest(tx, {
      id,
      userId: input.userId,
      now,
      expiresAt: new Date(now.getTime() + INVITATION_LIFETIME_SECONDS * 1000),
      purpose: 'invite',
      organizationId: input.organizationId,
      invitedBy: input.invitedBy,
    });
    const job: PasswordResetMailJob = { requestId: id };
    await this.jobs.enqueue(tx, PASSWORD_RESET_MAIL_QUEUE, job);
  }

  /** Voids the user's invitation links to the organization (its invitation was revoked), sent or not. */
  async voidInvitation(tx: Queryable, userId: string, organizationId: string): Promise<void> {
    await this.store.spendInvitations(tx, userId, organizationId, this.clock.now());
  }

  /** Arms the request with a fresh token and mails it; a failure to send is thrown, so the job retries. */
  async deliver(job: PasswordResetMailJob): Promise<void> {
    const what = await this.store.describe(this.db, job.requestId, this.clock.now());
    if (!what) return;
    const base = this.publicUrl.replace(/\/$/, '');
    // Only resets and invitations carry a link. (A notice of being added, written before invitations existed,
    // is not sent: that person is a member already and signs in as usual.)
    if (what.purpose !== 'reset' && what.purpose !== 'invite') return;
    const token = `prt_${randomSecret(32)}`;
    // Stored before the mail leaves, so the link works as soon as it arrives.
    const armed = await this.store.arm(this.db, job.requestId, sha256Hex(token), this.clock.now());
    if (!armed) return;
    const user = await this.users.get(armed.userId);
    const link = `${base}/reset-password?token=${encodeURIComponent(token)}`;
    if (what.purpose === 'invite') {
      await this.mailer.send({
        to: user.email,
        subject: `You are invited to ${what.organizationName}`,
        text: [
          `${what.inviterName ? `${what.inviterName} invited you` : 'You are invited'} to ${what.organizationName}.`,
          '',
          `Choose your password here, once, before ${armed.expiresAt.toISOString()} (7 days): ${link}`,
          `Choosing it accepts the invitation; then sign in with this e-mail address at ${base}/login.`,
          '',
          'If you did not expect this, ignore this message.',
        ].join('\n'),
      });
      return;
    }
    await this.mailer.send({
      to: user.email,
      subject: 'Reset your password',
      text: [
        'Someone asked to reset the password of your account.',
        '',
        `Reset it here, once, before ${armed.expiresAt.toISOString()} (one hour after the request): ${link}`,
        `Or send this token to POST /v2/portal/auth/password-reset/confirm: ${token}`,
        '',
        'If it was not you, ignore this message; your password stays as it is.',
      ].join('\n'),
    });
  }
}
