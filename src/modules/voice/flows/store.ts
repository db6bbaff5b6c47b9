// The SQL of call flows and their versions (migrations/035_call_flows.sql). Every method takes the Queryable
// to run on; a flow's row holds its latest version number, the versions table its steps.
import type { Queryable } from '../../../platform/db/index.ts';
import type { ListQuery } from '../../../platform/pagination.ts';
import type { FlowStep } from './steps.ts';

/** A flow with the steps of one version (the latest, unless asked for another). */
export interface CallFlowRow {
  id: string;
  organization_id: string;
  name: string;
  /** The version `steps` are of. */
  version: number;
  steps: FlowStep[];
  created_at: Date;
  updated_at: Date;
}

// The flow joined to its latest version: what the API shows.
const LATEST = `call_flows f JOIN call_flow_versions v ON v.flow_id = f.id AND v.version = f.version`;
const COLUMNS = 'f.id, f.organization_id, f.name, f.version, v.steps, f.created_at, f.updated_at';

export class CallFlowStore {
  async insert(
    db: Queryable,
    row: { id: string; organization_id: string; name: string; steps: FlowStep[]; now: Date },
  ): Promise<CallFlowRow> {
    await db.query(
      `INSERT INTO call_flows (id, organization_id, name, version, created_at, updated_at)
       VALUES ($1, $2, $3, 1, $4, $4)`,
      [row.id, row.organization_id, row.name, row.now],
    );
    await this.insertVersion(db, row.id, 1, row.steps, row.now);
    return { ...row, version: 1, created_at: row.now, updated_at: row.now };
  }

  async find(db: Queryable, organizationId: string, id: string): Promise<CallFlowRow | undefined> {
    const [row] = await db.query<CallFlowRow>(
      `SELECT ${COLUMNS} FROM ${LATEST} WHERE f.id = $1 AND f.organization_id = $2`,
      [id, organizationId],
    );
    return row;
  }

  /** The steps of one version of the organization's flow; undefined when either is unknown. */
  async findVersion(
    db: Queryable,
    organizationId: string,
    id: string,
    version: number,
  ): Promise<{ version: number; steps: FlowStep[] } | undefined> {
    const [row] = await db.query<{ version: number; steps: FlowStep[] }>(
      `SELECT v.version, v.steps FROM call_flows f JOIN call_flow_versions v ON v.flow_id = f.id
        WHERE f.id = $1 AND f.organization_id = $2 AND v.version = $3`,
      [id, organizationId, version],
    );
    return row;
  }

  /** Which of `ids` are flows of the organization. */
  async existing(db: Queryable, organizationId: string, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await db.query<{ id: string }>(
      'SELECT id FROM call_flows WHERE organization_id = $1 AND id = ANY($2::text[])',
      [organizationId, ids],
    );
    return new Set(rows.map((row) => row.id));
  }

  listQuery(
    organizationId: string,
  ): Pick<ListQuery<CallFlowRow, unknown>, 'select' | 'from' | 'where' | 'params' | 'orderBy' | 'total'> {
    return {
      select: COLUMNS,
      from: LATEST,
      where: 'f.organization_id = $1',
      params: [organizationId],
      orderBy: { createdAt: 'f.created_at', id: 'f.id' },
      // Every flow has its latest version, so the join counts what the flow table alone counts.
      total: {
        sql: 'SELECT count(*)::int AS total FROM call_flows WHERE organization_id = $1',
        params: [organizationId],
      },
    };
  }

  /**
   * Renames the flow and, when `steps` are given, makes them its next version. The flow's row is updated
   * first, which locks it: two edits at once take turns and make versions n+1 and n+2, never two n+1.
   * Undefined when the flow is not the organization's.
   */
  async update(
    db: Queryable,
    organizationId: string,
    id: string,
    change: { name?: string; steps?: FlowStep[] },
    now: Date,
  ): Promise<CallFlowRow | undefined> {
    const [row] = await db.query<{ version: number }>(
      `UPDATE call_flows SET name = COALESCE($3, name), version = version + $4, updated_at = $5
        WHERE id = $1 AND organization_id = $2 RETURNING version`,
      [id, organizationId, change.name ?? null, change.steps ? 1 : 0, now],
    );
    if (!row) return undefined;
    if (change.steps) await this.insertVersion(db, id, row.version, change.steps, now);
    return this.find(db, organizationId, id);
  }

  /** Deletes the flow and its versions; false when it is not the organization's. */
  async remove(db: Queryable, organizationId: string, id: string): Promise<boolean> {
    const rows = await db.query(
      'DELETE FROM call_flows WHERE id = $1 AND organization_id = $2 RETURNING id',
      [id, organizationId],
    );
    return rows.length > 0;
  }

  /** Locks the organization's flow until the transaction ends; false when there is none. */
  async lock(db: Queryable, organizationId: string, id: string): Promise<boolean> {
    const rows = await db.query(
      'SELECT id FROM call_flows WHERE id = $1 AND organization_id = $2 FOR UPDATE',
      [id, organizationId],
    );
    return rows.length > 0;
  }

  private async insertVersion(db: Queryable, id: string, version: number, steps: FlowStep[], now: Date) {
    await db.query(
      `INSERT INTO call_flow_versions (flow_id, version, steps, created_at) VALUES ($1, $2, $3::jsonb, $4)`,
      [id, version, JSON.stringify(steps), now],
    );
  }
}
