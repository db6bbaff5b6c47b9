// The SQL of calls and of each region's PBX capacity. Every method takes the Queryable to run on.

import { assignments } from '../../platform/db/assignments.ts';
import type { Queryable } from '../../platform/db/index.ts';
import type { ListQuery } from '../../platform/pagination.ts';
import { hourIndexSql } from '../../platform/time-window.ts';

export const CALL_STATUSES = [
  'queued',
  'ringing',
  'in_progress',
  'completed',
  'busy',
  'no_answer',
  'failed',
  'canceled',
] as const;
export type CallStatus = (typeof CALL_STATUSES)[number];
export type CallDirection = 'inbound' | 'outbound' | 'internal';

export interface CallRow {
  id: string;
  organization_id: string;
  region: string;
  direction: CallDirection;
  from_number: string;
  to_number: string;
  status: CallStatus;
  started_at: Date;
  answered_at: Date | null;
  ended_at: Date | null;
  duration_seconds: number;
  hangup_cause: string | null;
  extension_id: string | null;
  agent_id: string | null;
  recording_id: string | null;
  voicemail_id: string | null;
  record: boolean;
  lease_expires_at: Date | null;
  /** Where the call was last transferred (migrations/040_call_transfers.sql). */
  transferred_to_type: 'extension' | 'ring_group' | 'number' | 'sip' | null;
  transferred_to: string | null;
  transferred_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface NewCall {
  id: string;
  organizationId: string;
  region: string;
  direction: CallDirection;
  from: string;
  to: string;
  extensionId: string | null;
  record: boolean;
  /** Null for a call that ends as it arrives (a refused inbound call holds no place). */
  leaseExpiresAt: Date | null;
  /** Set for a call refused on arrival: it is recorded already ended. */
  ended?: { status: CallStatus; cause: string };
  now: Date;
}

/** The columns a step of a call changes. */
export interface CallChange {
  status?: CallStatus;
  answered_at?: Date;
  ended_at?: Date;
  duration_seconds?: number;
  hangup_cause?: string;
  extension_id?: string;
  agent_id?: string;
  /** Recorded from now on (an AI agent whose calls are recorded). */
  record?: boolean;
  recording_id?: string;
  voicemail_id?: string;
  lease_expires_at?: Date | null;
  transferred_to_type?: 'extension' | 'ring_group' | 'number' | 'sip';
  transferred_to?: string;
  transferred_at?: Date;
}

export class CallStore {
  /** Calls not ended yet, by status (metrics; through the partial index of live calls). */
  async liveByStatus(db: Queryable): Promise<{ status: string; calls: number }[]> {
    return db.query(
      `SELECT status, count(*)::int AS calls FROM calls WHERE ended_at IS NULL GROUP BY status`,
    );
  }

  async insert(db: Queryable, call: NewCall): Promise<CallRow> {
    const [row] = await db.query<CallRow>(
      `INSERT INTO calls (id, organization_id, region, direction, from_number, to_number, status, started_at,
                          ended_at, hangup_cause, extension_id, record, lease_expires_at, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, COALESCE($7, 'queued'), $8, $9, $10, $11, $12, $13, $8, $8)
       RETURNING *`,
      [
        call.id,
        call.organizationId,
        call.region,
        call.direction,
        call.from,
        call.to,
        call.ended?.status ?? null,
        call.now,
        call.ended ? call.now : null,
        call.ended?.cause ?? null,
        call.extensionId,
        call.record,
        call.leaseExpiresAt,
      ],
    );
    return row!;
  }

  async find(db: Queryable, organizationId: string, id: string): Promise<CallRow | undefined> {
    const [row] = await db.query<CallRow>('SELECT * FROM calls WHERE id = $1 AND organization_id = $2', [
      id,
      organizationId,
    ]);
    return row;
  }

  /** Any organization's call: the operator's test controls name calls by id alone. */
  async findAny(db: Queryable, id: string): Promise<CallRow | undefined> {
    const [row] = await db.query<CallRow>('SELECT * FROM calls WHERE id = $1', [id]);
    return row;
  }

