// The SQL of the queue runtime: callers' waits (queue_entries, migrations/038_queue_entries.sql) and what the
// members' states are read from (entries, calls, SIP registrations). Every method takes the Queryable to run on.
import type { Queryable } from '../../../platform/db/index.ts';
import { type EntryEvent, type EntryState, entryMove } from './entry-states.ts';

export interface EntryRow {
  id: string;
  queue_id: string;
  organization_id: string;
  call_id: string;
  from_number: string;
  state: EntryState;
  offered_to: string[];
  answered_by: string | null;
  held_by: string;
  joined_at: Date;
  left_at: Date | null;
  updated_at: Date;
}

/** A waiting caller as GET /queues/{id}/live lists it. */
export interface WaitingRow {
  id: string;
  call_id: string;
  from_number: string;
  state: EntryState;
  held_by: string;
  joined_at: Date;
  position: number;
}

/** What a member's state is derived from (member-states.ts). */
export interface MemberFacts {
  extension_id: string;
  /** Offered a waiting caller of any queue right now. */
  ringing: boolean;
  /** Talking: a queue call they answered, or a call of theirs in progress. */
  on_call: boolean;
  /** The end of their wrap-up after their latest queue call, if it ended lately. */
  wrap_up_until: Date | null;
  /** A phone of theirs is registered (SIP). */
  registered: boolean;
}

/** Callers still in a queue: waiting or ringing a member, their call not ended (a lost call is not waiting). */
const IN_QUEUE = `e.state IN ('waiting', 'offered')
  AND EXISTS (SELECT 1 FROM calls c WHERE c.id = e.call_id AND c.ended_at IS NULL)`;

export class EntryStore {
  async insert(
    db: Queryable,
    row: Pick<EntryRow, 'id' | 'queue_id' | 'organization_id' | 'call_id' | 'from_number' | 'held_by'> & {
      now: Date;
    },
  ): Promise<void> {
    await db.query(
      `INSERT INTO queue_entries (id, queue_id, organization_id, call_id, from_number, state, held_by, joined_at,
                                  updated_at)
       VALUES ($1, $2, $3, $4, $5, 'waiting', $6, $7, $7)`,
      [row.id, row.queue_id, row.organization_id, row.call_id, row.from_number, row.held_by, row.now],
    );
  }

  /**
   * Moves the entry by `event` (entry-states.ts) with the columns given, only from a state the table lets the
   * event leave; undefined (nothing written) when the entry is in none of them.
   */
  async move(
    db: Queryable,
    id: string,
    event: EntryEvent,
    change: { offered_to?: string[]; answered_by?: string; left_at?: Date },
    now: Date,
  ): Promise<EntryRow | undefined> {
    const { from, to } = entryMove(event);
    const [row] = await db.query<EntryRow>(
      `UPDATE queue_entries
          SET state = $3, offered_to = COALESCE($4::text[], offered_to), answered_by = COALESCE($5, answered_by),
              left_at = COALESCE($6, left_at), updated_at = $7
        WHERE id = $1 AND state = ANY ($2::text[])
        RETURNING *`,
      [id, from, to, change.offered_to ?? null, change.answered_by ?? null, change.left_at ?? null, now],
    );
    return row;
  }

  /** Holds the queue's row until the transaction ends: one dispatcher at a time offers its callers. */
  async lockQueue(db: Queryable, queueId: string): Promise<boolean> {
    const rows = await db.query('SELECT id FROM queues WHERE id = $1 FOR UPDATE', [queueId]);
    return rows.length > 0;
  }

  /** The queue's callers in arrival order, with their places (1 first). */
  waiting(db: Queryable, queueId: string): Promise<WaitingRow[]> {
    return db.query<WaitingRow>(
      `SELECT e.id, e.call_id, e.from_number, e.state, e.held_by, e.joined_at,
              (row_number() OVER (ORDER BY e.joined_at, e.id))::int AS position
         FROM queue_entries e
        WHERE e.queue_id = $1 AND ${IN_QUEUE}
        ORDER BY e.joined_at, e.id`,
      [queueId],
    );
  }

