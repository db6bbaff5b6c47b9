// The SQL of call queues and their members. Every method takes the Queryable to run on.
import { assignments } from '../../../platform/db/assignments.ts';
import type { Queryable } from '../../../platform/db/index.ts';
import type { ListQuery } from '../../../platform/pagination.ts';
import type { FlowStep } from '../flows/index.ts';
import { type RingStrategy, replaceMembers } from '../ring-groups/index.ts';

export interface QueueRow {
  id: string;
  organization_id: string;
  name: string;
  strategy: RingStrategy;
  hold_audio_id: string | null;
  announce_position: boolean;
  max_wait_seconds: number;
  on_timeout: FlowStep[];
  wrap_up_seconds: number;
  /** Its members in order (aggregated from queue_members). */
  extension_ids: string[];
  created_at: Date;
  updated_at: Date;
}

export type QueueColumns = Partial<
  Pick<
    QueueRow,
    | 'name'
    | 'strategy'
    | 'hold_audio_id'
    | 'announce_position'
    | 'max_wait_seconds'
    | 'on_timeout'
    | 'wrap_up_seconds'
  >
>;

const JSON_COLUMNS = { on_timeout: 'jsonb' };
const QUEUE_COLUMNS = `q.*, COALESCE((SELECT array_agg(m.extension_id ORDER BY m.position)
  FROM queue_members m WHERE m.queue_id = q.id), ARRAY[]::text[]) AS extension_ids`;

export class QueueStore {
  async insert(
    db: Queryable,
    row: Required<QueueColumns> & { id: string; organization_id: string; now: Date },
  ): Promise<void> {
    await db.query(
      `INSERT INTO queues (id, organization_id, name, strategy, hold_audio_id, announce_position, max_wait_seconds,
                           on_timeout, wrap_up_seconds, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $10)`,
      [
        row.id,
        row.organization_id,
        row.name,
        row.strategy,
        row.hold_audio_id,
        row.announce_position,
        row.max_wait_seconds,
        JSON.stringify(row.on_timeout),
        row.wrap_up_seconds,
        row.now,
      ],
    );
  }

  async find(db: Queryable, organizationId: string, id: string): Promise<QueueRow | undefined> {
    const [row] = await db.query<QueueRow>(
      `SELECT ${QUEUE_COLUMNS} FROM queues q WHERE q.id = $1 AND q.organization_id = $2`,
      [id, organizationId],
    );
    return row;
  }

  listQuery(
    organizationId: string,
  ): Pick<ListQuery<QueueRow, unknown>, 'select' | 'from' | 'where' | 'params' | 'orderBy'> {
    return {
      select: QUEUE_COLUMNS,
      from: 'queues q',
      where: 'q.organization_id = $1',
      params: [organizationId],
      orderBy: { createdAt: 'q.created_at', id: 'q.id' },
    };
  }

  /** Sets the columns given; false when the queue is not the organization's. */
  async update(
    db: Queryable,
    organizationId: string,
    id: string,
    columns: QueueColumns,
    now: Date,
  ): Promise<boolean> {
    const params: unknown[] = [id, organizationId, now];
    const sets = ['updated_at = $3', ...assignments(columns, params, JSON_COLUMNS)];
    const rows = await db.query(
      `UPDATE queues SET ${sets.join(', ')} WHERE id = $1 AND organization_id = $2 RETURNING id`,
      params,
    );
    return rows.length > 0;
  }

  /** Makes `extensionIds` (in this order) the queue's members. */
  setMembers(db: Queryable, queueId: string, extensionIds: readonly string[]): Promise<void> {
    return replaceMembers(db, 'queue_members', queueId, extensionIds);
  }

  async remove(db: Queryable, organizationId: string, id: string): Promise<boolean> {
    const rows = await db.query('DELETE FROM queues WHERE id = $1 AND organization_id = $2 RETURNING id', [
      id,
      organizationId,
    ]);
    return rows.length > 0;
  }
}
