// Two-factor authentication with TOTP (RFC 6238: SHA-1, 6 digits, 30-second steps, one step of drift either
// way) and single-use recovery codes. Secrets are sealed with AES-256-GCM (platform/crypto.ts), bound to
// their user; recovery codes are stored as SHA-256 (they are random, so a fast hash is right).
// A time-step, once accepted, is never accepted again for that user (nor any earlier step): a code seen
// over someone's shoulder or replayed from a log is worthless.
import { randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import { sha256Hex } from '../../platform/auth/secrets.ts';
import type { Clock } from '../../platform/clock.ts';
import type { SecretBox } from '../../platform/crypto.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { type TwoFactorRow, TwoFactorStore } from './two-factor-store.ts';

export const TOTP_ISSUER = 'Commsplatform';
const PERIOD_SECONDS = 30;
export const RECOVERY_CODE_COUNT = 10;
// Crockford's base 32 (no i, l, o, u): 32 symbols, so a random byte maps onto it without bias.
const RECOVERY_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

export class TwoFactorService {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly box: SecretBox;
  private readonly store = new TwoFactorStore();

  constructor(deps: { db: Database; clock: Clock; box: SecretBox }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.box = deps.box;
  }

  async isEnabled(userId: string, tx: Queryable = this.db): Promise<boolean> {
    const row = await this.store.find(tx, userId);
    return Boolean(row?.enabled_at);
  }

  /** Starts (or restarts) enrolment: a new secret, not yet in force until a code from it is confirmed. */
  async setup(userId: string, accountLabel: string): Promise<{ secret: string; otpauthUrl: string }> {
    return this.inTransaction(async (tx) => {
      const existing = await this.store.find(tx, userId, true);
      if (existing?.enabled_at) {
        throw ApiError.conflict(
          'Two-factor authentication is already on; disable it before setting it up again',
        );
      }
      const secret = new Secret({ size: 20 });
      const now = this.clock.now();
      await this.store.upsertSecret(tx, userId, this.box.seal(secret.base32, userId), now);
      return { secret: secret.base32, otpauthUrl: totpFor(secret, accountLabel).toString() };
    });
  }

  /** Confirms enrolment with a code from the new secret; returns the recovery codes, shown this once. */
  async enable(userId: string, code: string): Promise<string[]> {
    return this.inTransaction(async (tx) => {
      const row = await this.store.find(tx, userId, true);
      if (!row) throw ApiError.badRequest('Start with POST /v2/portal/auth/2fa/setup');
      if (row.enabled_at) throw ApiError.conflict('Two-factor authentication is already on');
      if (!(await this.acceptTotp(row, code, tx))) throw ApiError.badRequest('Invalid two-factor code');
      const now = this.clock.now();
      await this.store.markEnabled(tx, userId, now);
      await this.store.deleteRecoveryCodes(tx, userId);
      const codes = Array.from({ length: RECOVERY_CODE_COUNT }, recoveryCode);
      for (const recovery of codes) {
        await this.store.insertRecoveryCode(
          tx,
          newId('rc', now.getTime()),
          userId,
          hashRecoveryCode(recovery),
          now,
        );
      }
      return codes;
    });
  }

  /**
   * Checks a second factor for a user with 2FA on: a 6-digit TOTP code (its step consumed) or an unused
   * recovery code (consumed). False for anything else, including a user without 2FA.
   */
  async verify(userId: string, code: string, tx?: Queryable): Promise<boolean> {
    const run = async (q: Queryable) => {
      const row = await this.store.find(q, userId, true);
      if (!row?.enabled_at) return false;
      const trimmed = code.trim();
      if (/^\d{6}$/.test(trimmed)) return this.acceptTotp(row, trimmed, q);
      return this.store.useRecoveryCode(q, userId, hashRecoveryCode(trimmed), this.clock.now());
    };
    return tx ? run(tx) : this.inTransaction(run);
  }

  async disable(userId: string, tx: Queryable = this.db): Promise<void> {
    await this.store.deleteRecoveryCodes(tx, userId);
    await this.store.delete(tx, userId);
  }

  async remainingRecoveryCodes(userId: string): Promise<number> {
    return this.store.countUnusedRecoveryCodes(this.db, userId);
  }

  private async acceptTotp(row: TwoFactorRow, code: string, tx: Queryable): Promise<boolean> {
    if (!/^\d{6}$/.test(code)) return false;
    const secret = Secret.fromBase32(this.box.open(row.secret_sealed, row.user_id));
    const now = this.clock.nowMs();
    const delta = totpFor(secret, '').validate({ token: code, timestamp: now, window: 1 });
    if (delta === null) return false;
    const step = Math.floor(now / 1000 / PERIOD_SECONDS) + delta;
    // Atomic: two requests racing with the same code cannot both take its step.
    return this.store.takeStep(tx, row.user_id, step, this.clock.now());
  }

  private inTransaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.db.transaction(work);
  }
}

function totpFor(secret: Secret, label: string): TOTP {
  return new TOTP({
    issuer: TOTP_ISSUER,
    label: label || 'account',
    algorithm: 'SHA1',
    digits: 6,
    period: PERIOD_SECONDS,
    secret,
  });
}

/** Ten random characters from an unambiguous alphabet, shown as `xxxxx-xxxxx` (50 bits). */
function recoveryCode(): string {
  const bytes = randomBytes(10);
  let out = '';
  for (const byte of bytes) out += RECOVERY_ALPHABET[byte % RECOVERY_ALPHABET.length];
  return `${out.slice(0, 5)}-${out.slice(5)}`;
}

/** Case, spaces and the dash do not matter when a recovery code is typed back. */
function hashRecoveryCode(code: string): string {
  return sha256Hex(code.toLowerCase().replace(/[\s-]/g, ''));
}
