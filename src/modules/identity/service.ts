// Portal sign-in rules (spec "Session" table and "Session rules", CONTRACT section 4): login with
// brute-force protection (its limits are in sign-in-limits.ts), the 2FA login challenge, register,
// organization switching, password change, sign-out everywhere, password reset by mail, and two-factor
// verification for step-up.
// Takes plain values (e-mail, IP, codes) and never the request; every time comes from the app clock.
import { dummyPasswordHash, hashPassword, verifyPassword } from '../../platform/auth/passwords.ts';
import { sha256Hex } from '../../platform/auth/secrets.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import { newId, randomSecret } from '../../platform/ids.ts';
import { type RateLimiter, type RateLimitState, rateLimitHeaders } from '../../platform/rate-limit.ts';
import type { Organization, OrganizationService } from '../organizations/index.ts';
import type { InvitationService } from './invitations.ts';
import type { PasswordResetService } from './password-reset.ts';
import type { PasswordResetMail } from './password-reset-mail.ts';
import { SessionStore } from './session-store.ts';
import type { AuthenticatedSession, IssuedToken, SessionService } from './sessions.ts';
import { SignInLimits } from './sign-in-limits.ts';
import type { TwoFactorService } from './two-factor.ts';
import type { Membership, Role, User, UserService } from './users.ts';

export const CHALLENGE_LIFETIME_SECONDS = 5 * 60;
export const INVALID_CREDENTIALS = 'Invalid e-mail or password';

export interface SessionResult {
  issued: IssuedToken;
  user: User;
  twoFactorEnabled: boolean;
  organizationId: string;
  memberships: Membership[];
}

export type LoginResult = (
  | ({ kind: 'session' } & SessionResult)
  | { kind: 'challenge'; tempToken: string; expiresAt: Date }
) & {
  /** The per-IP login budget after this attempt, for the RateLimit-* headers. */
  rateLimit: RateLimitState;
};

export interface PortalAuthDeps {
  db: Database;
  clock: Clock;
  users: UserService;
  organizations: OrganizationService;
  sessions: SessionService;
  twoFactor: TwoFactorService;
  passwordResets: PasswordResetService;
  passwordResetMail: PasswordResetMail;
  invitations: InvitationService;
  rateLimiter: RateLimiter;
}

export class PortalAuthService {
  private readonly sessionStore = new SessionStore();
  private readonly limits: SignInLimits;

  constructor(private readonly deps: PortalAuthDeps) {
    this.limits = new SignInLimits({ rateLimiter: deps.rateLimiter });
  }

  async login(input: {
    email: string;
    password: string;
    remember?: boolean;
    ip: string;
  }): Promise<LoginResult> {
    const { users, twoFactor } = this.deps;
    const emailKey = input.email.trim().toLowerCase();
    const ipState = await this.limits.countLogin(input.ip);
    const user = await this.limits.checkPassword(
      emailKey,
      async () => {
        const user = await users.findByEmail(emailKey);
        // An unknown e-mail is verified against a dummy hash: same answer, same time as a wrong password.
        const ok = await verifyPassword(user?.passwordHash ?? (await dummyPasswordHash()), input.password);
        return ok ? user : undefined;
      },
      'Too many failed sign-in attempts for this account; try again later',
    );
    if (!user) throw new ApiError(401, INVALID_CREDENTIALS, { headers: rateLimitHeaders(ipState) });
    const remember = input.remember ?? false;
    if (await twoFactor.isEnabled(user.id)) {
      return { ...(await this.createChallenge(user.id, remember)), rateLimit: ipState };
    }
    return { kind: 'session', ...(await this.startSession(user, remember, null)), rateLimit: ipState };
  }

  /** Completes a 2FA login challenge with a TOTP or recovery code. */
  async loginVerify(input: { tempToken: string; code: string }): Promise<SessionResult> {
    const { db, clock, twoFactor, users } = this.deps;
    const challenge = await this.sessionStore.findChallenge(db, sha256Hex(input.tempToken));
    if (!challenge || challenge.consumed_at) {
      throw ApiError.unauthorized(
        'Two-factor challenge is invalid or already used; sign in again',
        'TOKEN_INVALID',
      );
    }
    if (challenge.expires_at.getTime() <= clock.nowMs()) {
      throw ApiError.unauthorized('Two-factor challenge has expired; sign in again', 'SESSION_EXPIRED');
    }
    await this.limits.countTwoFactorAttempt(challenge.user_id);
    const verifiedAt = clock.now();
    const result = await db.transaction(async (tx) => {
      if (!(await twoFactor.verify(challenge.user_id, input.code, tx))) return undefined;
      const spent = await this.sessionStore.consumeChallenge(tx, challenge.id, verifiedAt);
      if (!spent) {
        throw ApiError.unauthorized(
          'Two-factor challenge is invalid or already used; sign in again',
          'TOKEN_INVALID',
        );
      }
      return true;
    });
    if (!result) throw ApiError.unauthorized('Invalid two-factor code');
    const user = await users.get(challenge.user_id);
    // Having just given a second factor, the new session starts with fresh verification.
    return this.startSession(user, challenge.remember, verifiedAt);
  }

