// The send limits' SQL (limits.ts says the order of the checks and what each refusal says): the account lock,
// the trial and new-account counters, the day's and month's usage, and the one-statement gate of a plain send.
import { placedAfter, type SqlFragment } from '../../platform/db/fragment.ts';
import type { Queryable } from '../../platform/db/index.ts';

/** The session's lock_timeout and statement_timeout, as current_setting() gives them. */
export interface WaitSettings {
  lockTimeout: string;
  statementTimeout: string;
}

/** A usage period, from its start, and the most segments it may count. */
export interface UsagePeriod {
  start: Date;
  limit: number;
}

/**
 * The upsert that takes an organization's account row, the send lock (creating the row on its first send), from
 * `source`, a CTE of one row: a no-op DO UPDATE takes the row lock, held to the end of the transaction.
 */
function accountLock(source: string, id: string, now: string): string {
  return `INSERT INTO send_limit_accounts (organization_id, updated_at)
         SELECT ${id}, ${now} FROM ${source}
         ON CONFLICT (organization_id) DO UPDATE SET updated_at = send_limit_accounts.updated_at
         RETURNING organization_id`;
}

/**
 * The guarded upsert of the day's and the month's usage (addUsage says what it counts), each period counted
 * only while that keeps it within its limit; `RETURNING period, segments` for each period counted. Each
 * argument is a placeholder; `day` and `month` are [start, limit]; `after`, a CTE the rows are read from.
 */
function usageCount(p: {
  id: string;
  messages: string;
  segments: string;
  day: [string, string];
  month: [string, string];
  after?: string;
}): string {
  return `INSERT INTO send_usage (organization_id, period, period_start, messages, segments)
         SELECT ${p.id}, wanted.period, wanted.period_start, ${p.messages}::int, ${p.segments}::int
           FROM ${p.after ? `${p.after} CROSS JOIN ` : ''}(VALUES ('day', ${p.day[0]}::timestamptz, ${p.day[1]}::bigint),
                        ('month', ${p.month[0]}::timestamptz, ${p.month[1]}::bigint))
                AS wanted(period, period_start, segment_limit)
          WHERE ${p.segments}::int <= wanted.segment_limit
         ON CONFLICT (organization_id, period, period_start) DO UPDATE
           SET segments = send_usage.segments + EXCLUDED.segments, messages = send_usage.messages + EXCLUDED.messages
           WHERE send_usage.segments + EXCLUDED.segments
                 <= CASE send_usage.period WHEN 'day' THEN ${p.day[1]}::bigint ELSE ${p.month[1]}::bigint END
         RETURNING period, segments`;
}

/**
 * What the one statement of a plain send checks (SendLimits.plainTerms makes them from the organization as the
 * request knew it): the organization's row must still say `standing`, and its first 72 hours must be over
 * (created at or before `createdBy`).
 */
export interface PlainSendTerms {
  organizationId: string;
  now: Date;
  lockMs: number;
  segments: number;
  standing: {
    subscriptionState: string;
    cardVerified: boolean;
    suspended: boolean;
    monthlyAllowanceSegments: number;
    dailyLimitSegments: number;
  };
  createdBy: Date;
  day: UsagePeriod;
  /** The month's limit: the ceiling, or the allowance when the organization may not go beyond it. */
  month: UsagePeriod;
}

/** SQLSTATE of the plain send's statement when it counted one usage period and not the other (migration 054). */
export const PLAIN_SEND_UNCOUNTED = 'CPS01';

