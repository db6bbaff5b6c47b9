// Password reset by e-mail: a one-time token, random and stored only as its SHA-256, good for one hour.
// Using it sets the new password, spends every outstanding reset token of the user, clears a pending
// "require password change" and revokes every session (a reset is what one does after losing control).
// Requests and their mail are password-reset-mail.ts: the token is made when the mail is sent. A token from an
// invitation's mail (purpose `invite`) also accepts that organization's invitation, in the same transaction:
// following the link and choosing a password is how a person who cannot sign in says yes (invitations.ts).
import { hashPassword } from '../../platform/auth/passwords.ts';
import { sha256Hex } from '../../platform/auth/secrets.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import { newId, randomSecret } from '../../platform/ids.ts';
import type { InvitationService } from './invitations.ts';
import { PasswordResetStore } from './password-reset-store.ts';
import type { SessionService } from './sessions.ts';
import type { UserService } from './users.ts';

export const RESET_TOKEN_LIFETIME_SECONDS = 3600;

export class PasswordResetService {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly users: UserService;
  private readonly sessions: SessionService;
  private readonly invitations: InvitationService;
  private readonly store = new PasswordResetStore();

  constructor(deps: {
    db: Database;
    clock: Clock;
    users: UserService;
    sessions: SessionService;
    invitations: InvitationService;
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.users = deps.users;
    this.sessions = deps.sessions;
    this.invitations = deps.invitations;
  }

  /**
   * A reset token for the e-mail's user, issued at once and not mailed (tests and tools), or undefined when no
   * user has that e-mail. Requests from the portal go through PasswordResetMail instead.
   */
  async issue(email: string): Promise<{ token: string; userEmail: string; expiresAt: Date } | undefined> {
    const user = await this.users.findByEmail(email);
    if (!user) return undefined;
    const now = this.clock.now();
    const token = `prt_${randomSecret(32)}`;
    const expiresAt = new Date(now.getTime() + RESET_TOKEN_LIFETIME_SECONDS * 1000);
    await this.store.insert(this.db, {
      id: newId('pwr', now.getTime()),
      tokenHash: sha256Hex(token),
      userId: user.id,
      now,
      expiresAt,
    });
    return { token, userEmail: user.email, expiresAt };
  }

  async confirm(token: string, newPassword: string): Promise<void> {
    // A cheap look first, so a guessed token costs no argon2 work; the atomic spend below still decides.
    const usable = await this.store.isUsable(this.db, sha256Hex(token), this.clock.now());
    if (!usable)
      throw ApiError.badRequest('Password reset token is invalid, used or expired; request a new one');
    // Hashed before the transaction: argon2 takes a while and PGlite holds the database during one.
    const passwordHash = await hashPassword(newPassword);
    await this.db.transaction(async (tx) => {
      const now = this.clock.now();
      // Spent atomically: of two racing confirmations with one token, only one finds it unused.
      const spent = await this.store.spend(tx, sha256Hex(token), now);
      if (!spent)
        throw ApiError.badRequest('Password reset token is invalid, used or expired; request a new one');
      const { userId } = spent;
      await this.users.update(userId, { passwordHash, requirePasswordChange: false }, tx);
      if (spent.purpose === 'invite' && spent.organizationId) {
        await this.invitations.acceptByLink(tx, userId, spent.organizationId);
      }
      await this.store.spendAll(tx, userId, now);
      await this.sessions.revokeAll(userId, 'password_reset', tx);
    });
  }

  /** Spends every outstanding reset link of the user, so none can set the password afterwards. */
  async voidAll(userId: string, tx: Queryable): Promise<void> {
    await this.store.spendAll(tx, userId, this.clock.now());
  }
}
