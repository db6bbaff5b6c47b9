// SMS plan limits on sends (spec "SMS plan limits", CONTRACT section 6): checked and counted inside the
// send's own transaction, so a refused send leaves no message, no count and no job, and concurrent sends
// of one organization take turns on its account row (SELECT … FOR UPDATE). Each counter moves only by a
// guarded update (`… WHERE used + n <= limit RETURNING`), so even without the lock no counter can pass its
// limit. The checks run in CONTRACT order and the first that fails answers. If the counters cannot be read
// or locked in time (a lock timeout, a statement timeout, a lost connection), the limit cannot be checked:
// 503, TRIAL_LIMIT_REACHED for trial organizations, no code for the others, with a short Retry-After.
// The counters' SQL is in limits-store.ts; the order of the checks and what each refusal says are here.
import type { Clock } from '../../platform/clock.ts';
import type { SqlFragment } from '../../platform/db/fragment.ts';
import type { Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import { accountPolicyRefusal, type Organization, type OrganizationService } from '../organizations/index.ts';
import {
  PLAIN_SEND_UNCOUNTED,
  type PlainSendTerms,
  SendLimitStore,
  type WaitSettings,
} from './limits-store.ts';

export const TRIAL_BURST_MESSAGES = 50;
export const TRIAL_BURST_WINDOW_SECONDS = 10 * 60;
export const VELOCITY_SEGMENTS = 2000;
export const VELOCITY_WINDOW_SECONDS = 72 * 60 * 60;
export const MONTHLY_ABSOLUTE_MULTIPLE = 3;
/** Seconds a client should wait before retrying a send whose limit could not be checked. */
export const UNCHECKED_RETRY_AFTER_SECONDS = 2;

const DAY_MS = 86_400_000;

export interface SendLimitOptions {
  /** How long a send waits for another send of its organization to release the account row. */
  lockTimeoutMs: number;
}

/** Start of the UTC day of `at`, and of the next. */
export function utcDay(at: Date): { start: Date; next: Date } {
  const start = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));
  return { start, next: new Date(start.getTime() + DAY_MS) };
}

/** The monthly pool: the UTC calendar month of `at`, and the start of the next (docs/messaging.md). */
export function utcMonth(at: Date): { start: Date; next: Date } {
  return {
    start: new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1)),
    next: new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1)),
  };
}

const secondsUntil = (until: Date, now: Date) =>
  Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000));

function paidLimit(reason: string, message: string, retryAfterSeconds: number): ApiError {
  return new ApiError(429, message, {
    code: 'PAID_LIMIT_REACHED',
    reason,
    headers: { 'Retry-After': String(retryAfterSeconds) },
  });
}

// Database failures that mean "the counters could not be checked now", not a bug: lock and statement
// timeouts, serialization failures and deadlocks, and lost connections (SQLSTATE class 08).
const UNCHECKABLE_SQLSTATES = new Set(['55P03', '57014', '40001', '40P01', '57P01', '57P03', '53300']);

function isUncheckable(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  if (typeof code !== 'string') {
    const message = error instanceof Error ? error.message : '';
    return /ECONNREFUSED|ECONNRESET|Connection terminated|timeout/i.test(message);
  }
  return UNCHECKABLE_SQLSTATES.has(code) || code.startsWith('08');
}

export class SendLimits {
  private readonly clock: Clock;
  private readonly organizations: OrganizationService;
  private readonly store = new SendLimitStore();
  readonly options: SendLimitOptions;

  constructor(deps: {
    clock: Clock;
    organizations: OrganizationService;
    options: SendLimitOptions;
  }) {
    this.clock = deps.clock;
    this.organizations = deps.organizations;
    this.options = deps.options;
  }

  /**
   * Checks every limit for one message of `segments` chargeable segments and counts it, in `tx`. Throws the
   * refusal of the first limit that fails; the caller's transaction then rolls back whatever was counted.
   * Returns the organization as read with the lock. `known` is the organization as the caller read it before
   * the transaction: when the limit cannot be checked, its state decides the 503's code, because the failed
   * transaction can run no more queries and a query elsewhere could wait for a connection that the stalled
   * sends themselves hold.
   */
  reserve(tx: Queryable, known: Organization, segments: number): Promise<Organization> {
    return this.reserveMany(tx, known, async () => ({ messages: 1, segments }));
  }