export class SendLimitStore {
  /**
   * The limit checks of a plain send as CTEs for the statement that writes it, the last of them `plain_send`:
   * one row when the send is within every limit and was counted, none when it was not (then nothing was
   * written, and the full checks judge it). In order: the account lock, bounded by `lockMs`, as
   * lockAccount takes it; the organization as the terms expect it, the recipient not opted out (`optedOut`,
   * one row with `recipient_opted_out`) and both usage periods with room, read in the statement's snapshot;
   * then both periods counted with their guards, as addUsage counts them. The snapshot can be older than the
   * lock (taken before its wait), so a period may have filled since: the guards then count one period or
   * none, and one alone makes the statement fail (PLAIN_SEND_UNCOUNTED), which undoes all of it. The lock
   * bound ends with the count (`plain_send` sets the session's own back, as addUsage does), so the writes
   * that read from it, and wait on other sends' rows, are not cut short by it.
   */
  plainSendGate(terms: PlainSendTerms, optedOut: SqlFragment): SqlFragment {
    const { standing } = terms;
    return {
      text: `plain_bounds AS (
         SELECT session.lock_timeout, set_config('lock_timeout', $3, true)
           FROM (SELECT current_setting('lock_timeout') AS lock_timeout OFFSET 0) AS session
       ),
       plain_account AS (${accountLock('plain_bounds', '$1', '$2::timestamptz')}),
       plain_standing AS (
         SELECT 1 FROM plain_account JOIN organizations ON organizations.id = plain_account.organization_id
          WHERE organizations.subscription_state = $4::text AND organizations.card_verified = $5::boolean
            AND organizations.suspended = $6::boolean AND organizations.monthly_allowance_segments = $7::int
            AND organizations.daily_limit_segments = $8::int AND organizations.created_at <= $9::timestamptz
            AND NOT (SELECT recipient_opted_out FROM (${placedAfter(optedOut, 14)}) AS recipient)
            AND NOT EXISTS (
              SELECT 1 FROM send_usage
               WHERE organization_id = $1
                 AND ((period = 'day' AND period_start = $11::timestamptz AND segments + $10::int > $12::bigint)
                   OR (period = 'month' AND period_start = $13::timestamptz AND segments + $10::int > $14::bigint)))
       ),
       plain_counted AS (
         ${usageCount({ id: '$1', messages: '1', segments: '$10', day: ['$11', '$12'], month: ['$13', '$14'], after: 'plain_standing' })}
       ),
       plain_send AS (
         SELECT judged.counted, set_config('lock_timeout', plain_bounds.lock_timeout, true)
           FROM (SELECT plain_send_counted(count(*)::int) AS counted FROM plain_counted) AS judged
          CROSS JOIN plain_bounds
          WHERE judged.counted
       )`,
      params: [
        terms.organizationId,
        terms.now,
        `${terms.lockMs}ms`,
        standing.subscriptionState,
        standing.cardVerified,
        standing.suspended,
        standing.monthlyAllowanceSegments,
        standing.dailyLimitSegments,
        terms.createdBy,
        terms.segments,
        terms.day.start,
        terms.day.limit,
        terms.month.start,
        terms.month.limit,
        ...optedOut.params,
      ],
    };
  }

  /**
   * Takes the organization's account row for the rest of `tx`, creating it on its first send, waiting at most
   * `lockMs` for another send of the organization to release it, and returns the organization's row (as
   * `to_jsonb(organizations)`, for OrganizationService.fromRecord) and the session's own wait settings. The
   * statements after it are bounded too, until addUsage restores those settings.
   *
   * One statement. The session's settings are read in a subquery that OFFSET 0 keeps from being merged into
   * the one that sets the bounds, so they are read before they are changed; the bounds are set (local to
   * `tx`) in the upsert's source, before the upsert waits for the row lock, which a no-op DO UPDATE takes.
   *
   * The organization is read from the statement's snapshot, which READ COMMITTED takes when the statement
   * starts: before any wait for the lock, so a change to the organization committed during that wait is not
   * seen. That is no weaker than reading it after the lock: changes to an organization do not take the
   * account lock, so a change and a send running at the same time were never ordered (one committed just
   * after a read under the lock was missed as well); a change committed before the send's statement began
   * applies. The lock serializes the counters, and each counter is read by a later statement, with a fresh
   * snapshot taken while the lock is held.
   */
  async lockAccount(
    tx: Queryable,
    organizationId: string,
    now: Date,
    lockMs: number,
    alongside?: SqlFragment,
  ): Promise<{ organization: unknown; sessionWaits: WaitSettings; alongside?: Record<string, unknown> }> {
    // `alongside`: another read of exactly one row, in this statement's snapshot, its columns returned beside
    // ours (whose names are chosen not to meet a table's), so a send reads its recipient in this round trip.
    const [row] = await tx.query<
      {
        locked_organization: unknown;
        session_lock_timeout: string;
        session_statement_timeout: string;
      } & Record<string, unknown>
    >(
      `WITH bounded AS (
         SELECT session.lock_timeout, session.statement_timeout,
                set_config('lock_timeout', $3, true), set_config('statement_timeout', $4, true)
           FROM (SELECT current_setting('lock_timeout') AS lock_timeout,
                        current_setting('statement_timeout') AS statement_timeout
                 OFFSET 0) AS session
       ), locked AS (
         ${accountLock('bounded', '$1', '$2')}
       )
       SELECT to_jsonb(organizations) AS locked_organization, bounded.lock_timeout AS session_lock_timeout,
              bounded.statement_timeout AS session_statement_timeout${alongside ? ', alongside.*' : ''}
         FROM locked
         LEFT JOIN organizations ON organizations.id = locked.organization_id
         CROSS JOIN bounded
         ${alongside ? `CROSS JOIN (${placedAfter(alongside, 4)}) AS alongside` : ''}`,
      [organizationId, now, `${lockMs}ms`, `${lockMs + 2000}ms`, ...(alongside?.params ?? [])],
    );
    // The upsert always returns its one row (DO UPDATE has no condition); the organization's may be null.
    const { locked_organization, session_lock_timeout, session_statement_timeout, ...rest } = row!;
    return {
      organization: locked_organization,
      sessionWaits: { lockTimeout: session_lock_timeout, statementTimeout: session_statement_timeout },
      ...(alongside && { alongside: rest }),
    };
  }