  async register(input: {
    email: string;
    password: string;
    name: string;
    organizationName: string;
    ip: string;
  }): Promise<SessionResult> {
    const { db, users, organizations, sessions } = this.deps;
    await this.limits.countRegistration(input.ip);
    // Hashed before the transaction: argon2 takes a while and PGlite holds the database during one.
    const passwordHash = await hashPassword(input.password);
    const { user, org, issued } = await db.transaction(async (tx) => {
      const org = await organizations.create(
        { name: input.organizationName, plan: 'pro', subscriptionState: 'trial' },
        tx,
      );
      const user = await users.create({ email: input.email, passwordHash, name: input.name }, tx);
      await users.addMembership(user.id, org.id, 'owner', tx);
      const { issued } = await sessions.create(
        { userId: user.id, organizationId: org.id, remember: false },
        tx,
      );
      return { user, org, issued };
    });
    return {
      issued,
      user,
      twoFactorEnabled: false,
      organizationId: org.id,
      memberships: [{ organizationId: org.id, organizationName: org.name, role: 'owner' }],
    };
  }

  /** Re-scopes to another organization of the user: a new session and token; the old session ends. */
  async switchOrganization(session: AuthenticatedSession, organizationId: string): Promise<SessionResult> {
    const { db, users, sessions } = this.deps;
    const memberships = await users.memberships(session.userId);
    if (!memberships.some((m) => m.organizationId === organizationId)) {
      throw ApiError.forbidden('You are not a member of that organization');
    }
    const issued = await db.transaction(async (tx) => {
      // Taken, not read then ended: a session revoked meanwhile must not live on as the new one.
      const current = await sessions.take(session.sessionId, tx);
      const created = await sessions.create(
        {
          userId: session.userId,
          organizationId,
          remember: current.remember,
          mfaVerifiedAt: current.mfaVerifiedAt,
          createdAt: current.createdAt,
          expiresAt: current.expiresAt,
        },
        tx,
      );
      return created.issued;
    });
    const user = await users.get(session.userId);
    return { issued, user, twoFactorEnabled: session.twoFactorEnabled, organizationId, memberships };
  }

  /** Changes the password; every session of the user is revoked and the caller continues in a new one. */
  async changePassword(
    session: AuthenticatedSession,
    input: { currentPassword: string; newPassword: string },
  ): Promise<SessionResult> {
    const { db, users, sessions } = this.deps;
    const user = await users.get(session.userId);
    await this.confirmPassword(user, input.currentPassword);
    const current = await sessions.get(session.sessionId);
    const newHash = await hashPassword(input.newPassword);
    const issued = await db.transaction(async (tx) => {
      await users.update(user.id, { passwordHash: newHash, requirePasswordChange: false }, tx);
      await sessions.revokeAll(user.id, 'password_change', tx);
      // A reset link sent before the change would otherwise still set the password afterwards.
      await this.deps.passwordResets.voidAll(user.id, tx);
      const created = await sessions.create(
        {
          userId: user.id,
          organizationId: session.organizationId,
          remember: session.remember,
          mfaVerifiedAt: current?.mfaVerifiedAt ?? null,
        },
        tx,
      );
      return created.issued;
    });
    return {
      issued,
      user: await users.get(user.id),
      twoFactorEnabled: session.twoFactorEnabled,
      organizationId: session.organizationId,
      memberships: await users.memberships(user.id),
    };
  }

  async signOutEverywhere(userId: string): Promise<number> {
    return this.deps.sessions.revokeAll(userId, 'sign_out_everywhere');
  }

  /**
   * Always the same answer whether or not the e-mail has an account; only the limits (3 per hour per e-mail
   * and per address) answer 429, so that the limit is visible to a real user who keeps asking. The mail goes out through the
   * job queue (password-reset-mail.ts), which also keeps a known e-mail's answer as fast as an unknown one's.
   */
  async requestPasswordReset(email: string, ip: string): Promise<void> {
    const emailKey = email.trim().toLowerCase();
    await this.limits.countResetRequest(emailKey, ip);
    await this.deps.passwordResetMail.request(emailKey);
  }

