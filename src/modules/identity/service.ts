// Portal sign-in rules (spec "Session" table and "Session rules", CONTRACT section 4): login with
// brute-force protection, the 2FA login challenge, register, organization switching, password change,
// sign-out everywhere, password reset by mail, and two-factor verification for step-up.
// Takes plain values (e-mail, IP, codes) and never the request; every time comes from the app clock.
import { dummyPasswordHash, hashPassword, verifyPassword } from '../../platform/auth/passwords.ts';
import { sha256Hex } from '../../platform/auth/secrets.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import { newId, randomSecret } from '../../platform/ids.ts';
import type { Mailer } from '../../platform/mail.ts';
import {
  type RateLimiter,
  type RateLimitRule,
  type RateLimitState,
  rateLimitExceeded,
  rateLimitHeaders,
} from '../../platform/rate-limit.ts';
import type { Organization, OrganizationService } from '../organizations/index.ts';
import type { PasswordResetService } from './password-reset.ts';
import type { AuthenticatedSession, IssuedToken, SessionService } from './sessions.ts';
import type { TwoFactorService } from './two-factor.ts';
import type { Membership, Role, User, UserService } from './users.ts';

// Spec "Limits": login 20 per 15 minutes per IP plus 3 failed attempts per 30 minutes per e-mail; password
// reset requests 3 per hour; two-factor verification 10 per 15 minutes.
export const LOGIN_IP_RULE: RateLimitRule = { name: 'login-ip', limit: 20, windowSeconds: 15 * 60 };
export const LOGIN_EMAIL_FAILURE_RULE: RateLimitRule = {
  name: 'login-email-failures',
  limit: 3,
  windowSeconds: 30 * 60,
};
export const TWO_FACTOR_RULE: RateLimitRule = { name: 'two-factor', limit: 10, windowSeconds: 15 * 60 };
export const PASSWORD_RESET_RULE: RateLimitRule = {
  name: 'password-reset',
  limit: 3,
  windowSeconds: 60 * 60,
};

// Not in the spec: sign-up creates an organization and costs an argon2 hash, so an address may not do it
// without bound (docs/auth.md).
export const REGISTER_IP_RULE: RateLimitRule = { name: 'register-ip', limit: 20, windowSeconds: 60 * 60 };

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
  rateLimiter: RateLimiter;
  mailer: Mailer;
  publicUrl: string;
  onMailError: (error: unknown) => void;
}

// Sign-in refusals carry no code (spec "Session" table), unlike the API's RATE_LIMITED.
function tooManyAttempts(state: RateLimitState, message: string): ApiError {
  return rateLimitExceeded(state, message, { code: null });
}

export class PortalAuthService {
  constructor(private readonly deps: PortalAuthDeps) {}

