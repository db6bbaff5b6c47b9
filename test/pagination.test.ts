// Pagination (spec "Pagination envelope" and "Pagination rules", CONTRACT section 6 "Lists"), driven over a
// real socket through test routes on a throwaway table: a keyset list and an offset-only list on the developer
// API (Shape B errors) and a keyset list on the portal (Shape A). Each test seeds its own organizations, so
// the tests do not see each other's rows.
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Type } from 'typebox';
import type { Queryable } from '../src/platform/db/index.ts';
import {
  deriveCursorKey,
  OffsetPageQuery,
  PageEnvelope,
  PageQuery,
  pageResponse,
} from '../src/platform/pagination.ts';
import { isShapeA, isShapeB, startTestApp, type TestApp } from './helpers/app.ts';

const KEYSET = '/api/v2/test-items';
const OFFSET_ONLY = '/api/v2/test-items-offset';
const PORTAL = '/v2/portal/test-items';

const Item = Type.Object({ id: Type.String(), kind: Type.String(), createdAt: Type.String() });

interface ItemRow {
  id: string;
  kind: string;
  created_at: Date;
}

describe('pagination', () => {
  let t: TestApp;

  before(async () => {
    t = await startTestApp({
      extend: (app, ctx) => {
        const route = (path: string, endpoint: string, keyset: boolean) =>
          app.get(
            path,
            {
              schema: {
                querystring: Type.Object({
                  ...(keyset ? PageQuery : OffsetPageQuery).properties,
                  kind: Type.Optional(Type.String()),
                }),
                response: { 200: PageEnvelope(Item) },
              },
            },
            async (request) => {
              // Stands in for an API-key guard: the organization the request is scoped to.
              const organizationId = String(request.headers['x-test-org']);
              const { kind } = request.query as { kind?: string };
              const page = await ctx.pagination.list(ctx.db, request.query, {
                endpoint,
                keyset,
                organizationId,
                filters: { kind },
                select: 'id, kind, created_at',
                from: 'test_items',
                where: 'organization_id = $1 AND ($2::text IS NULL OR kind = $2)',
                params: [organizationId, kind ?? null],
                map: (row: ItemRow) => ({
                  id: row.id,
                  kind: row.kind,
                  createdAt: row.created_at.toISOString(),
                }),
              });
              return pageResponse(page);
            },
          );
        route(KEYSET, 'test-items.list', true);
        route(OFFSET_ONLY, 'test-items-offset.list', false);
        route(PORTAL, 'portal-test-items.list', true);
      },
    });
    await t.ctx.db.exec(`
      CREATE TABLE test_items (
        id text PRIMARY KEY,
        organization_id text NOT NULL,
        created_at timestamptz NOT NULL,
        kind text NOT NULL
      );
      CREATE INDEX test_items_page ON test_items (organization_id, created_at DESC, id DESC);
    `);
  });
  after(() => t.close());

  const newOrg = () => `org_${randomBytes(6).toString('hex')}`;

  /**
   * `count` rows for `org`: about 13 share each exact created_at, three distinct microseconds share each
   * millisecond, and ids are random with respect to time, so only the (created_at, id) order is total.
   */
  async function seed(org: string, count: number, kind = 'a') {
    await t.ctx.db.query(
      `INSERT INTO test_items (id, organization_id, created_at, kind)
       SELECT 'ti_' || md5($1 || i::text), $1,
              timestamptz '2026-01-01T00:00:00Z' + (i / 40) * interval '1 millisecond'
                + (i % 3) * interval '1 microsecond',
              $3
       FROM generate_series(1, $2::int) AS i`,
      [org, count, kind],
    );
  }

  /** Every id of `org`, in the order the API promises: newest first, id breaking ties. */
  async function expectedOrder(org: string, db: Queryable = t.ctx.db): Promise<string[]> {
    const rows = await db.query<{ id: string }>(
      'SELECT id FROM test_items WHERE organization_id = $1 ORDER BY created_at DESC, id DESC',
      [org],
    );
    return rows.map((row) => row.id);
  }

  function get(path: string, org: string, query = '') {
    return t.request('GET', `${path}${query ? `?${query}` : ''}`, { headers: { 'x-test-org': org } });
  }

  const ids = (body: { data: { id: string }[] }) => body.data.map((item) => item.id);

  describe('offset mode', () => {
    test('defaults to page 1 of 25, newest first, with totals', async () => {
      const org = newOrg();
      await seed(org, 30);
      const order = await expectedOrder(org);

      const first = await get(KEYSET, org);
      assert.equal(first.status, 200);
      assert.equal(first.body.success, true);
      assert.deepEqual(first.body.pagination, { page: 1, limit: 25, total: 30, totalPages: 2 });
      assert.equal(first.body.next_cursor, null);
      assert.deepEqual(ids(first.body), order.slice(0, 25));

      const second = await get(KEYSET, org, 'page=2');
      assert.deepEqual(second.body.pagination, { page: 2, limit: 25, total: 30, totalPages: 2 });
      assert.deepEqual(ids(second.body), order.slice(25));

      const beyond = await get(KEYSET, org, 'page=3');
      assert.equal(beyond.status, 200);
      assert.deepEqual(beyond.body.data, []);
      assert.deepEqual(beyond.body.pagination, { page: 3, limit: 25, total: 30, totalPages: 2 });
    });

    test('totalPages is ceil(total / limit), and 0 for an empty list', async () => {
      const org = newOrg();
      await seed(org, 30);
      for (const [limit, totalPages] of [
        [7, 5],
        [10, 3],
        [1, 30],
        [100, 1],
      ] as const) {
        const res = await get(OFFSET_ONLY, org, `limit=${limit}`);
        assert.equal(res.status, 200);
        assert.deepEqual(res.body.pagination, { page: 1, limit, total: 30, totalPages });
        assert.equal(res.body.data.length, Math.min(limit, 30));
      }
      const empty = await get(OFFSET_ONLY, newOrg());
      assert.deepEqual(empty.body.pagination, { page: 1, limit: 25, total: 0, totalPages: 0 });
      assert.deepEqual(empty.body.data, []);
    });

    test('pages cover every row once when nothing is written meanwhile', async () => {
      const org = newOrg();
      await seed(org, 95);
      const seen: string[] = [];
      for (let page = 1; page <= 10; page++)
        seen.push(...ids((await get(OFFSET_ONLY, org, `limit=10&page=${page}`)).body));
      assert.deepEqual(seen, await expectedOrder(org));
    });

    test('filters narrow the list and its total', async () => {
      const org = newOrg();
      await seed(org, 20, 'a');
      await t.ctx.db.query(
        `INSERT INTO test_items SELECT 'tb_' || i, $1, timestamptz '2026-02-01' + i * interval '1 second', 'b'
         FROM generate_series(1, 4) AS i`,
        [org],
      );
      const res = await get(KEYSET, org, 'kind=b');
      assert.equal(res.body.pagination.total, 4);
      assert.deepEqual(ids(res.body), ['tb_4', 'tb_3', 'tb_2', 'tb_1']);
      assert.equal((await get(KEYSET, org)).body.pagination.total, 24);
    });
  });

  describe('limits', () => {
    const outOfRange = [
      'limit=0',
      'limit=101',
      'limit=-1',
      'limit=1.5',
      'limit=ten',
      'limit=',
      'page=0',
      'page=-1',
      'page=2.5',
      'page=first',
      'page=9007199254740992',
    ];

    for (const query of outOfRange) {
      test(`${query} is a 400 in Shape B on the developer API, in either mode`, async () => {
        for (const path of [KEYSET, OFFSET_ONLY]) {
          for (const withCursor of ['', '&cursor=']) {
            const res = await get(path, newOrg(), `${query}${withCursor}`);
            assert.equal(res.status, 400, `${path}?${query}${withCursor}`);
            assert.ok(isShapeB(res.body), res.text);
            assert.equal(res.body.code, undefined);
            assert.match(res.body.error, /limit|page/);
          }
        }
      });
    }

    test('out-of-range values are a 400 in Shape A on the portal', async () => {
      for (const query of ['limit=0', 'limit=101', 'page=0']) {
        const res = await get(PORTAL, newOrg(), query);
        assert.equal(res.status, 400, query);
        assert.ok(isShapeA(res.body), res.text);
        assert.match(res.body.message, /limit|page/);
      }
    });

    test('limit 1 and 100 are accepted', async () => {
      const org = newOrg();
      await seed(org, 120);
      assert.equal((await get(KEYSET, org, 'limit=1')).body.data.length, 1);
      assert.equal((await get(KEYSET, org, 'limit=100')).body.data.length, 100);
      assert.equal((await get(KEYSET, org, 'limit=100&cursor=')).body.data.length, 100);
    });

    test('the parser refuses what a route without the schema would pass through', () => {
      const list = { endpoint: 'x', keyset: true, organizationId: 'org_x' };
      for (const query of [{ limit: '0' }, { limit: 101 }, { limit: '1.5' }, { page: -1 }, { page: 'one' }]) {
        assert.throws(() => t.ctx.pagination.parse(query, list), { status: 400 }, JSON.stringify(query));
      }
      assert.deepEqual(t.ctx.pagination.parse({}, list), { mode: 'offset', page: 1, limit: 25 });
      assert.deepEqual(t.ctx.pagination.parse({ limit: '40', cursor: '' }, list), {
        mode: 'keyset',
        limit: 40,
      });
      assert.deepEqual(t.ctx.pagination.parse({ cursor: 'garbage' }, { ...list, keyset: false }), {
        mode: 'offset',
        page: 1,
        limit: 25,
      });
    });
  });

  describe('keyset mode', () => {
    test('an empty cursor starts at the newest; page, total and totalPages are null; next_cursor ends', async () => {
      const org = newOrg();
      await seed(org, 5);
      const order = await expectedOrder(org);

      const first = await get(KEYSET, org, 'cursor=&limit=2');
      assert.equal(first.status, 200);
      assert.deepEqual(first.body.pagination, { page: null, limit: 2, total: null, totalPages: null });
      assert.deepEqual(ids(first.body), order.slice(0, 2));
      assert.equal(typeof first.body.next_cursor, 'string');
      assert.match(first.body.next_cursor, /^[A-Za-z0-9_-]+$/);

      const second = await get(KEYSET, org, `limit=2&cursor=${first.body.next_cursor}`);
      assert.deepEqual(ids(second.body), order.slice(2, 4));
      const third = await get(KEYSET, org, `limit=2&cursor=${second.body.next_cursor}`);
      assert.deepEqual(ids(third.body), order.slice(4));
      assert.equal(third.body.next_cursor, null);
      assert.deepEqual(third.body.pagination, { page: null, limit: 2, total: null, totalPages: null });
    });

    test('a page that ends exactly at the last row has no next_cursor', async () => {
      const org = newOrg();
      await seed(org, 3);
      const res = await get(KEYSET, org, 'cursor=&limit=3');
      assert.equal(res.body.data.length, 3);
      assert.equal(res.body.next_cursor, null);
      const empty = await get(KEYSET, newOrg(), 'cursor=');
      assert.deepEqual(empty.body.data, []);
      assert.equal(empty.body.next_cursor, null);
    });

    test('a walk over 2,000 rows with inserts between pages returns each existing row exactly once, newest first', async () => {
      const org = newOrg();
      const otherOrg = newOrg();
      await seed(org, 2000);
      await seed(otherOrg, 300); // same timestamps, another organization
      const before = await expectedOrder(org);
      const existing = new Set(before);
      const newest = (
        await t.ctx.db.query<{ at: string }>(
          `SELECT max(created_at)::text AS at FROM test_items WHERE organization_id = $1`,
          [org],
        )
      )[0]!.at;

      const seen: string[] = [];
      let cursor = '';
      let pages = 0;
      let inserted = 0;
      for (;;) {
        const res = await get(KEYSET, org, `limit=37&cursor=${cursor}`);
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(res.body.pagination, { page: null, limit: 37, total: null, totalPages: null });
        seen.push(...ids(res.body));
        pages++;
        if (res.body.next_cursor === null) break;
        cursor = res.body.next_cursor;
        // Writes while the client walks: newer rows, rows tied with the newest existing timestamp, and
        // rows of another organization.
        await t.ctx.db.query(
          `INSERT INTO test_items (id, organization_id, created_at, kind) VALUES
             ($1, $3, $5, 'a'), ($2, $3, $6::timestamptz, 'a'), ($7, $4, $5, 'a')`,
          [
            `new_${randomBytes(8).toString('hex')}`,
            `zzz_${randomBytes(8).toString('hex')}`,
            org,
            otherOrg,
            t.ctx.clock.now(),
            newest,
            `new_${randomBytes(8).toString('hex')}`,
          ],
        );
        inserted += 2;
      }

      assert.equal(new Set(seen).size, seen.length, 'no row is returned twice');
      assert.deepEqual(
        seen.filter((id) => existing.has(id)),
        before,
        'every row that existed at the start, once, newest first',
      );
      const after = await expectedOrder(org);
      assert.equal(after.length, 2000 + inserted);
      const position = new Map(after.map((id, index) => [id, index]));
      for (let i = 1; i < seen.length; i++) {
        assert.ok(position.get(seen[i - 1]!)! < position.get(seen[i]!)!, 'returned rows are in list order');
      }
      assert.ok(pages >= Math.ceil(2000 / 37));
      const foreign = new Set(await expectedOrder(otherOrg));
      assert.ok(!seen.some((id) => foreign.has(id)), "another organization's rows never appear");
    });

    test('rows a microsecond apart within one millisecond are neither skipped nor repeated', async () => {
      const org = newOrg();
      await t.ctx.db.query(
        `INSERT INTO test_items (id, organization_id, created_at, kind)
         SELECT 'us_' || lpad(i::text, 2, '0'), $1,
                timestamptz '2026-03-01T12:00:00.123000Z' + (i % 7) * interval '1 microsecond', 'a'
         FROM generate_series(1, 20) AS i`,
        [org],
      );
      const order = await expectedOrder(org);
      const seen: string[] = [];
      let cursor = '';
      for (let guard = 0; guard < 50; guard++) {
        const res = await get(KEYSET, org, `limit=1&cursor=${cursor}`);
        seen.push(...ids(res.body));
        if (res.body.next_cursor === null) break;
        cursor = res.body.next_cursor;
      }
      assert.deepEqual(seen, order);
    });

    test('a walk with a filter keeps to it', async () => {
      const org = newOrg();
      await seed(org, 50, 'a');
      await t.ctx.db.query(
        `INSERT INTO test_items SELECT 'kb_' || md5(i::text), $1, timestamptz '2026-01-01' + i * interval '1 ms', 'b'
         FROM generate_series(1, 30) AS i`,
        [org],
      );
      const seen: string[] = [];
      let cursor = '';
      for (;;) {
        const res = await get(KEYSET, org, `kind=b&limit=8&cursor=${cursor}`);
        assert.equal(res.status, 200, res.text);
        assert.ok(res.body.data.every((item: { kind: string }) => item.kind === 'b'));
        seen.push(...ids(res.body));
        if (res.body.next_cursor === null) break;
        cursor = res.body.next_cursor;
      }
      assert.equal(seen.length, 30);
      assert.equal(new Set(seen).size, 30);
    });
  });

  describe('cursors that cannot be used', () => {
    let org: string;
    let cursor: string;
    before(async () => {
      org = newOrg();
      await seed(org, 10);
      cursor = (await get(KEYSET, org, 'limit=3&cursor=')).body.next_cursor;
      assert.equal(typeof cursor, 'string');
    });

    function assertRefused(res: Awaited<ReturnType<typeof get>>, message: RegExp) {
      assert.equal(res.status, 400, res.text);
      assert.ok(isShapeB(res.body), res.text);
      assert.equal(res.body.code, undefined);
      assert.match(res.body.error, message);
    }

    /** A cursor signed with the real key around any payload, to reach the checks behind the signature. */
    function signed(payload: string): string {
      const bytes = Buffer.from(payload);
      const tag = createHmac('sha256', deriveCursorKey(t.ctx.config.jwtSecret)).update(bytes).digest();
      return Buffer.concat([tag, bytes]).toString('base64url');
    }

    const decode = (value: string) => JSON.parse(Buffer.from(value, 'base64url').subarray(32).toString());

    test('the cursor works as issued', async () => {
      const res = await get(KEYSET, org, `limit=3&cursor=${cursor}`);
      assert.equal(res.status, 200);
      assert.equal(res.body.data.length, 3);
    });

    test('malformed: not base64url, too short, not canonical, too long', async () => {
      for (const bad of ['not a cursor!', '%25%25', 'abc', 'AAAA', `${cursor}A`, 'A'.repeat(5000)]) {
        assertRefused(await get(KEYSET, org, `cursor=${bad}`), /Invalid cursor/);
      }
    });

    test('edited: any changed character, or a changed payload under the old signature', async () => {
      const middle = Math.floor(cursor.length / 2);
      const flipped = `${cursor.slice(0, middle)}${cursor[middle] === 'A' ? 'B' : 'A'}${cursor.slice(middle + 1)}`;
      assertRefused(await get(KEYSET, org, `cursor=${flipped}`), /Invalid cursor/);

      const bytes = Buffer.from(cursor, 'base64url');
      const payload = decode(cursor);
      const edited = Buffer.concat([
        bytes.subarray(0, 32),
        Buffer.from(JSON.stringify({ ...payload, t: payload.t + 86_400_000 })),
      ]).toString('base64url');
      assertRefused(await get(KEYSET, org, `cursor=${edited}`), /altered/);
    });

    test('signed but malformed: not JSON, another version, missing fields, a millisecond position', async () => {
      const payload = decode(cursor);
      for (const bad of [
        'not json',
        JSON.stringify({ ...payload, v: 2 }),
        JSON.stringify({ ...payload, i: undefined }),
        JSON.stringify({ ...payload, c: '2026-01-01T00:00:00.000Z' }),
        JSON.stringify([payload]),
        'null',
      ]) {
        assertRefused(await get(KEYSET, org, `cursor=${signed(bad)}`), /Invalid cursor/);
      }
      // The same payload, signed the same way, is accepted: the checks above failed for their own reason.
      assert.equal((await get(KEYSET, org, `limit=3&cursor=${signed(JSON.stringify(payload))}`)).status, 200);
    });

    test('another endpoint, filters or organization', async () => {
      const portal = await get(PORTAL, org, `cursor=${cursor}`);
      assert.equal(portal.status, 400);
      assert.ok(isShapeA(portal.body), portal.text);
      assert.match(portal.body.message, /another list endpoint/);

      assertRefused(await get(KEYSET, org, `kind=a&cursor=${cursor}`), /different query/);
      const filtered = (await get(KEYSET, org, 'kind=a&limit=3&cursor=')).body.next_cursor;
      assertRefused(await get(KEYSET, org, `cursor=${filtered}`), /different query/);
      assertRefused(await get(KEYSET, org, `kind=b&cursor=${filtered}`), /different query/);
      assert.equal((await get(KEYSET, org, `kind=a&cursor=${filtered}`)).status, 200);

      assertRefused(await get(KEYSET, newOrg(), `cursor=${cursor}`), /different query/);
    });

    test('a changed limit is the same query', async () => {
      const res = await get(KEYSET, org, `limit=50&cursor=${cursor}`);
      assert.equal(res.status, 200);
      assert.equal(res.body.data.length, 7);
      assert.equal(res.body.next_cursor, null);
    });

    test('the offset-only list ignores any cursor, valid or not', async () => {
      for (const value of [cursor, 'garbage!', '', `${cursor}&cursor=again`]) {
        const res = await get(OFFSET_ONLY, org, `limit=4&cursor=${value}`);
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(res.body.pagination, { page: 1, limit: 4, total: 10, totalPages: 3 });
        assert.equal(res.body.next_cursor, null);
        assert.deepEqual(ids(res.body), (await expectedOrder(org)).slice(0, 4));
      }
    });

    // Moves the server clock forward a day: keep it after every other test that uses cursors.
    test('expired after 24 hours by the app clock', async () => {
      const fresh = (await get(KEYSET, org, 'limit=3&cursor=')).body.next_cursor;
      assert.equal((await t.admin('POST', '/test/clock', { advanceSeconds: 86_300 })).status, 200);
      assert.equal(
        (await get(KEYSET, org, `cursor=${fresh}`)).status,
        200,
        'still valid just before 24 hours',
      );
      assert.equal((await t.admin('POST', '/test/clock', { advanceSeconds: 101 })).status, 200);
      assertRefused(await get(KEYSET, org, `cursor=${fresh}`), /expired/);
      const portal = await get(PORTAL, org, `cursor=${fresh}`);
      assert.ok(isShapeA(portal.body), portal.text);
      assert.equal(portal.status, 400);
      // A new walk works at the new time.
      assert.equal(
        (await get(KEYSET, org, `cursor=${(await get(KEYSET, org, 'limit=3&cursor=')).body.next_cursor}`))
          .status,
        200,
      );
    });
  });

  test('the OpenAPI document stays valid and describes the paging parameters', async () => {
    const res = await t.request('GET', '/openapi.json');
    const result = await new Validator().validate(res.body);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
    const keysetParameters = res.body.paths[KEYSET].get.parameters.map((p: { name: string }) => p.name);
    assert.deepEqual(keysetParameters.sort(), ['cursor', 'kind', 'limit', 'page']);
    const offsetParameters = res.body.paths[OFFSET_ONLY].get.parameters.map((p: { name: string }) => p.name);
    assert.deepEqual(offsetParameters.sort(), ['kind', 'limit', 'page']);
  });
});
