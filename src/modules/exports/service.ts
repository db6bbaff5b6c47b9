// Data exports (CONTRACT section 11, docs/exports.md):
//   create    checks the filters against the resource's list (its 400s and 404s come now, not from the job),
//             then takes one of the organization's 10 exports per hour (the 11th: 429 RATE_LIMITED with
//             RateLimit-* and Retry-After; a refusal takes nothing), then records the export and its job in one
//             transaction
//   build     the job: walks the list page by page (sources.ts) and writes the file in chunks of CHUNK_BYTES,
//             so its memory stays flat whatever the size; a crashed build starts over from the first chunk;
//             completes with `export.completed`
//   download  streams the chunks one at a time; 404 until completed; 7 days after the request it is gone
import { Readable } from 'node:stream';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { EventOutbox } from '../../platform/events.ts';
import { newId } from '../../platform/ids.ts';
import type { JobQueue } from '../../platform/jobs.ts';
import type { Page, PageQueryInput, Paginator } from '../../platform/pagination.ts';
import type { RateLimiter, RateLimitRule, RateLimitState } from '../../platform/rate-limit.ts';
import { rateLimitExceeded } from '../../platform/rate-limit.ts';
import { ExportCompleted } from './events.ts';
import { lineWriter } from './format.ts';
import type { ExportCreateInput, PublicExport } from './schemas.ts';
import { checkFilters, type RowSource, walk } from './sources.ts';
import { type ExportRow, ExportStore } from './store.ts';

export const BUILD_QUEUE = 'exports.build';
/** Spec "Data exports 10/hour", per organization, over the hour ending now. */
export const EXPORT_RATE_RULE: RateLimitRule = {
  name: 'exports',
  limit: 10,
  windowSeconds: 3600,
  sliding: true,
};
/** How long an export and its file are kept after they are asked for. */
export const EXPORT_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;
/** The size of one stored piece of a file: what building and downloading hold in memory at most. */
export const CHUNK_BYTES = 256 * 1024;

const CONTENT_TYPES = {
  csv: 'text/csv; charset=utf-8',
  jsonl: 'application/x-ndjson; charset=utf-8',
} as const;

export class ExportService {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly jobs: JobQueue;
  private readonly events: EventOutbox;
  private readonly pagination: Paginator;
  private readonly rateLimiter: RateLimiter;
  private readonly sources: Record<string, RowSource>;
  private readonly store = new ExportStore();

