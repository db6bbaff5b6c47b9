// The SQL of agent calls: one row per call an agent took or placed, its transcript appended turn by turn.
import type { Queryable } from '../../platform/db/index.ts';
import type { ListQuery } from '../../platform/pagination.ts';
import type { TurnLatency } from './turn-pipeline.ts';

export interface AgentCallRow {
  id: string;
  organization_id: string;
  agent_id: string;
  call_id: string;
  direction: 'inbound' | 'outbound';
  from_number: string;
  to_number: string;
  status: 'queued' | 'ringing' | 'in_progress' | 'completed' | 'failed';
  outcome: 'completed' | 'transferred' | 'ended_by_agent' | 'no_answer' | 'failed' | null;
  transcript: {
    role: 'agent' | 'caller';
    text: string;
    at: string;
    latency?: TurnLatency;
    interrupted?: boolean;
    digits?: string;
  }[];
  answered_by: 'human' | 'machine' | 'unknown' | null;
  summary: string | null;
  duration_seconds: number | null;
  recording_id: string | null;
  started_at: Date;
  ended_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export class AgentCallStore {
  async insert(
    db: Queryable,
    row: Pick<
      AgentCallRow,
      'id' | 'organization_id' | 'agent_id' | 'call_id' | 'direction' | 'from_number' | 'to_number' | 'status'
    > & { now: Date },
  ): Promise<AgentCallRow> {
    const [inserted] = await db.query<AgentCallRow>(
      `INSERT INTO agent_calls (id, organization_id, agent_id, call_id, direction, from_number, to_number, status,
                                started_at, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $9)
       ON CONFLICT (call_id) DO UPDATE SET updated_at = agent_calls.updated_at
       RETURNING *`,
      [
        row.id,
        row.organization_id,
        row.agent_id,
        row.call_id,
        row.direction,
        row.from_number,
        row.to_number,
        row.status,
        row.now,
      ],
    );
    return inserted!;
  }

  async byCall(db: Queryable, callId: string): Promise<AgentCallRow | undefined> {
    const [row] = await db.query<AgentCallRow>('SELECT * FROM agent_calls WHERE call_id = $1', [callId]);
    return row;
  }

  async find(db: Queryable, organizationId: string, id: string): Promise<AgentCallRow | undefined> {
    const [row] = await db.query<AgentCallRow>(
      'SELECT * FROM agent_calls WHERE id = $1 AND organization_id = $2',
      [id, organizationId],
    );
    return row;
  }

  /**
   * Appends a turn to the transcript (and marks the call in progress); answers whose call it is and the
   * turn's place in the transcript, for its event.
   */
  async addTurn(db: Queryable, callId: string, turn: AgentCallRow['transcript'][number], now: Date) {
    const [row] = await db.query<
      Pick<AgentCallRow, 'id' | 'organization_id' | 'agent_id'> & { index: number }
    >(
      `UPDATE agent_calls SET transcript = transcript || $2::jsonb, status = 'in_progress', updated_at = $3
       WHERE call_id = $1
       RETURNING id, organization_id, agent_id, jsonb_array_length(transcript) - 1 AS index`,
      [callId, JSON.stringify([turn]), now],
    );
    return row;
  }

  /** Who answered an outbound call that listened for an answering machine. */
  async setAnsweredBy(
    db: Queryable,
    callId: string,
    answeredBy: NonNullable<AgentCallRow['answered_by']>,
    now: Date,
  ) {
    await db.query('UPDATE agent_calls SET answered_by = $2, updated_at = $3 WHERE call_id = $1', [
      callId,
      answeredBy,
      now,
    ]);
  }

  /** Moves a live agent call to `status` (only from one of `from`, when given). */
  async setStatus(
    db: Queryable,
    callId: string,
    status: AgentCallRow['status'],
    now: Date,
    from?: AgentCallRow['status'][],
  ) {
    const [row] = await db.query<AgentCallRow>(
      `UPDATE agent_calls SET status = $2, updated_at = $3
       WHERE call_id = $1 AND ended_at IS NULL AND ($4::text[] IS NULL OR status = ANY($4::text[])) RETURNING *`,
      [callId, status, now, from ?? null],
    );
    return row;
  }

  async end(
    db: Queryable,
    callId: string,
    end: Pick<AgentCallRow, 'status' | 'outcome' | 'summary' | 'duration_seconds' | 'recording_id'> & {
      ended_at: Date;
    },
  ): Promise<AgentCallRow | undefined> {
    const [row] = await db.query<AgentCallRow>(
      `UPDATE agent_calls SET status = $2, outcome = $3, summary = $4, duration_seconds = $5, recording_id = $6,
                              ended_at = $7, updated_at = $7
       WHERE call_id = $1 AND ended_at IS NULL RETURNING *`,
      [callId, end.status, end.outcome, end.summary, end.duration_seconds, end.recording_id, end.ended_at],
    );
    return row;
  }

  /** The list's SQL: the organization's agent calls, or the one on `callId` (its unique index). */
  listQuery(
    organizationId: string,
    callId?: string,
  ): Pick<ListQuery<AgentCallRow, unknown>, 'select' | 'from' | 'where' | 'params'> {
    if (callId === undefined)
      return { select: '*', from: 'agent_calls', where: 'organization_id = $1', params: [organizationId] };
    return {
      select: '*',
      from: 'agent_calls',
      where: 'organization_id = $1 AND call_id = $2',
      params: [organizationId, callId],
    };
  }
}