  /** The list's SQL: every call of the organization, or those created since `since`, or only live ones. */
  listQuery(
    organizationId: string,
    filters: { since?: Date | null; live?: boolean } = {},
  ): Pick<ListQuery<CallRow, unknown>, 'select' | 'from' | 'where' | 'params'> {
    const params: unknown[] = [organizationId];
    const where = ['organization_id = $1'];
    if (filters.since) where.push(`created_at >= $${params.push(filters.since)}`);
    // calls_org_live (a partial index of the calls not yet ended) keeps this a short scan.
    if (filters.live) where.push('ended_at IS NULL');
    return { select: '*', from: 'calls', where: where.join(' AND '), params };
  }

  /** Calls created in [since, until) by hour from `since` (hourIndexSql), direction and whether answered. */
  async countsByHour(
    db: Queryable,
    organizationId: string,
    since: Date,
    until: Date,
  ): Promise<{ hour: number; direction: CallDirection; answered: boolean; n: number }[]> {
    return db.query(
      `SELECT ${hourIndexSql('created_at', '$2')} AS hour, direction, answered_at IS NOT NULL AS answered,
              count(*)::int AS n
         FROM calls WHERE organization_id = $1 AND created_at >= $2 AND created_at < $3
        GROUP BY 1, direction, 3`,
      [organizationId, since, until],
    );
  }

  /**
   * Applies a step to a call that has not ended (a step that arrives after the end, such as a late ring
   * timeout, changes nothing: undefined).
   */
  async change(db: Queryable, id: string, change: CallChange, now: Date): Promise<CallRow | undefined> {
    const params: unknown[] = [id, now];
    const sets = ['updated_at = $2', ...assignments({ ...change }, params)];
    const [row] = await db.query<CallRow>(
      `UPDATE calls SET ${sets.join(', ')} WHERE id = $1 AND ended_at IS NULL RETURNING *`,
      params,
    );
    return row;
  }

  /** Asks whichever process holds the call to hang it up (each listens on `channel`). */
  async askToHangUp(db: Queryable, channel: string, id: string): Promise<void> {
    await db.query('SELECT pg_notify($1, $2)', [channel, id]);
  }

  /** Extends the capacity leases of live calls this process holds. */
  async renewLeases(db: Queryable, ids: string[], until: Date): Promise<void> {
    await db.query('UPDATE calls SET lease_expires_at = $2 WHERE id = ANY($1::text[]) AND ended_at IS NULL', [
      ids,
      until,
    ]);
  }

  // Region capacity

  /** The region's capacity, its row locked: admissions to one region take turns, so none overshoots. */
  async lockRegion(db: Queryable, region: string): Promise<number> {
    const [row] = await db.query<{ max_concurrent_calls: number }>(
      'SELECT max_concurrent_calls FROM voice_regions WHERE region = $1 FOR UPDATE',
      [region],
    );
    return row?.max_concurrent_calls ?? 0;
  }

  /** Live calls of the region whose lease ran out: their PBX stopped renewing (it died). */
  async expiredLeases(db: Queryable, region: string, now: Date): Promise<CallRow[]> {
    return db.query<CallRow>(
      'SELECT * FROM calls WHERE region = $1 AND ended_at IS NULL AND lease_expires_at <= $2',
      [region, now],
    );
  }

  /** Calls holding a place in the region. */
  async countLive(db: Queryable, region: string): Promise<number> {
    const [row] = await db.query<{ count: number }>(
      'SELECT count(*)::int AS count FROM calls WHERE region = $1 AND ended_at IS NULL',
      [region],
    );
    return row?.count ?? 0;
  }

  async regions(db: Queryable): Promise<{ region: string; max_concurrent_calls: number; live: number }[]> {
    return db.query(
      `SELECT r.region, r.max_concurrent_calls,
              (SELECT count(*)::int FROM calls c WHERE c.region = r.region AND c.ended_at IS NULL) AS live
         FROM voice_regions r ORDER BY r.region`,
    );
  }

  async setRegion(db: Queryable, region: string, maxConcurrentCalls: number, now: Date): Promise<void> {
    await db.query('UPDATE voice_regions SET max_concurrent_calls = $2, updated_at = $3 WHERE region = $1', [
      region,
      maxConcurrentCalls,
      now,
    ]);
  }
}
