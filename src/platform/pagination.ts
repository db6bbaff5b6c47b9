// Pagination: the one mechanism every list endpoint uses (spec "Pagination envelope" and "Pagination rules",
// CONTRACT section 6 "Lists", DESIGN "one pagination helper used by every list"). A list declares whether it
// supports keyset paging; everything else (limits, ordering, the cursor, the envelope) is decided here once.
//
// Both modes return the newest first, ordered by (created_at DESC, id DESC); the id breaks ties, so the order
// is total even when many rows share a timestamp.
//   offset  `page` and `limit`, with a total. Every list offers it. Not stable under writes. The total is a
//           count(*) of the list's rows unless the list says how to get it cheaper (`total`: the per-organization
//           counter of an unfiltered list, docs/pagination.md "What `total` costs").
//   keyset  `cursor`, on lists that declare it: the rows strictly after the last row of the previous page. New
//           rows are newer, so they sort before the cursor: a walk returns every row that existed when it
//           began exactly once, however much is inserted meanwhile. No count, so no cost growing with depth.
//
// A cursor is opaque to clients but not secret: base64url of an HMAC-SHA256 tag followed by a small JSON
// payload (version, endpoint, digest of the organization and filters, position, issue time). The tag makes an
// edited cursor a 400, the digest binds it to its query, and the issue time (read from the app clock) expires
// it after 24 hours.
//
// The position keeps created_at exactly as PostgreSQL stores it, to the microsecond, as text. A JS Date holds
// only milliseconds: a position rounded to one would skip or repeat rows that share a millisecond.
import { createHash, createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { type Static, type TSchema, Type } from 'typebox';
import type { Clock } from './clock.ts';
import type { Queryable } from './db/index.ts';
import { ApiError } from './errors.ts';

export const DEFAULT_LIMIT = 25;
export const MAX_LIMIT = 100;
export const CURSOR_LIFETIME_MS = 24 * 60 * 60 * 1000;

const CURSOR_VERSION = 1;
const TAG_BYTES = 32;
// Real cursors are ~200 characters; anything far longer is not one of ours and is refused before any work.
const MAX_CURSOR_LENGTH = 1024;
// How the position's created_at travels: UTC, microseconds, read back exactly by `::timestamptz`.
const POSITION_FORMAT = 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"';
const POSITION_PATTERN = /^\d{4,}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

// ---------------------------------------------------------------------------------------------------------
// Query parameters

const pageParameter = Type.Integer({
  minimum: 1,
  // Keeps (page - 1) * limit far inside bigint, so a huge page is an empty page and never a database error.
  maximum: Number.MAX_SAFE_INTEGER,
  default: 1,
  description: 'Page number, from 1 (offset mode).',
});
const limitParameter = Type.Integer({
  minimum: 1,
  maximum: MAX_LIMIT,
  default: DEFAULT_LIMIT,
  description: `Records per page, 1-${MAX_LIMIT}.`,
});

/** Query parameters of a keyset-capable list. Spread `...PageQuery.properties` beside the list's filters. */
export const PageQuery = Type.Object({
  page: Type.Optional(pageParameter),
  limit: Type.Optional(limitParameter),
  cursor: Type.Optional(
    Type.String({
      description:
        "Keyset mode: empty to start at the newest record, then the previous response's `next_cursor`. " +
        'Valid for 24 hours, with the same filters, on the same endpoint.',
    }),
  ),
});

/** Query parameters of an offset-only list: `cursor` is not declared, so whatever is sent is ignored. */
export const OffsetPageQuery = Type.Object({
  page: Type.Optional(pageParameter),
  limit: Type.Optional(limitParameter),
});

export type PageQueryInput = Static<typeof PageQuery>;

// ---------------------------------------------------------------------------------------------------------
// What a list is: its identity binds cursors; its SQL is run by `fetch`.

export type FilterValue = string | number | boolean | Date | null | undefined | readonly (string | number)[];

export interface ListIdentity {
  /** A stable name such as 'messages.list'. A cursor works only on the endpoint that issued it. */
  endpoint: string;
  /** True on the keyset endpoints (spec: messages, calls, contacts, webhooks); false: `cursor` is ignored. */
  keyset: boolean;
  /** The organization the query is scoped to; a cursor works only for it. */
  organizationId: string;
  /** Every filter that shapes the result, as parsed from the query; a cursor works only with the same. */
  filters?: Record<string, FilterValue>;
}

export interface ListQuery<Row, Item> extends ListIdentity {
  /** The SELECT list, e.g. 'id, status, body, created_at'. Trusted SQL written by the route author. */
  select: string;
  /** The FROM clause: a table, or a join. */
  from: string;
  /** The WHERE condition, already scoped to the organization; placeholders $1..$n match `params`. */
  where: string;
  params: unknown[];
  map: (row: Row) => Item;
  /**
   * The ordering columns (a timestamptz and a unique text id); default `created_at` and `id`. Qualify them
   * (`m.created_at`) when `from` is a join.
   */
  orderBy?: { createdAt: string; id: string };
  /**
   * How to get offset mode's `total` without counting the rows: a query returning one row with a `total`
   * column, equal to what `SELECT count(*) FROM from WHERE where` would answer (e.g. `listCounterTotal` for an
   * unfiltered list). Absent: the rows are counted.
   */
  total?: TotalQuery;
}

/** A query answering one row `{ total }`; placeholders $1..$n match `params`. */
export interface TotalQuery {
  sql: string;
  params: unknown[];
}

/**
 * The total of an unfiltered list from its per-organization counter (migrations/012_list_counts.sql): every
 * row of `list` (a table the migration keeps a counter for, by its name) that belongs to the organization,
 * read from one index entry. An organization that never had a row has no counter yet: 0.
 */
export function listCounterTotal(list: string, organizationId: string): TotalQuery {
  return {
    sql: `SELECT COALESCE((SELECT count FROM list_counts WHERE organization_id = $1 AND list = $2), 0) AS total`,
    params: [organizationId, list],
  };
}

/** Where a keyset page starts: strictly after this row. `createdAt` is exact to the microsecond. */
export interface KeysetPosition {
  createdAt: string;
  id: string;
}

export type PageRequest =
  | { mode: 'offset'; page: number; limit: number }
  | { mode: 'keyset'; limit: number; position?: KeysetPosition };

export interface PageInfo {
  page: number | null;
  limit: number;
  total: number | null;
  totalPages: number | null;
}

export interface Page<Item> {
  data: Item[];
  pagination: PageInfo;
  next_cursor: string | null;
}

// ---------------------------------------------------------------------------------------------------------
// The cursor codec

/** The cursor signing key: derived from the root secret for this one purpose, so it signs nothing else. */
export function deriveCursorKey(rootSecret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', rootSecret, 'commsplatform', 'pagination-cursor v1', 32));
}

/**
 * Digest of what a cursor is bound to: the organization and the normalised filters. Absent filters
 * (undefined or null) are dropped, keys sorted, values compared as text, lists as sets.
 */
export function queryDigest(organizationId: string, filters: Record<string, FilterValue> = {}): string {
  const normalised = Object.keys(filters)
    .filter((name) => filters[name] !== undefined && filters[name] !== null)
    .sort()
    .map((name) => {
      const value = filters[name]!;
      if (Array.isArray(value)) return [name, value.map(String).sort()];
      return [name, value instanceof Date ? value.toISOString() : String(value)];
    });
  return createHash('sha256')
    .update(JSON.stringify([organizationId, normalised]))
    .digest('base64url')
    .slice(0, 22);
}

interface CursorPayload {
  v: number;
  /** endpoint */
  e: string;
  /** query digest */
  q: string;
  /** position: created_at, exact */
  c: string;
  /** position: id */
  i: string;
  /** issued at, ms by the app clock */
  t: number;
}

const START_AGAIN = 'start again with an empty cursor= to get the newest records';

export class CursorCodec {
  private readonly key: Buffer;

  constructor(
    rootSecret: string,
    private readonly clock: Clock,
  ) {
    this.key = deriveCursorKey(rootSecret);
  }

  issue(list: ListIdentity, position: KeysetPosition): string {
    const payload: CursorPayload = {
      v: CURSOR_VERSION,
      e: list.endpoint,
      q: queryDigest(list.organizationId, list.filters),
      c: position.createdAt,
      i: position.id,
      t: this.clock.nowMs(),
    };
    const bytes = Buffer.from(JSON.stringify(payload));
    return Buffer.concat([this.tag(bytes), bytes]).toString('base64url');
  }

  /** The position a cursor carries, or a 400 saying why the cursor cannot be used here. */
  read(cursor: string, list: ListIdentity): KeysetPosition {
    const malformed = ApiError.badRequest(
      `Invalid cursor: pass next_cursor exactly as it was returned, or ${START_AGAIN}`,
    );
    if (cursor.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw malformed;
    const bytes = Buffer.from(cursor, 'base64url');
    // Only the canonical spelling is accepted, so any change to the text is caught.
    if (bytes.length <= TAG_BYTES || bytes.toString('base64url') !== cursor) throw malformed;

    const tag = bytes.subarray(0, TAG_BYTES);
    const body = bytes.subarray(TAG_BYTES);
    if (!timingSafeEqual(tag, this.tag(body))) {
      throw ApiError.badRequest(`Invalid cursor: it has been altered; ${START_AGAIN}`);
    }

    let payload: CursorPayload;
    try {
      payload = JSON.parse(body.toString('utf8'));
    } catch {
      throw malformed;
    }
    if (!isPayload(payload) || payload.v !== CURSOR_VERSION) throw malformed;

    if (this.clock.nowMs() - payload.t > CURSOR_LIFETIME_MS) {
      throw ApiError.badRequest(`Cursor expired: cursors are valid for 24 hours; ${START_AGAIN}`);
    }
    if (payload.e !== list.endpoint) {
      throw ApiError.badRequest(`Invalid cursor: it was issued by another list endpoint; ${START_AGAIN}`);
    }
    if (payload.q !== queryDigest(list.organizationId, list.filters)) {
      throw ApiError.badRequest(
        `Invalid cursor: it was issued for a different query; send the same filters as the request that ` +
          `returned it, or ${START_AGAIN}`,
      );
    }
    return { createdAt: payload.c, id: payload.i };
  }

  private tag(bytes: Buffer): Buffer {
    return createHmac('sha256', this.key).update(bytes).digest();
  }
}

function isPayload(value: unknown): value is CursorPayload {
  const p = value as CursorPayload;
  return (
    typeof p === 'object' &&
    p !== null &&
    typeof p.v === 'number' &&
    typeof p.e === 'string' &&
    typeof p.q === 'string' &&
    typeof p.c === 'string' &&
    POSITION_PATTERN.test(p.c) &&
    typeof p.i === 'string' &&
    p.i.length > 0 &&
    Number.isSafeInteger(p.t)
  );
}

// ---------------------------------------------------------------------------------------------------------
// Parsing and running a list

/** A positive integer within [1, max], from a number or a string of digits; absent gives the default. */
function boundedInteger(value: unknown, name: string, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  const number = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isInteger(number) || number < 1 || number > max) {
    throw ApiError.badRequest(`${name} must be an integer from 1 to ${max}`);
  }
  return number;
}

interface PositionColumns {
  page_position_created_at: string;
  page_position_id: string;
}

export class Paginator {
  readonly cursors: CursorCodec;

  constructor(rootSecret: string, clock: Clock) {
    this.cursors = new CursorCodec(rootSecret, clock);
  }

  /**
   * Turns `page`, `limit` and `cursor` into a page request. Keyset mode only on a keyset list and only when
   * `cursor` is present (empty: start at the newest); on any other list `cursor` is ignored entirely.
   */
  parse(query: { page?: unknown; limit?: unknown; cursor?: unknown }, list: ListIdentity): PageRequest {
    const limit = boundedInteger(query.limit, 'limit', MAX_LIMIT, DEFAULT_LIMIT);
    const page = boundedInteger(query.page, 'page', Number.MAX_SAFE_INTEGER, 1);
    if (!list.keyset || query.cursor === undefined) return { mode: 'offset', page, limit };
    if (typeof query.cursor !== 'string') throw ApiError.badRequest('cursor must be a string');
    if (query.cursor === '') return { mode: 'keyset', limit };
    return { mode: 'keyset', limit, position: this.cursors.read(query.cursor, list) };
  }

  /** Runs a list query for one page of `request`, newest first. */
  async fetch<Row, Item>(
    db: Queryable,
    request: PageRequest,
    list: ListQuery<Row, Item>,
  ): Promise<Page<Item>> {
    const createdAt = list.orderBy?.createdAt ?? 'created_at';
    const id = list.orderBy?.id ?? 'id';
    const order = `ORDER BY ${createdAt} DESC, ${id} DESC`;
    const params = [...list.params];
    const next = (value: unknown) => `$${params.push(value)}`;

    if (request.mode === 'offset') {
      const offset = (request.page - 1) * request.limit;
      const totalQuery = list.total ?? {
        sql: `SELECT count(*) AS total FROM ${list.from} WHERE (${list.where})`,
        params: list.params,
      };
      const [{ total }] = await db.query<{ total: number }>(totalQuery.sql, totalQuery.params);
      const rows =
        offset >= total
          ? []
          : await db.query<Row>(
              `SELECT ${list.select} FROM ${list.from} WHERE (${list.where}) ${order} ` +
                `LIMIT ${next(request.limit)} OFFSET ${next(offset)}`,
              params,
            );
      return {
        data: rows.map((row) => list.map(row)),
        pagination: {
          page: request.page,
          limit: request.limit,
          total,
          totalPages: Math.ceil(total / request.limit),
        },
        next_cursor: null,
      };
    }

    // (created_at, id) < (position) is exactly "after the position" in this order, and PostgreSQL can walk
    // an index on (organization_id, created_at DESC, id DESC) for it.
    const after = request.position
      ? ` AND (${createdAt}, ${id}) < (${next(request.position.createdAt)}::timestamptz, ${next(request.position.id)})`
      : '';
    // One row more than asked says whether a next page exists, without a count.
    const rows = await db.query<Row & PositionColumns>(
      `SELECT ${list.select}, to_char(${createdAt} AT TIME ZONE 'UTC', '${POSITION_FORMAT}') AS page_position_created_at, ` +
        `${id} AS page_position_id FROM ${list.from} WHERE (${list.where})${after} ${order} ` +
        `LIMIT ${next(request.limit + 1)}`,
      params,
    );
    const hasMore = rows.length > request.limit;
    const pageRows = hasMore ? rows.slice(0, request.limit) : rows;
    const last = pageRows[pageRows.length - 1];
    return {
      data: pageRows.map((row) => list.map(row)),
      pagination: { page: null, limit: request.limit, total: null, totalPages: null },
      next_cursor:
        hasMore && last
          ? this.cursors.issue(list, { createdAt: last.page_position_created_at, id: last.page_position_id })
          : null,
    };
  }

  /** Parses the query and fetches the page: what a list route (or its service) calls. */
  list<Row, Item>(
    db: Queryable,
    query: { page?: unknown; limit?: unknown; cursor?: unknown },
    list: ListQuery<Row, Item>,
  ): Promise<Page<Item>> {
    return this.fetch(db, this.parse(query, list), list);
  }
}

// ---------------------------------------------------------------------------------------------------------
// The response envelope

/** `{success: true, data, pagination, next_cursor}`: the body of every list response. */
export function pageResponse<Item>(page: Page<Item>) {
  return {
    success: true as const,
    data: page.data,
    pagination: page.pagination,
    next_cursor: page.next_cursor,
  };
}

const NullableInteger = Type.Union([Type.Integer(), Type.Null()]);

export const PaginationInfo = Type.Object(
  {
    page: NullableInteger,
    limit: Type.Integer(),
    total: NullableInteger,
    totalPages: NullableInteger,
  },
  { description: 'page, total and totalPages are null in keyset mode' },
);

/** The response schema of a list of `item` (for validation of the output and the OpenAPI document). */
export function PageEnvelope<T extends TSchema>(item: T) {
  return Type.Object({
    success: Type.Literal(true),
    data: Type.Array(item, { description: 'Newest first' }),
    pagination: PaginationInfo,
    next_cursor: Type.Union([Type.String(), Type.Null()], {
      description:
        'Keyset mode: pass as `cursor` for the next page; null on the last page and in offset mode',
    }),
  });
}
