// The SQL of agents and the knowledge bases they answer from. Every method takes the Queryable to run on.

import { assignments } from '../../platform/db/assignments.ts';
import type { Queryable } from '../../platform/db/index.ts';
import type { ListQuery } from '../../platform/pagination.ts';
import type { AgentKeyMap, AgentTool, MachineDetectionSettings } from './schemas.ts';

export interface AgentRow {
  id: string;
  organization_id: string;
  name: string;
  instructions: string;
  first_message: string;
  voice: string;
  language: string;
  end_call_phrases: string[];
  transfer_to: string | null;
  max_duration_seconds: number;
  record_calls: boolean;
  barge_in: boolean;
  tools: AgentTool[];
  keys: AgentKeyMap;
  machine_detection: MachineDetectionSettings | null;
  transfer_mode: 'cold' | 'warm';
  knowledge_base_ids: string[];
  created_at: Date;
  updated_at: Date;
}

export type AgentColumns = Partial<
  Pick<
    AgentRow,
    | 'name'
    | 'instructions'
    | 'first_message'
    | 'voice'
    | 'language'
    | 'end_call_phrases'
    | 'transfer_to'
    | 'max_duration_seconds'
    | 'record_calls'
    | 'barge_in'
    | 'tools'
    | 'keys'
    | 'machine_detection'
    | 'transfer_mode'
  >
>;

const JSON_COLUMNS = { end_call_phrases: 'jsonb', tools: 'jsonb', keys: 'jsonb', machine_detection: 'jsonb' };
/** An agent with its bases in the order given. */
const AGENT_COLUMNS = `a.*, COALESCE((SELECT array_agg(akb.knowledge_base_id ORDER BY akb.position)
  FROM agent_knowledge_bases akb WHERE akb.agent_id = a.id), ARRAY[]::text[]) AS knowledge_base_ids`;

export class AgentStore {
  async insert(
    db: Queryable,
    row: Required<AgentColumns> & { id: string; organization_id: string; now: Date },
  ): Promise<void> {
    await db.query(
      `INSERT INTO agents (id, organization_id, name, instructions, first_message, voice, language, end_call_phrases,
                           transfer_to, max_duration_seconds, record_calls, tools, barge_in, keys,
                           machine_detection, transfer_mode, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11, $12::jsonb, $14, $15::jsonb, $16::jsonb, $17,
               $13, $13)`,
      [
        row.id,
        row.organization_id,
        row.name,
        row.instructions,
        row.first_message,
        row.voice,
        row.language,
        JSON.stringify(row.end_call_phrases),
        row.transfer_to,
        row.max_duration_seconds,
        row.record_calls,
        JSON.stringify(row.tools),
        row.now,
        row.barge_in,
        JSON.stringify(row.keys),
        row.machine_detection && JSON.stringify(row.machine_detection),
        row.transfer_mode,
      ],
    );
  }

  async find(db: Queryable, organizationId: string, id: string): Promise<AgentRow | undefined> {
    const [row] = await db.query<AgentRow>(
      `SELECT ${AGENT_COLUMNS} FROM agents a WHERE a.id = $1 AND a.organization_id = $2`,
      [id, organizationId],
    );
    return row;
  }

  listQuery(
    organizationId: string,
  ): Pick<ListQuery<AgentRow, unknown>, 'select' | 'from' | 'where' | 'params' | 'orderBy'> {
    return {
      select: AGENT_COLUMNS,
      from: 'agents a',
      where: 'a.organization_id = $1',
      params: [organizationId],
      orderBy: { createdAt: 'a.created_at', id: 'a.id' },
    };
  }

  /** Sets the columns given; false when the agent is not the organization's. */
  async update(
    db: Queryable,
    organizationId: string,
    id: string,
    columns: AgentColumns,
    now: Date,
  ): Promise<boolean> {
    const params: unknown[] = [id, organizationId, now];
    const sets = ['updated_at = $3', ...assignments(columns, params, JSON_COLUMNS)];
    const rows = await db.query(
      `UPDATE agents SET ${sets.join(', ')} WHERE id = $1 AND organization_id = $2 RETURNING id`,
      params,
    );
    return rows.length > 0;
  }

  /** Makes `baseIds` (in this order) the bases the agent answers from. */
  async setKnowledgeBases(db: Queryable, agentId: string, baseIds: string[]): Promise<void> {
    await db.query('DELETE FROM agent_knowledge_bases WHERE agent_id = $1', [agentId]);
    await db.query(
      `INSERT INTO agent_knowledge_bases (agent_id, knowledge_base_id, position)
       SELECT $1, base.id, base.position FROM unnest($2::text[]) WITH ORDINALITY AS base(id, position)`,
      [agentId, baseIds],
    );
  }

  async remove(db: Queryable, organizationId: string, id: string): Promise<boolean> {
    const rows = await db.query('DELETE FROM agents WHERE id = $1 AND organization_id = $2 RETURNING id', [
      id,
      organizationId,
    ]);
    return rows.length > 0;
  }
}