  /**
   * reserve() for a send that learns what it costs from a read of another module (its recipient: opted out,
   * and the contact its text is rendered for): `read` runs in the account lock's statement, and `decide` gets
   * its row and says the cost (or throws a refusal), as reserveMany's does. One round trip fewer per send.
   */
  reserveWith(
    tx: Queryable,
    known: Organization,
    read: SqlFragment,
    decide: (row: Record<string, unknown>) => Promise<{ messages: number; segments: number }>,
  ): Promise<Organization> {
    return this.reserveMany(tx, known, decide, read);
  }

  /**
   * Checks and counts several messages at once (a campaign's batch), as reserve() does one: the account lock
   * is taken first, then `decide` says how many messages and segments to count. It runs under the lock, so
   * what it books (a campaign books its numbers' slots there) is booked in the same order as a send books
   * them, account first, and the two never wait on each other the other way round. The limits judge the
   * batch as a whole: a refusal refuses all of it.
   */
  async reserveMany(
    tx: Queryable,
    known: Organization,
    decide: (alongside: Record<string, unknown>) => Promise<{ messages: number; segments: number }>,
    read?: SqlFragment,
  ): Promise<Organization> {
    const organizationId = known.id;
    let trial = known.subscriptionState === 'trial';
    try {
      const now = this.clock.now();
      // Bounded waits, from the first statement on (the insert can wait on another send's uncommitted insert):
      // a send that cannot get its turn, or whose counters do not answer, quickly answers 503 rather than
      // hanging. Both settings end with the limit checks (the last of them, addUsage, sets the session's own
      // back; a refusal ends them with the transaction), so the writes that follow are not cut short by them.
      const lockMs = this.lockMs();
      // Read again with the lock, in its statement: a plan or state changed a moment ago applies to this send
      // (store.ts, lockAccount, says which moment and why that is enough).
      const locked = await this.store.lockAccount(tx, organizationId, now, lockMs, read);
      const org = this.organizations.fromRecord(locked.organization);
      trial ||= org.subscriptionState === 'trial';
      const usage = await decide(locked.alongside ?? {});
      await this.check(tx, org, usage, now, locked.sessionWaits);
      return org;
    } catch (error) {
      throw uncheckedRefusal(error, trial);
    }
  }

  /**
   * The terms on which a send of one message of `segments` from `known` (the organization as the request
   * knew it) is plainly within every limit, for the one statement that checks, counts and writes it
   * (SendLimitStore.plainSendGate): the daily limit, and the monthly ceiling or, when the account state does
   * not allow going beyond it, the allowance. Undefined when only the full checks can judge: a trial, or an
   * organization still in its first 72 hours. The statement goes on only while the organization's row still
   * says what these terms were made from.
   */
  plainTerms(known: Organization, segments: number): PlainSendTerms | undefined {
    const now = this.clock.now();
    const createdBy = new Date(now.getTime() - VELOCITY_WINDOW_SECONDS * 1000);
    if (known.subscriptionState === 'trial' || known.createdAt > createdBy) return undefined;
    const { day, month } = usagePeriods(known, now);
    const mayGoBeyond = accountPolicyRefusal(known, 'send_beyond_allowance') === undefined;
    return {
      organizationId: known.id,
      now,
      lockMs: this.lockMs(),
      segments,
      standing: {
        subscriptionState: known.subscriptionState,
        cardVerified: known.cardVerified,
        suspended: known.suspended,
        monthlyAllowanceSegments: known.monthlyAllowanceSegments,
        dailyLimitSegments: known.dailyLimitSegments,
      },
      createdBy,
      day,
      month: {
        start: month.start,
        limit: mayGoBeyond ? month.limit : Math.min(month.limit, known.monthlyAllowanceSegments),
      },
    };
  }

  /** How long a send waits for its organization's account row, in whole milliseconds (at least 1). */
  private lockMs(): number {
    return Math.max(1, Math.round(this.options.lockTimeoutMs));
  }

  /** plainTerms' checks as CTEs (SendLimitStore.plainSendGate), the recipient's opt-out read among them. */
  plainGate(terms: PlainSendTerms, optedOut: SqlFragment): SqlFragment {
    return this.store.plainSendGate(terms, optedOut);
  }