  confirmPasswordReset(token: string, newPassword: string): Promise<void> {
    return this.deps.passwordResets.confirm(token, newPassword);
  }

  /** Fresh verification for step-up: the session is verified for the next 10 minutes. */
  async verifySecondFactor(session: AuthenticatedSession, code: string): Promise<Date> {
    const { clock, twoFactor, sessions } = this.deps;
    if (!session.twoFactorEnabled) throw ApiError.badRequest('Two-factor authentication is not on');
    await this.limits.countTwoFactorAttempt(session.userId);
    if (!(await twoFactor.verify(session.userId, code))) throw ApiError.badRequest('Invalid two-factor code');
    const now = clock.now();
    await sessions.markMfaVerified(session.sessionId);
    return now;
  }

  /**
   * Turns 2FA on. The password is asked too (docs/auth.md, "Decisions"): otherwise a stolen session of a user
   * without 2FA could turn it on with the thief's authenticator and lock the owner out. It is checked first,
   * under the per-e-mail failure limit, so this route is no way round that limit to guess passwords.
   */
  async enableTwoFactor(
    session: AuthenticatedSession,
    input: { code: string; password: string },
  ): Promise<string[]> {
    await this.confirmPassword(await this.deps.users.get(session.userId), input.password);
    await this.limits.countTwoFactorAttempt(session.userId);
    const codes = await this.deps.twoFactor.enable(session.userId, input.code);
    await this.deps.sessions.markMfaVerified(session.sessionId);
    return codes;
  }

  async disableTwoFactor(session: AuthenticatedSession, code: string): Promise<void> {
    const { db, twoFactor } = this.deps;
    await this.limits.countTwoFactorAttempt(session.userId);
    await db.transaction(async (tx) => {
      if (!(await twoFactor.verify(session.userId, code, tx)))
        throw ApiError.badRequest('Invalid two-factor code');
      await twoFactor.disable(session.userId, tx);
    });
  }

  async me(session: AuthenticatedSession): Promise<{
    user: User;
    organization: Organization;
    role: Role;
    memberships: Membership[];
    pendingInvitations: number;
  }> {
    const user = await this.deps.users.get(session.userId);
    const organization = await this.deps.organizations.get(session.organizationId);
    const memberships = await this.deps.users.memberships(session.userId);
    const pendingInvitations = await this.deps.invitations.countReceived(user.email);
    return { user, organization, role: session.role!, memberships, pendingInvitations };
  }

  /**
   * Checks the signed-in user's own password; a wrong one is a 400 (the session itself is fine) and counts
   * like a failed login for the e-mail, so a stolen session cannot guess its way further.
   */
  private async confirmPassword(user: User, password: string): Promise<void> {
    const ok = await this.limits.checkPassword(
      user.email.toLowerCase(),
      async () => ((await verifyPassword(user.passwordHash, password)) ? user : undefined),
      'Too many failed password attempts; try again later',
    );
    if (!ok) throw ApiError.badRequest('Current password is incorrect');
  }

  private async createChallenge(
    userId: string,
    remember: boolean,
  ): Promise<{ kind: 'challenge'; tempToken: string; expiresAt: Date }> {
    const now = this.deps.clock.now();
    const tempToken = `tfa_${randomSecret(32)}`;
    const expiresAt = new Date(now.getTime() + CHALLENGE_LIFETIME_SECONDS * 1000);
    await this.sessionStore.insertChallenge(this.deps.db, {
      id: newId('lch', now.getTime()),
      tokenHash: sha256Hex(tempToken),
      userId,
      remember,
      now,
      expiresAt,
    });
    return { kind: 'challenge', tempToken, expiresAt };
  }

  private async startSession(
    user: User,
    remember: boolean,
    mfaVerifiedAt: Date | null,
  ): Promise<SessionResult> {
    const memberships = await this.deps.users.memberships(user.id);
    const first = memberships[0];
    if (!first) throw ApiError.forbidden('This account does not belong to any organization');
    const { issued } = await this.deps.sessions.create({
      userId: user.id,
      organizationId: first.organizationId,
      remember,
      mfaVerifiedAt,
    });
    return {
      issued,
      user,
      twoFactorEnabled: mfaVerifiedAt !== null,
      organizationId: first.organizationId,
      memberships,
    };
  }
}