  async login(input: {
    email: string;
    password: string;
    remember?: boolean;
    ip: string;
  }): Promise<LoginResult> {
    const { rateLimiter, users, twoFactor } = this.deps;
    const emailKey = input.email.trim().toLowerCase();
    const ipState = await rateLimiter.consume(LOGIN_IP_RULE, input.ip);
    if (!ipState.allowed) {
      throw tooManyAttempts(ipState, 'Too many sign-in attempts from this address; try again later');
    }
    const user = await this.checkPasswordGuarded(
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
    const [challenge] = await db.query<{
      id: string;
      user_id: string;
      remember: boolean;
      expires_at: Date;
      consumed_at: Date | null;
    }>('SELECT * FROM login_challenges WHERE token_hash = $1', [sha256Hex(input.tempToken)]);
    if (!challenge || challenge.consumed_at) {
      throw ApiError.unauthorized(
        'Two-factor challenge is invalid or already used; sign in again',
        'TOKEN_INVALID',
      );
    }
    if (challenge.expires_at.getTime() <= clock.nowMs()) {
      throw ApiError.unauthorized('Two-factor challenge has expired; sign in again', 'SESSION_EXPIRED');
    }
    await this.countTwoFactorAttempt(challenge.user_id);
    const verifiedAt = clock.now();
    const result = await db.transaction(async (tx) => {
      if (!(await twoFactor.verify(challenge.user_id, input.code, tx))) return undefined;
      const spent = await tx.query(
        'UPDATE login_challenges SET consumed_at = $2 WHERE id = $1 AND consumed_at IS NULL RETURNING id',
        [challenge.id, verifiedAt],
      );
      if (spent.length === 0) {
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
    const { db, users, organizations, sessions, rateLimiter } = this.deps;
    const state = await rateLimiter.consume(REGISTER_IP_RULE, input.ip);
    if (!state.allowed) throw tooManyAttempts(state, 'Too many sign-ups from this address; try again later');
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
    // Wrong current passwords count like failed logins: a stolen session cannot guess its way further.
    const emailKey = user.email.toLowerCase();
    const ok = await this.checkPasswordGuarded(
      emailKey,
      async () => ((await verifyPassword(user.passwordHash, input.currentPassword)) ? user : undefined),
      'Too many failed password attempts; try again later',
    );
    if (!ok) throw ApiError.badRequest('Current password is incorrect');
    const current = await sessions.get(session.sessionId);
    const newHash = await hashPassword(input.newPassword);
    const issued = await db.transaction(async (tx) => {
      await users.update(user.id, { passwordHash: newHash, requirePasswordChange: false }, tx);
      await sessions.revokeAll(user.id, 'password_change', tx);
      // A reset link sent before the change would otherwise still set the password afterwards.
      await tx.query('UPDATE password_reset_tokens SET used_at = $2 WHERE user_id = $1 AND used_at IS NULL', [
        user.id,
        this.deps.clock.now(),
      ]);
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
   * Always the same answer whether or not the e-mail has an account; only the per-e-mail limit (3 per hour)
   * answers 429, so that the limit is visible to a real user who keeps asking.
   */
  async requestPasswordReset(email: string): Promise<void> {
    const { rateLimiter, passwordResets, mailer, publicUrl, onMailError } = this.deps;
    const emailKey = email.trim().toLowerCase();
    const state = await rateLimiter.consume(PASSWORD_RESET_RULE, emailKey);
    if (!state.allowed) throw tooManyAttempts(state, 'Too many password reset requests; try again later');
    const issued = await passwordResets.issue(emailKey);
    if (!issued) return;
    const link = `${publicUrl.replace(/\/$/, '')}/reset-password?token=${encodeURIComponent(issued.token)}`;
    // Not awaited: waiting for the SMTP server would make known e-mails measurably slower than unknown ones.
    void mailer
      .send({
        to: issued.userEmail,
        subject: 'Reset your password',
        text: [
          'Someone asked to reset the password of your account.',
          '',
          `Reset it here within one hour: ${link}`,
          `Or send this token to POST /v2/portal/auth/password-reset/confirm: ${issued.token}`,
          '',
          'If it was not you, ignore this message; your password stays as it is.',
        ].join('\n'),
      })
      .catch(onMailError);
  }

  confirmPasswordReset(token: string, newPassword: string): Promise<void> {
    return this.deps.passwordResets.confirm(token, newPassword);
  }

  /** Fresh verification for step-up: the session is verified for the next 10 minutes. */
  async verifySecondFactor(session: AuthenticatedSession, code: string): Promise<Date> {
    const { clock, twoFactor, sessions } = this.deps;
    if (!session.twoFactorEnabled) throw ApiError.badRequest('Two-factor authentication is not on');
    await this.countTwoFactorAttempt(session.userId);
    if (!(await twoFactor.verify(session.userId, code))) throw ApiError.badRequest('Invalid two-factor code');
    const now = clock.now();
    await sessions.markMfaVerified(session.sessionId);
    return now;
  }

  async enableTwoFactor(session: AuthenticatedSession, code: string): Promise<string[]> {
    await this.countTwoFactorAttempt(session.userId);
    const codes = await this.deps.twoFactor.enable(session.userId, code);
    await this.deps.sessions.markMfaVerified(session.sessionId);
    return codes;
  }

  async disableTwoFactor(session: AuthenticatedSession, code: string): Promise<void> {
    const { db, twoFactor } = this.deps;
    await this.countTwoFactorAttempt(session.userId);
    await db.transaction(async (tx) => {
      if (!(await twoFactor.verify(session.userId, code, tx)))
        throw ApiError.badRequest('Invalid two-factor code');
      await twoFactor.disable(session.userId, tx);
    });
  }

  async me(session: AuthenticatedSession): Promise<{ user: User; organization: Organization; role: Role }> {
    const user = await this.deps.users.get(session.userId);
    const organization = await this.deps.organizations.get(session.organizationId);
    return { user, organization, role: session.role! };
  }

  /**
   * Runs a password check under the per-e-mail failure limit (3 per 30 minutes). The attempt is counted
   * *before* the check and refunded when it succeeds, rather than peeked at and counted after a failure:
   * with peek-then-count, many attempts sent in parallel would all pass the peek and be checked. A blocked
   * attempt never reaches the check and is refunded too, so only real failures use up the budget.
   */
  private async checkPasswordGuarded<T>(
    emailKey: string,
    check: () => Promise<T | undefined>,
    blockedMessage: string,
  ): Promise<T | undefined> {
    const { rateLimiter } = this.deps;
    const state = await rateLimiter.consume(LOGIN_EMAIL_FAILURE_RULE, emailKey);
    if (!state.allowed) {
      await rateLimiter.consume(LOGIN_EMAIL_FAILURE_RULE, emailKey, -1);
      throw tooManyAttempts(state, blockedMessage);
    }
    let result: T | undefined;
    try {
      result = await check();
    } catch (error) {
      await rateLimiter.consume(LOGIN_EMAIL_FAILURE_RULE, emailKey, -1);
      throw error;
    }
    if (result !== undefined) await rateLimiter.consume(LOGIN_EMAIL_FAILURE_RULE, emailKey, -1);
    return result;
  }

  /** Every two-factor check counts, right or wrong, and a blocked one never looks at the code. */
  private async countTwoFactorAttempt(userId: string): Promise<void> {
    const state = await this.deps.rateLimiter.consume(TWO_FACTOR_RULE, userId);
    if (!state.allowed) throw tooManyAttempts(state, 'Too many two-factor attempts; try again later');
  }

  private async createChallenge(
    userId: string,
    remember: boolean,
  ): Promise<{ kind: 'challenge'; tempToken: string; expiresAt: Date }> {
    const now = this.deps.clock.now();
    const tempToken = `tfa_${randomSecret(32)}`;
    const expiresAt = new Date(now.getTime() + CHALLENGE_LIFETIME_SECONDS * 1000);
    await this.deps.db.query(
      `INSERT INTO login_challenges (id, token_hash, user_id, remember, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [newId('lch', now.getTime()), sha256Hex(tempToken), userId, remember, now, expiresAt],
    );
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