  private async check(
    tx: Queryable,
    org: Organization,
    usage: { messages: number; segments: number },
    now: Date,
    sessionWaits: WaitSettings,
  ): Promise<void> {
    const id = org.id;
    const { messages, segments } = usage;
    // 1. Trial lifetime: a trial sends at most trialMessageLimit messages, ever. Retrying does not help.
    if (org.subscriptionState === 'trial') {
      if (!(await this.store.countTrialMessages(tx, id, messages, org.trialMessageLimit, now))) {
        throw new ApiError(
          429,
          `The trial allows ${org.trialMessageLimit} messages and they have been sent; subscribe to send more`,
          { code: 'TRIAL_LIMIT_REACHED', reason: 'lifetime' },
        );
      }

      // 2. Trial burst: more than 50 messages in any 10 minutes. Counted from the messages themselves (a
      // sliding window), which the account lock makes exact.
      const since = new Date(now.getTime() - TRIAL_BURST_WINDOW_SECONDS * 1000);
      const recent = await this.store.countRecentSends(tx, id, since);
      if (recent + messages > TRIAL_BURST_MESSAGES) {
        throw new ApiError(
          429,
          `A trial sends at most ${TRIAL_BURST_MESSAGES} messages in 10 minutes; slow down`,
          { code: 'TRIAL_LIMIT_REACHED', reason: 'burst' },
        );
      }
    }

    // 3. New-account velocity: 2,000 segments in the first 72 hours after the organization was created.
    const velocityEnds = new Date(org.createdAt.getTime() + VELOCITY_WINDOW_SECONDS * 1000);
    if (now < velocityEnds) {
      if (!(await this.store.countNewAccountSegments(tx, id, segments, VELOCITY_SEGMENTS, now))) {
        throw paidLimit(
          'new_account_velocity',
          `A new account sends at most ${VELOCITY_SEGMENTS} segments in its first 72 hours`,
          secondsUntil(velocityEnds, now),
        );
      }
    }

    // 4 and 5. Daily (dailyLimitSegments per UTC day) and monthly absolute (three times the allowance per pool,
    // the UTC calendar month), counted together in one statement and judged in that order. The last statement
    // of the checks: it also lifts the wait bounds.
    const { day, month } = usagePeriods(org, now);
    const used = await this.store.addUsage(tx, id, usage, { day, month }, sessionWaits);
    if (used.day === undefined) {
      throw paidLimit(
        'daily',
        `The daily limit of ${org.dailyLimitSegments} segments has been reached; it resets at 00:00 UTC`,
        secondsUntil(day.next, now),
      );
    }
    const usedThisMonth = used.month;
    if (usedThisMonth === undefined) {
      throw paidLimit(
        'monthly_absolute',
        `The monthly ceiling of ${month.limit} segments (3 times the allowance) has been reached`,
        secondsUntil(month.next, now),
      );
    }

    // 6 and 7. Beyond the included allowance: only a subscription in good standing with a card may go on.
    const beyond = beyondAllowanceRefusal(org, usedThisMonth, 'This send');
    if (beyond) throw beyond;
  }
}

/**
 * The usage periods a send at `now` counts in, each with its limit: the UTC day (the daily limit) and the
 * monthly pool (its absolute ceiling, three times the allowance), with when each resets.
 */
function usagePeriods(org: Organization, now: Date) {
  return {
    day: { ...utcDay(now), limit: org.dailyLimitSegments },
    month: { ...utcMonth(now), limit: MONTHLY_ABSOLUTE_MULTIPLE * org.monthlyAllowanceSegments },
  };
}

/**
 * What to throw for `error`, thrown while the limits were checked: a refusal as it is; a database failure that
 * means the limit could not be checked now, 503 (TRIAL_LIMIT_REACHED for a trial) with a short Retry-After;
 * anything else as it is.
 */
export function uncheckedRefusal(error: unknown, trial: boolean): unknown {
  if (error instanceof ApiError || !isUncheckable(error)) return error;
  return new ApiError(503, 'The send limit could not be checked right now; retry shortly', {
    ...(trial ? { code: 'TRIAL_LIMIT_REACHED' } : {}),
    headers: { 'Retry-After': String(UNCHECKED_RETRY_AFTER_SECONDS) },
  });
}

/** Whether `error` is the plain send's statement counting one usage period and not the other. */
export function isPlainSendUncounted(error: unknown): boolean {
  return (error as { code?: unknown })?.code === PLAIN_SEND_UNCOUNTED;
}

/**
 * Checks 6 and 7 for `what` ("This send", "The campaign") bringing the month's use to `usedThisMonth` segments:
 * beyond the included allowance, what the account state allows (organizations/account-policy.ts).
 */
export function beyondAllowanceRefusal(
  org: Organization,
  usedThisMonth: number,
  what: string,
): ApiError | undefined {
  if (usedThisMonth <= org.monthlyAllowanceSegments) return undefined;
  return accountPolicyRefusal(org, 'send_beyond_allowance', {
    what,
    allowance: org.monthlyAllowanceSegments,
  });
}
