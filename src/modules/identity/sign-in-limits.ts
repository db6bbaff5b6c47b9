// The attempt limits of portal sign-in (spec "Limits", docs/auth.md): how many sign-ins, sign-ups, password
// checks, reset requests and two-factor checks an address, e-mail or user may make. Refusals carry no code
// (spec "Session" table), unlike the API's RATE_LIMITED.
import type { ApiError } from '../../platform/errors.ts';
import {
  type RateLimiter,
  type RateLimitRule,
  type RateLimitState,
  rateLimitExceeded,
} from '../../platform/rate-limit.ts';

// Spec "Limits": login 20 per 15 minutes per IP plus 3 failed attempts per 30 minutes per e-mail; password
// reset requests 3 per hour; two-factor verification 10 per 15 minutes. The guessing limits slide
// (platform/rate-limit.ts): in clock-aligned windows an attacker could spend a limit just before a boundary
// and again just after it, 6 password guesses or 20 codes within minutes.
export const LOGIN_IP_RULE: RateLimitRule = {
  name: 'login-ip',
  limit: 20,
  windowSeconds: 15 * 60,
  sliding: true,
};
export const LOGIN_EMAIL_FAILURE_RULE: RateLimitRule = {
  name: 'login-email-failures',
  limit: 3,
  windowSeconds: 30 * 60,
  sliding: true,
};
export const TWO_FACTOR_RULE: RateLimitRule = {
  name: 'two-factor',
  limit: 10,
  windowSeconds: 15 * 60,
  sliding: true,
};
export const PASSWORD_RESET_RULE: RateLimitRule = {
  name: 'password-reset',
  limit: 3,
  windowSeconds: 60 * 60,
};
/** The same limit per client address, so one address cannot mail resets to many accounts (issue 19). */
export const PASSWORD_RESET_IP_RULE: RateLimitRule = {
  name: 'password-reset-ip',
  limit: 3,
  windowSeconds: 60 * 60,
};

// Not in the spec: sign-up creates an organization and costs an argon2 hash, so an address may not do it
// without bound (docs/auth.md).
export const REGISTER_IP_RULE: RateLimitRule = { name: 'register-ip', limit: 20, windowSeconds: 60 * 60 };

function tooManyAttempts(state: RateLimitState, message: string): ApiError {
  return rateLimitExceeded(state, message, { code: null });
}

export class SignInLimits {
  private readonly rateLimiter: RateLimiter;

  constructor(deps: { rateLimiter: RateLimiter }) {
    this.rateLimiter = deps.rateLimiter;
  }

  /** Counts a sign-in from `ip`; returns the address's budget after it, for the RateLimit-* headers. */
  async countLogin(ip: string): Promise<RateLimitState> {
    const state = await this.rateLimiter.consume(LOGIN_IP_RULE, ip);
    if (!state.allowed) {
      throw tooManyAttempts(state, 'Too many sign-in attempts from this address; try again later');
    }
    return state;
  }

  async countRegistration(ip: string): Promise<void> {
    const state = await this.rateLimiter.consume(REGISTER_IP_RULE, ip);
    if (!state.allowed) throw tooManyAttempts(state, 'Too many sign-ups from this address; try again later');
  }

  /** Counts a reset request against its address, then its e-mail; an address over its limit spends none. */
  async countResetRequest(emailKey: string, ip: string): Promise<void> {
    const byAddress = await this.rateLimiter.consume(PASSWORD_RESET_IP_RULE, ip);
    if (!byAddress.allowed) {
      throw tooManyAttempts(byAddress, 'Too many password reset requests from this address; try again later');
    }
    const state = await this.rateLimiter.consume(PASSWORD_RESET_RULE, emailKey);
    if (!state.allowed) throw tooManyAttempts(state, 'Too many password reset requests; try again later');
  }

  /**
   * Runs a password check under the per-e-mail failure limit (3 per 30 minutes). The attempt is reserved
   * *before* the check and given back when it succeeds, rather than peeked at and counted after a failure:
   * with peek-then-count, many attempts sent in parallel would all pass the peek and be checked. A blocked
   * attempt never reaches the check and is not counted either, so only real failures use up the budget.
   * The reservation is given back to the sub-window it was taken in, even if the check took long.
   */
  async checkPassword<T>(
    emailKey: string,
    check: () => Promise<T | undefined>,
    blockedMessage: string,
  ): Promise<T | undefined> {
    const reservation = await this.rateLimiter.reserve(LOGIN_EMAIL_FAILURE_RULE, emailKey);
    if (!reservation.state.allowed) throw tooManyAttempts(reservation.state, blockedMessage);
    let result: T | undefined;
    try {
      result = await check();
    } catch (error) {
      await reservation.release();
      throw error;
    }
    if (result !== undefined) await reservation.release();
    return result;
  }

  /**
   * Every two-factor check counts, right or wrong. A blocked one never looks at the code and, the window
   * being a sliding one, is not counted (so RateLimit-Reset tells the truth to a client that keeps trying).
   */
  async countTwoFactorAttempt(userId: string): Promise<void> {
    const state = await this.rateLimiter.consume(TWO_FACTOR_RULE, userId);
    if (!state.allowed) throw tooManyAttempts(state, 'Too many two-factor attempts; try again later');
  }
}