  /** The caller's place in the queue (1 first); 0 when they are not in it. */
  async position(db: Queryable, entryId: string): Promise<number> {
    const [row] = await db.query<{ position: number }>(
      `SELECT count(*)::int AS position
         FROM queue_entries me
         JOIN queue_entries e ON e.queue_id = me.queue_id AND (e.joined_at, e.id) <= (me.joined_at, me.id)
        WHERE me.id = $1 AND me.state IN ('waiting', 'offered') AND ${IN_QUEUE}`,
      [entryId],
    );
    return row?.position ?? 0;
  }

  /** What each member's state is derived from, in the queue's member order. */
  memberFacts(db: Queryable, organizationId: string, queueId: string, now: Date): Promise<MemberFacts[]> {
    return db.query<MemberFacts>(
      `SELECT m.extension_id,
              EXISTS (SELECT 1 FROM queue_entries e
                       WHERE e.organization_id = $1 AND m.extension_id = ANY (e.offered_to) AND ${IN_QUEUE}
                         AND e.state = 'offered') AS ringing,
              (EXISTS (SELECT 1 FROM queue_entries e JOIN calls c ON c.id = e.call_id
                        WHERE e.organization_id = $1 AND e.state = 'answered' AND e.answered_by = m.extension_id
                          AND c.ended_at IS NULL)
               OR EXISTS (SELECT 1 FROM calls c
                           WHERE c.organization_id = $1 AND c.extension_id = m.extension_id
                             AND c.ended_at IS NULL AND c.status = 'in_progress'
                             AND NOT EXISTS (SELECT 1 FROM queue_entries e WHERE e.call_id = c.id))
               OR EXISTS (SELECT 1 FROM calls c
                           WHERE c.organization_id = $1 AND c.direction = 'internal' AND c.to_number = x.extension
                             AND c.ended_at IS NULL AND c.status = 'in_progress')) AS on_call,
              (SELECT max(c.ended_at + q.wrap_up_seconds * interval '1 second')
                 FROM queue_entries e JOIN calls c ON c.id = e.call_id JOIN queues q ON q.id = e.queue_id
                WHERE e.organization_id = $1 AND e.state = 'answered' AND e.answered_by = m.extension_id
                  AND c.ended_at > $3::timestamptz - interval '600 seconds') AS wrap_up_until,
              EXISTS (SELECT 1 FROM sip_registrations r
                       WHERE r.extension_id = m.extension_id AND r.expires_at > $3) AS registered
         FROM queue_members m JOIN extensions x ON x.id = m.extension_id
        WHERE m.queue_id = $2
        ORDER BY m.position`,
      [organizationId, queueId, now],
    );
  }

  /** How the queue's waits that ended in [since, now] ended (queue_entries_left keeps it a range scan). */
  async outcomesSince(
    db: Queryable,
    queueId: string,
    since: Date,
  ): Promise<{ answered: number; abandoned: number; timedOut: number }> {
    const [row] = await db.query<{ answered: number; abandoned: number; timedOut: number }>(
      `SELECT count(*) FILTER (WHERE state = 'answered')::int AS answered,
              count(*) FILTER (WHERE state = 'abandoned')::int AS abandoned,
              count(*) FILTER (WHERE state = 'timed_out')::int AS "timedOut"
         FROM queue_entries WHERE queue_id = $1 AND left_at >= $2`,
      [queueId, since],
    );
    return row ?? { answered: 0, abandoned: 0, timedOut: 0 };
  }

  /** The member who answered the queue's latest answered caller (round robin starts after them). */
  async lastAnswered(db: Queryable, queueId: string): Promise<string | null> {
    const [row] = await db.query<{ answered_by: string }>(
      `SELECT answered_by FROM queue_entries WHERE queue_id = $1 AND state = 'answered'
        ORDER BY left_at DESC, id DESC LIMIT 1`,
      [queueId],
    );
    return row?.answered_by ?? null;
  }

  /** The mean wait, in seconds, of the queue's last `count` answered callers since `since`; null without any. */
  async recentWait(db: Queryable, queueId: string, since: Date, count: number): Promise<number | null> {
    const [row] = await db.query<{ seconds: number | null }>(
      `SELECT avg(extract(epoch FROM (left_at - joined_at)))::float8 AS seconds
         FROM (SELECT joined_at, left_at FROM queue_entries
                WHERE queue_id = $1 AND state = 'answered' AND left_at >= $2
                ORDER BY left_at DESC LIMIT $3) recent`,
      [queueId, since, count],
    );
    return row?.seconds ?? null;
  }
}
