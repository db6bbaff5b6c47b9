// Message history: GET /api/v2/messages (offset and keyset paging on the shared pagination mechanism, with
// filters) and GET /api/v2/messages/{id}. A keyset walk over 2,000 messages with inserts in between returns
// each old message exactly once; every bad cursor is a 400; another organization's message is a 404.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isShapeB, startTestApp, type TestApp } from './helpers/app.ts';
import { freshNumber, type Sender, send, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';

describe('message history', () => {
  let t: TestApp;
  let acme: Sender;
  let other: Sender;
  before(async () => {
    t = await startTestApp();
    acme = await sender(t);
    other = await sender(t);
  });
  after(() => t.close());

  const list = (who: Sender, query: string) =>
    t.request('GET', `/api/v2/messages${query}`, { apiKey: who.key });

  /** Inserts `count` outbound messages directly (fast), `perSecond` sharing each created_at. */
  async function bulkInsert(who: Sender, count: number, newest: Date, perSecond = 3, tag = 'bulk') {
    await t.ctx.db.query(
      `INSERT INTO messages (id, organization_id, direction, origin, from_number, to_number, body, segments,
                             encoding, status, status_updated_at, created_at)
       SELECT 'msg_' || $5 || lpad(g::text, 6, '0') || substr(md5(random()::text), 1, 8), $1, 'outbound', 'api',
              $2, '+12025550100', $5 || ' ' || g, 1, 'GSM-7', 'delivered', $3,
              $3::timestamptz - ((g / $4) * interval '1 second')
         FROM generate_series(1, $6::int) AS g`,
      [who.id, who.number, newest, perSecond, tag, count],
    );
  }

  test('a keyset walk over 2,000 messages with inserts in between returns each old message exactly once, newest first', async () => {
    const walker = await sender(t);
    await bulkInsert(walker, 2000, t.ctx.clock.now());
    const [{ n }] = await t.ctx.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM messages WHERE organization_id = $1',
      [walker.id],
    );
    assert.equal(n, 2000);
    const seen: { id: string; createdAt: string }[] = [];
    let cursor = '';
    let pages = 0;
    for (;;) {
      const res = await list(walker, `?limit=100&cursor=${cursor}`);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.pagination, { page: null, limit: 100, total: null, totalPages: null });
      seen.push(
        ...res.body.data.map((m: { id: string; createdAt: string }) => ({
          id: m.id,
          createdAt: m.createdAt,
        })),
      );
      pages++;
      // New messages arrive between pages, including ones sharing the newest timestamp.
      t.ctx.clock.advance(1);
      await bulkInsert(walker, 7, t.ctx.clock.now(), 7, `new${pages}`);
      if (res.body.next_cursor === null) break;
      cursor = res.body.next_cursor;
    }
    assert.equal(pages, 20);
    assert.equal(seen.length, 2000);
    assert.equal(new Set(seen.map((m) => m.id)).size, 2000);
    assert.ok(
      seen.every((m) => m.id.startsWith('msg_bulk')),
      'no message inserted during the walk appears',
    );
    for (let i = 1; i < seen.length; i++) {
      const a = seen[i - 1]!;
      const b = seen[i]!;
      assert.ok(a.createdAt > b.createdAt || (a.createdAt === b.createdAt && a.id > b.id), `order at ${i}`);
    }
  });

  test('offset mode: page, limit, total and totalPages; next_cursor null', async () => {
    const paged = await sender(t);
    await bulkInsert(paged, 55, t.ctx.clock.now());
    const res = await list(paged, '?page=3&limit=25');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.pagination, { page: 3, limit: 25, total: 55, totalPages: 3 });
    assert.equal(res.body.data.length, 5);
    assert.equal(res.body.next_cursor, null);
    assert.equal((await list(paged, '?limit=101')).status, 400);
    assert.equal((await list(paged, '?page=0')).status, 400);
  });

  test('every bad cursor is a 400: malformed, altered, expired, another endpoint, another query or organization', async () => {
    const owner = await sender(t);
    await bulkInsert(owner, 30, t.ctx.clock.now());
    const first = await list(owner, '?limit=10&cursor=');
    const cursor: string = first.body.next_cursor;
    assert.ok(cursor);
    const refused = async (who: Sender, query: string, pattern: RegExp) => {
      const res = await list(who, query);
      assert.equal(res.status, 400, `${query}: ${res.text}`);
      assert.ok(isShapeB(res.body));
      assert.equal(res.body.code, undefined);
      assert.match(res.body.error, pattern);
    };
    await refused(owner, '?cursor=not-a-cursor!', /Invalid cursor/);
    await refused(owner, '?cursor=Zm9v', /Invalid cursor/);
    const middle = Math.floor(cursor.length / 2);
    const altered = cursor.slice(0, middle) + (cursor[middle] === 'A' ? 'B' : 'A') + cursor.slice(middle + 1);
    await refused(owner, `?cursor=${altered}`, /Invalid cursor/);
    await refused(owner, `?cursor=${cursor}&status=delivered`, /different query/);
    await refused(other, `?cursor=${cursor}`, /different query/);
    const contacts = await t.request('GET', '/api/v2/contacts?limit=1&cursor=', { apiKey: owner.key });
    await t.request('POST', '/api/v2/contacts', { apiKey: owner.key, body: { phone: freshNumber() } });
    await t.request('POST', '/api/v2/contacts', { apiKey: owner.key, body: { phone: freshNumber() } });
    const contactsPage = await t.request('GET', '/api/v2/contacts?limit=1&cursor=', { apiKey: owner.key });
    assert.equal(contacts.status, 200);
    await refused(owner, `?cursor=${contactsPage.body.next_cursor}`, /another list endpoint/);
    // The same cursor, with the same (no) filters, works until it is 24 hours old.
    assert.equal((await list(owner, `?limit=10&cursor=${cursor}`)).status, 200);
    t.ctx.clock.advance(24 * 3600 + 1);
    await refused(owner, `?cursor=${cursor}`, /expired/);
  });

  test('filters: direction, status, number, since and until; a cursor keeps its filters', async () => {
    const filtered = await sender(t);
    t.ctx.clock.advance(61);
    const start = t.ctx.clock.now();
    const customer = freshNumber();
    const outbound = await send(t, filtered, { to: customer, message: 'out' });
    t.ctx.clock.advance(10);
    const middle = t.ctx.clock.now();
    await send(t, filtered, { to: freshNumber(), message: 'elsewhere' });
    const inbound = await t.admin('POST', '/test/carrier/inbound', {
      from: customer,
      to: filtered.number,
      text: 'hello',
    });
    assert.equal(inbound.status, 201);

    const ids = async (query: string) => {
      const res = await list(filtered, query);
      assert.equal(res.status, 200, res.text);
      return res.body.data.map((m: { id: string }) => m.id);
    };
    assert.deepEqual(await ids('?direction=inbound'), [inbound.body.data.message.id]);
    assert.equal((await ids('?direction=outbound')).length, 2);
    assert.deepEqual(await ids('?status=received'), [inbound.body.data.message.id]);
    assert.equal((await ids('?status=queued')).length, 2);
    assert.deepEqual(await ids(`?number=${encodeURIComponent(customer)}`), [
      inbound.body.data.message.id,
      outbound.body.data.id,
    ]);
    const national = customer.replace(/^\+1(\d{3})(\d{3})(\d{4})$/, '($1) $2-$3');
    assert.equal((await ids(`?number=${encodeURIComponent(national)}`)).length, 2);
    assert.deepEqual(await ids(`?until=${middle.toISOString()}`), [outbound.body.data.id]);
    assert.equal((await ids(`?since=${middle.toISOString()}`)).length, 2);
    assert.equal((await ids(`?since=${start.toISOString()}&direction=outbound`)).length, 2);

    const page = await list(filtered, '?direction=outbound&limit=1&cursor=');
    const next = await list(filtered, `?direction=outbound&limit=1&cursor=${page.body.next_cursor}`);
    assert.equal(next.status, 200);
    assert.equal(next.body.data.length, 1);
    assert.equal(next.body.next_cursor, null);

    assert.equal((await list(filtered, '?since=yesterday')).status, 400);
    assert.equal((await list(filtered, '?status=lost')).status, 400);
    assert.equal((await list(filtered, '?direction=sideways')).status, 400);
  });

  test("another organization's message is a 404 and never listed", async () => {
    t.ctx.clock.advance(61);
    const mine = await send(t, acme, { to: freshNumber(), message: 'private' });
    const res = await t.request('GET', `/api/v2/messages/${mine.body.data.id}`, { apiKey: other.key });
    assert.equal(res.status, 404);
    assert.ok(isShapeB(res.body));
    const theirs = await list(other, '?limit=100');
    assert.ok(theirs.body.data.every((m: { id: string }) => m.id !== mine.body.data.id));
    assert.equal((await t.request('GET', '/api/v2/messages/msg_unknown', { apiKey: acme.key })).status, 404);
  });

  test('stats: counts by status in a window, the delivery rate of settled messages, only its own', async () => {
    const counted = await sender(t);
    const now = t.ctx.clock.now();
    const insert = (direction: string, status: string, count: number, createdAt: Date) =>
      t.ctx.db.query(
        `INSERT INTO messages (id, organization_id, direction, origin, from_number, to_number, body, segments,
                               encoding, status, status_updated_at, created_at)
         SELECT 'msg_stats' || substr(md5(random()::text), 1, 16), $1, $2, 'api', '+12025550100', $3, 'x', 1,
                'GSM-7', $4, $5, $5
           FROM generate_series(1, $6::int)`,
        [counted.id, direction, counted.number, status, createdAt, count],
      );
    const hourAgo = new Date(now.getTime() - 3600_000);
    await insert('outbound', 'delivered', 6, hourAgo);
    await insert('outbound', 'failed', 1, hourAgo);
    await insert('outbound', 'undelivered', 1, hourAgo);
    await insert('outbound', 'sent', 2, hourAgo);
    await insert('outbound', 'queued', 3, hourAgo);
    await insert('inbound', 'received', 4, hourAgo);
    await insert('outbound', 'delivered', 5, new Date(now.getTime() - 3 * 24 * 3600_000)); // outside the window
    await insert('outbound', 'delivered', 7, new Date(now.getTime() - 3 * 24 * 3600_000 + 60_000));

    const stats = (who: Sender, query: string) =>
      t.request('GET', `/api/v2/messages/stats${query}`, { apiKey: who.key });
    const day = await stats(counted, '');
    assert.equal(day.status, 200, day.text);
    assert.deepEqual(day.body.data.outbound, {
      total: 13,
      queued: 3,
      sent: 2,
      delivered: 6,
      failed: 1,
      undelivered: 1,
      cancelled: 0,
    });
    assert.deepEqual(day.body.data.inbound, { total: 4 });
    assert.equal(day.body.data.deliveryRate, 6 / 8);
    const untilMs = new Date(day.body.data.until).getTime();
    assert.ok(untilMs >= now.getTime() && untilMs < now.getTime() + 10_000, 'until defaults to now');
    assert.equal(new Date(day.body.data.since).getTime(), untilMs - 24 * 3600_000);

    // A window of its own: since inclusive, until exclusive.
    const since = new Date(now.getTime() - 3 * 24 * 3600_000 + 60_000).toISOString();
    const until = new Date(now.getTime() - 2 * 24 * 3600_000).toISOString();
    const old = await stats(counted, `?since=${since}&until=${until}`);
    assert.equal(old.body.data.outbound.delivered, 7);
    assert.equal(old.body.data.deliveryRate, 1);
    // Nothing settled: no rate rather than 0.
    const quiet = await stats(other, '');
    assert.equal(quiet.body.data.outbound.total, 0);
    assert.equal(quiet.body.data.deliveryRate, null);

    // Refusals: 400 in Shape B for a bad instant, a reversed or too long window.
    for (const query of [
      '?since=yesterday',
      `?since=${until}&until=${since}`,
      '?since=2026-01-01T00:00:00Z',
    ]) {
      const refused = await stats(counted, query);
      assert.equal(refused.status, 400, `${query}: ${refused.text}`);
      assert.ok(isShapeB(refused.body), refused.text);
    }
    // The portal twin answers the same.
    const portal = await t.request('GET', '/v2/portal/messages/stats', { token: await ownerToken(counted) });
    assert.equal(portal.status, 200, portal.text);
    assert.deepEqual(portal.body.data.outbound, day.body.data.outbound);
  });

  async function ownerToken(who: Sender): Promise<string> {
    const user = await createUser(t, { organizationIds: [who.id], role: 'member' });
    return signIn(t, user);
  }
});