  constructor(deps: {
    db: Database;
    clock: Clock;
    jobs: JobQueue;
    events: EventOutbox;
    pagination: Paginator;
    rateLimiter: RateLimiter;
    sources: Record<string, RowSource>;
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.jobs = deps.jobs;
    this.events = deps.events;
    this.pagination = deps.pagination;
    this.rateLimiter = deps.rateLimiter;
    this.sources = deps.sources;
  }

  async create(
    organizationId: string,
    actor: string,
    input: ExportCreateInput,
  ): Promise<{ export: PublicExport; rateLimit: RateLimitState }> {
    const filters = input.filters ?? {};
    await checkFilters(this.sources[input.resource]!, input.resource, organizationId, filters);
    const rateLimit = await this.rateLimiter.consume(EXPORT_RATE_RULE, organizationId);
    if (!rateLimit.allowed) {
      throw rateLimitExceeded(rateLimit, `At most ${rateLimit.limit} exports an hour; try again later`, {
        retryAfter: true,
      });
    }
    const now = this.clock.now();
    const row = await this.db.transaction(async (tx) => {
      const inserted = await this.store.insert(tx, {
        id: newId('exp', now.getTime()),
        organization_id: organizationId,
        resource: input.resource,
        format: input.format,
        filters,
        created_by: actor,
        created_at: now,
        expires_at: new Date(now.getTime() + EXPORT_RETENTION_MS),
      });
      await this.jobs.enqueue(tx, BUILD_QUEUE, { exportId: inserted.id });
      return inserted;
    });
    return { export: toExport(row), rateLimit };
  }

  list(organizationId: string, query: PageQueryInput): Promise<Page<PublicExport>> {
    return this.pagination.list(this.db, query, {
      endpoint: 'exports.list',
      keyset: false,
      organizationId,
      ...this.store.listQuery(organizationId),
      map: toExport,
    });
  }

  async get(organizationId: string, id: string): Promise<PublicExport> {
    return toExport(await this.live(organizationId, id));
  }

  /** The job: writes the export's file. */
  async build(job: { exportId: string }): Promise<void> {
    const row = await this.store.start(this.db, job.exportId);
    if (!row) return;
    const writer = lineWriter(row.format);
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let seq = 0;
    let size = 0;
    let rows = 0;
    const flush = async () => {
      if (pendingBytes === 0) return;
      await this.store.writeChunk(this.db, row.id, seq++, Buffer.concat(pending, pendingBytes));
      pending = [];
      pendingBytes = 0;
    };
    try {
      for await (const item of walk(this.sources[row.resource]!, row.organization_id, row.filters)) {
        const bytes = Buffer.from(writer.line(item as Record<string, unknown>), 'utf8');
        pending.push(bytes);
        pendingBytes += bytes.length;
        size += bytes.length;
        rows += 1;
        if (pendingBytes >= CHUNK_BYTES) await flush();
      }
      await flush();
    } catch (error) {
      // A refusal of the list (the campaign was deleted meanwhile) will not change by retrying: the export
      // fails with its message. Anything else is retried by the queue from the first chunk.
      if (error instanceof ApiError && error.status < 500) {
        await this.store.fail(this.db, row.id, error.message, this.clock.now());
        return;
      }
      throw error;
    }
    await this.db.transaction(async (tx) => {
      const done = await this.store.complete(tx, row.id, rows, size, this.clock.now());
      await this.events.record(tx, ExportCompleted, {
        organizationId: done.organization_id,
        data: {
          id: done.id,
          resource: done.resource,
          format: done.format,
          rowCount: rows,
          sizeBytes: size,
          expiresAt: done.expires_at.toISOString(),
        },
      });
    });
  }

  /** The file as a stream of its chunks, read one at a time; 404 until the export has completed. */
  async download(
    organizationId: string,
    id: string,
  ): Promise<{ filename: string; contentType: string; size: number; body: Readable }> {
    const row = await this.live(organizationId, id);
    if (row.status !== 'completed') {
      throw ApiError.notFound(`Export ${id} file (the export is ${row.status})`);
    }
    const db = this.db;
    const store = this.store;
    async function* chunks() {
      for (let seq = 0; ; seq++) {
        const chunk = await store.chunk(db, id, seq);
        if (!chunk) return;
        yield chunk;
      }
    }
    const date = row.created_at.toISOString().slice(0, 10);
    return {
      filename: `${row.resource}-${date}-${row.id}.${row.format}`,
      contentType: CONTENT_TYPES[row.format],
      size: Number(row.size_bytes ?? 0),
      body: Readable.from(chunks(), { objectMode: false }),
    };
  }

  /** Retention: exports whose 7 days are over, with their files. */
  removeExpired(now: Date): Promise<number> {
    return this.store.deleteExpired(this.db, now);
  }

  /** The organization's export, unless it does not exist or its 7 days are over (404 either way). */
  private async live(organizationId: string, id: string): Promise<ExportRow> {
    const row = await this.store.find(this.db, organizationId, id);
    if (!row || row.expires_at.getTime() <= this.clock.nowMs()) throw ApiError.notFound('Export');
    return row;
  }
}

function toExport(row: ExportRow): PublicExport {
  return {
    id: row.id,
    resource: row.resource,
    format: row.format,
    filters: row.filters,
    status: row.status,
    rowCount: row.row_count,
    sizeBytes: row.size_bytes === null ? null : Number(row.size_bytes),
    error: row.error,
    createdAt: row.created_at.toISOString(),
    completedAt: row.completed_at?.toISOString() ?? null,
    expiresAt: row.expires_at.toISOString(),
  };
}