  /** Counts `messages` more trial messages unless that passes `limit`; false when it would. */
  countTrialMessages(
    tx: Queryable,
    organizationId: string,
    messages: number,
    limit: number,
    now: Date,
  ): Promise<boolean> {
    return this.countWithin(tx, 'trial_messages', organizationId, messages, limit, now);
  }

  /**
   * Outbound messages the organization itself sent after `since`; automatic replies are not its own. A
   * scheduled message counts from when it was due (send_at), once it has left the schedule: still scheduled,
   * or cancelled there (no error code), it was never sent.
   */
  async countRecentSends(tx: Queryable, organizationId: string, since: Date): Promise<number> {
    const [{ recent }] = await tx.query<{ recent: number }>(
      `SELECT (SELECT count(*) FROM messages
                WHERE organization_id = $1 AND created_at > $2 AND direction = 'outbound'
                  AND origin <> 'auto_reply' AND send_at IS NULL)::int
            + (SELECT count(*) FROM messages
                WHERE organization_id = $1 AND send_at > $2 AND send_at IS NOT NULL
                  AND status <> 'scheduled' AND NOT (status = 'cancelled' AND error_code IS NULL))::int
              AS recent`,
      [organizationId, since],
    );
    return recent;
  }

  /** Counts `segments` towards the new-account allowance unless that passes `limit`; false when it would. */
  countNewAccountSegments(
    tx: Queryable,
    organizationId: string,
    segments: number,
    limit: number,
    now: Date,
  ): Promise<boolean> {
    return this.countWithin(tx, 'first_72h_segments', organizationId, segments, limit, now);
  }

  /** Adds `by` to the account's `counter` unless that passes `limit` (a guarded update); false when it would. */
  private async countWithin(
    tx: Queryable,
    counter: 'trial_messages' | 'first_72h_segments',
    organizationId: string,
    by: number,
    limit: number,
    now: Date,
  ): Promise<boolean> {
    const counted = await tx.query(
      `UPDATE send_limit_accounts SET ${counter} = ${counter} + $2, updated_at = $4
        WHERE organization_id = $1 AND ${counter} + $2 <= $3 RETURNING 1`,
      [organizationId, by, limit, now],
    );
    return counted.length > 0;
  }

  /**
   * Counts `usage` (messages and their segments) in the organization's usage of the day and of the month, each only
   * while that keeps it within its `limit` (a guarded insert and update, so no counter ever passes its limit,
   * even without the account lock), in one statement. Returns each period's new total, or undefined for a
   * period that was not counted because it would have passed its limit.
   *
   * This is the last statement of the limit checks, so it also sets the wait settings back to `restore` (the
   * session's own, from lockAccount), so the writes after the checks are not cut short by the bounds. They
   * are set only after both periods were counted (the aggregate reads every row the upsert returns first),
   * so the upsert's own waits stay bounded; a changed statement_timeout takes effect from the next statement.
   */
  async addUsage(
    tx: Queryable,
    organizationId: string,
    usage: { messages: number; segments: number },
    periods: { day: UsagePeriod; month: UsagePeriod },
    restore: WaitSettings,
  ): Promise<{ day?: number; month?: number }> {
    const [row] = await tx.query<{ day: number | null; month: number | null }>(
      `WITH counted AS (
         ${usageCount({ id: '$1', messages: '$9', segments: '$2', day: ['$3', '$4'], month: ['$5', '$6'] })}
       )
       SELECT totals.day, totals.month,
              set_config('lock_timeout', $7, true), set_config('statement_timeout', $8, true)
         FROM (SELECT max(segments) FILTER (WHERE period = 'day') AS day,
                      max(segments) FILTER (WHERE period = 'month') AS month
                 FROM counted) AS totals`,
      [
        organizationId,
        usage.segments,
        periods.day.start,
        periods.day.limit,
        periods.month.start,
        periods.month.limit,
        restore.lockTimeout,
        restore.statementTimeout,
        usage.messages,
      ],
    );
    return { day: row?.day ?? undefined, month: row?.month ?? undefined };
  }
}
