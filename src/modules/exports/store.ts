// The SQL of exports and their files' chunks. Every method takes the Queryable to run on; the rules stay
// with ExportService.
import type { Queryable } from '../../platform/db/index.ts';
import type { ListQuery } from '../../platform/pagination.ts';
import type { ExportFormat, ExportResource, ExportStatus } from './schemas.ts';

export interface ExportRow {
  id: string;
  organization_id: string;
  resource: ExportResource;
  format: ExportFormat;
  filters: Record<string, unknown>;
  status: ExportStatus;
  row_count: number | null;
  size_bytes: string | number | null;
  error: string | null;
  created_at: Date;
  completed_at: Date | null;
  expires_at: Date;
}

export class ExportStore {
  async insert(
    db: Queryable,
    row: Pick<
      ExportRow,
      'id' | 'organization_id' | 'resource' | 'format' | 'filters' | 'created_at' | 'expires_at'
    > & {
      created_by: string;
    },
  ): Promise<ExportRow> {
    const [inserted] = await db.query<ExportRow>(
      `INSERT INTO exports (id, organization_id, resource, format, filters, status, created_by, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, 'queued', $6, $7, $8) RETURNING *`,
      [
        row.id,
        row.organization_id,
        row.resource,
        row.format,
        JSON.stringify(row.filters),
        row.created_by,
        row.created_at,
        row.expires_at,
      ],
    );
    return inserted!;
  }

  listQuery(
    organizationId: string,
  ): Pick<ListQuery<ExportRow, unknown>, 'select' | 'from' | 'where' | 'params'> {
    return { select: '*', from: 'exports', where: 'organization_id = $1', params: [organizationId] };
  }

  async find(db: Queryable, organizationId: string, id: string): Promise<ExportRow | undefined> {
    const [row] = await db.query<ExportRow>('SELECT * FROM exports WHERE organization_id = $1 AND id = $2', [
      organizationId,
      id,
    ]);
    return row;
  }

  /** Takes an export not yet finished for building (again, after a crash): running, its old chunks gone. */
  async start(db: Queryable, id: string): Promise<ExportRow | undefined> {
    const [row] = await db.query<ExportRow>(
      `UPDATE exports SET status = 'running' WHERE id = $1 AND status IN ('queued', 'running') RETURNING *`,
      [id],
    );
    if (row) await db.query('DELETE FROM export_chunks WHERE export_id = $1', [id]);
    return row;
  }

  async writeChunk(db: Queryable, id: string, seq: number, data: Buffer): Promise<void> {
    await db.query('INSERT INTO export_chunks (export_id, seq, data) VALUES ($1, $2, $3)', [id, seq, data]);
  }

  async complete(
    db: Queryable,
    id: string,
    rowCount: number,
    sizeBytes: number,
    now: Date,
  ): Promise<ExportRow> {
    const [row] = await db.query<ExportRow>(
      `UPDATE exports SET status = 'completed', row_count = $2, size_bytes = $3, completed_at = $4
        WHERE id = $1 RETURNING *`,
      [id, rowCount, sizeBytes, now],
    );
    return row!;
  }

  async fail(db: Queryable, id: string, error: string, now: Date): Promise<void> {
    await db.query(
      `UPDATE exports SET status = 'failed', error = $2, completed_at = $3 WHERE id = $1 AND status <> 'completed'`,
      [id, error, now],
    );
    await db.query('DELETE FROM export_chunks WHERE export_id = $1', [id]);
  }

  /** One chunk of the file, by position (0-based); undefined past the end. */
  async chunk(db: Queryable, id: string, seq: number): Promise<Buffer | undefined> {
    const [row] = await db.query<{ data: Buffer | Uint8Array }>(
      'SELECT data FROM export_chunks WHERE export_id = $1 AND seq = $2',
      [id, seq],
    );
    return row && Buffer.from(row.data.buffer, row.data.byteOffset, row.data.byteLength);
  }

  /** Retention: exports (and, by cascade, their chunks) that expired before `now`. */
  async deleteExpired(db: Queryable, now: Date): Promise<number> {
    const rows = await db.query('DELETE FROM exports WHERE expires_at <= $1 RETURNING id', [now]);
    return rows.length;
  }
}
