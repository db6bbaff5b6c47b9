// Data exports (CONTRACT section 11, docs/exports.md) over a real socket: 100,000 messages exported as JSON
// Lines with the build's heap kept flat, the file matching the list endpoint row for row; CSV with a header,
// quoting and formula-safe cells; 404 until completed; 10 per hour per organization (the 11th: 429 with
// RateLimit-* and Retry-After, the window moving on the test clock) where refusals take nothing; filters
// refused like the list endpoint refuses them; the portal twin; export.completed; gone after 7 days.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import {
  assertRefusedB,
  createOrganization,
  isShapeA,
  isShapeB,
  startTestApp,
  type TestApp,
} from './helpers/app.ts';
import { type Sender, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';

const MESSAGES = 100_000;
// A full collection on demand, to read the live heap rather than garbage not yet collected.
v8.setFlagsFromString('--expose-gc');
const collectGarbage = vm.runInNewContext('gc') as () => void;

describe('data exports', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const api = (who: Sender, method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: who.key, body });

  async function exportOf(who: Sender, body: unknown): Promise<string> {
    const created = await api(who, 'POST', '/exports', body);
    assert.equal(created.status, 202, created.text);
    assert.equal(created.body.data.status, 'queued');
    return created.body.data.id;
  }

  async function download(who: Sender, id: string): Promise<{ res: globalThis.Response; text: string }> {
    const res = await fetch(`${t.url}/api/v2/exports/${id}/download`, { headers: { 'x-api-key': who.key } });
    return { res, text: await res.text() };
  }

  test(`${MESSAGES.toLocaleString('en')} messages: built with a flat heap, the file is the list endpoint row for row`, async () => {
    const who = await sender(t);
    await t.ctx.db.query(
      `INSERT INTO messages (id, organization_id, direction, origin, from_number, to_number, body, segments,
                             encoding, status, status_updated_at, created_at)
       SELECT 'msg_x' || lpad(g::text, 7, '0'), $1, 'outbound', 'api', $2, '+12025550100',
              'Export row ' || g || ' with some text to make the file a realistic size', 1, 'GSM-7',
              'delivered', $3, $3::timestamptz - ((g / 7) * interval '1 second')
         FROM generate_series(1, $4::int) AS g`,
      [who.id, who.number, t.ctx.clock.now(), MESSAGES],
    );
    // As autovacuum would after a bulk load (PGlite has none): the planner learns the table is large.
    await t.ctx.db.query('ANALYZE messages');
    const id = await exportOf(who, { resource: 'messages', format: 'jsonl' });
    const early = await download(who, id);
    assert.equal(early.res.status, 404, 'no file until it is built');
    assert.ok(isShapeB(JSON.parse(early.text)));

    // Built by the job, sampling the live heap (after a full collection) as it goes: holding the file, or
    // its rows, would grow it by about the file's size.
    const live = () => {
      collectGarbage();
      return process.memoryUsage().heapUsed;
    };
    const start = live();
    let peak = start;
    const sampler = setInterval(() => {
      peak = Math.max(peak, live());
    }, 1_000);
    await t.ctx.jobs.drain();
    clearInterval(sampler);
    peak = Math.max(peak, live());
    const done = (await api(who, 'GET', `/exports/${id}`)).body.data;
    assert.equal(done.status, 'completed', JSON.stringify(done));
    assert.equal(done.rowCount, MESSAGES);
    assert.ok(done.sizeBytes > 20_000_000, `a file of ${done.sizeBytes} bytes`);
    const growth = peak - start;
    assert.ok(
      growth < done.sizeBytes / 3,
      `heap grew ${growth} bytes building a ${done.sizeBytes}-byte file`,
    );

    // The download, streamed, against the list endpoint walked page by page with its cursor.
    const res = await fetch(`${t.url}/api/v2/exports/${id}/download`, { headers: { 'x-api-key': who.key } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/x-ndjson/);
    assert.equal(Number(res.headers.get('content-length')), done.sizeBytes);
    assert.match(
      res.headers.get('content-disposition') ?? '',
      new RegExp(`^attachment; filename="messages-\\d{4}-\\d{2}-\\d{2}-${id}\\.jsonl"$`),
    );
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffered = '';
    let cursor = '';
    let listed: unknown[] = [];
    let compared = 0;
    for (;;) {
      const { value, done: finished } = await reader.read();
      if (value) buffered += value;
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        if (listed.length === 0) {
          const page = await api(who, 'GET', `/messages?limit=100&cursor=${cursor}`);
          listed = page.body.data;
          cursor = page.body.next_cursor ?? '';
          assert.ok(listed.length > 0, `the list ended before row ${compared + 1}`);
        }
        assert.deepEqual(JSON.parse(line), listed.shift(), `row ${compared + 1}`);
        compared += 1;
      }
      if (finished) break;
    }
    assert.equal(buffered, '');
    assert.equal(compared, MESSAGES);
    assert.equal(listed.length, 0);
    assert.equal(cursor, '', 'the list has no more rows than the file');

    const [event] = await t.ctx.db.query<{ data: Record<string, unknown> }>(
      `SELECT data FROM events WHERE type = 'export.completed' AND data->>'id' = $1`,
      [id],
    );
    assert.equal(event?.data.rowCount, MESSAGES);
  });

  test('CSV: a header, RFC 4180 quoting, formula-safe cells; filters as the list takes them', async () => {
    const who = await sender(t);
    for (const contact of [
      { phone: '+12025550121', firstName: '=HYPERLINK("http://evil")', company: 'Acme, "Inc"' },
      { phone: '+12025550122', firstName: 'Ada', lastName: 'Line\nbreak' },
    ]) {
      assert.equal((await api(who, 'POST', '/contacts', contact)).status, 201);
    }
    await api(who, 'POST', '/contacts', { phone: '+12025550123', firstName: 'Gone' });
    const gone = (await api(who, 'GET', '/contacts?search=Gone')).body.data[0];
    await api(who, 'POST', `/contacts/${gone.id}/opt-out`);

    const id = await exportOf(who, { resource: 'contacts', format: 'csv', filters: { optedOut: false } });
    await t.ctx.jobs.drain();
    const { res, text } = await download(who, id);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/csv/);
    const lines = text.split('\r\n');
    assert.match(lines[0]!, /^id,phone,firstName,lastName,fullName,email,company,/);
    assert.equal(lines.at(-1), '', 'ends with a line break');
    // The line break inside a quoted cell is \n, not the row separator \r\n: header, two rows, final break.
    assert.equal(lines.length, 1 + 2 + 1, text);
    assert.ok(text.includes(`"'=HYPERLINK(""http://evil"")"`), 'a formula is defused and quoted');
    assert.ok(text.includes('"Acme, ""Inc"""'), text);
    assert.ok(text.includes('"Line\nbreak"'));
    assert.ok(text.includes(',+12025550121,'), 'phone numbers are left as they are');
    assert.ok(!text.includes('Gone'), 'the optedOut filter applied');
  });

  test('10 exports an hour per organization; refusals take none; the window moves on the test clock', async () => {
    const who = await sender(t);
    const other = await sender(t);
    // Refused requests first: none of them takes one of the ten.
    const campaignElsewhere = (
      await api(other, 'POST', '/campaigns', {
        name: 'x',
        message: 'hi',
        contactListIds: [(await api(other, 'POST', '/contact-lists', { name: 'l' })).body.data.id],
      })
    ).body.data.id;
    for (const [body, status] of [
      [{ resource: 'messages', format: 'xml' }, 400],
      [{ resource: 'letters', format: 'csv' }, 400],
      [{ resource: 'messages', format: 'csv', filters: { optedOut: true } }, 400],
      [{ resource: 'messages', format: 'csv', filters: { since: 'yesterday' } }, 400],
      [{ resource: 'messages', format: 'csv', filters: { status: 'lost' } }, 400],
      [{ resource: 'messages', format: 'csv', filters: { colour: 'red' } }, 400],
      [{ resource: 'campaign_recipients', format: 'csv' }, 400],
      [{ resource: 'campaign_recipients', format: 'csv', filters: { campaignId: campaignElsewhere } }, 404],
    ] as const) {
      const refused = await api(who, 'POST', '/exports', body);
      assertRefusedB(refused, status, undefined);
    }
    assert.equal((await api(who, 'GET', '/exports')).body.pagination.total, 0, 'nothing was made');

    // The window is read on the test clock, held still: on a busy machine a second of real time between the
    // 11th request and the one a second before Retry-After let that one through.
    t.ctx.clock.freeze();
    try {
      for (let n = 1; n <= 10; n++) {
        const created = await api(who, 'POST', '/exports', { resource: 'contacts', format: 'csv' });
        assert.equal(created.status, 202, `export ${n}: ${created.text}`);
        assert.equal(created.headers.get('ratelimit-limit'), '10');
        assert.equal(created.headers.get('ratelimit-remaining'), String(10 - n));
      }
      const eleventh = await api(who, 'POST', '/exports', { resource: 'contacts', format: 'csv' });
      assertRefusedB(eleventh, 429, 'RATE_LIMITED');
      assert.equal(eleventh.headers.get('ratelimit-limit'), '10');
      assert.equal(eleventh.headers.get('ratelimit-remaining'), '0');
      const retryAfter = Number(eleventh.headers.get('retry-after'));
      assert.ok(retryAfter > 0 && retryAfter <= 3600, `Retry-After ${retryAfter}`);
      assert.equal(Number(eleventh.headers.get('ratelimit-reset')), retryAfter);
      assert.equal((await api(who, 'GET', '/exports')).body.pagination.total, 10, 'the 11th made nothing');
      // Another organization has its own ten.
      assert.equal(
        (await api(other, 'POST', '/exports', { resource: 'contacts', format: 'csv' })).status,
        202,
      );

      // A second before Retry-After it is still refused; at it, allowed.
      await t.admin('POST', '/test/clock', { advanceSeconds: retryAfter - 1 });
      assertRefusedB(
        await api(who, 'POST', '/exports', { resource: 'contacts', format: 'csv' }),
        429,
        'RATE_LIMITED',
      );
      await t.admin('POST', '/test/clock', { advanceSeconds: 1 });
      const later = await api(who, 'POST', '/exports', { resource: 'contacts', format: 'jsonl' });
      assert.equal(later.status, 202, later.text);
    } finally {
      t.ctx.clock.thaw();
    }
  });

  test('the portal twin, Shape A; a member may export; another organization gets 404; gone after 7 days', async () => {
    const who = await sender(t);
    const org = (await api(who, 'GET', '/me')).body.data.organization.id;
    const member = await signIn(t, await createUser(t, { organizationIds: [org], role: 'member' }));
    const created = await t.request('POST', '/v2/portal/exports', {
      token: member,
      body: { resource: 'calls', format: 'csv', filters: { since: '2026-01-01T00:00:00Z' } },
    });
    assert.equal(created.status, 202, created.text);
    const id = created.body.data.id;
    const early = await t.request('GET', `/v2/portal/exports/${id}/download`, { token: member });
    assert.equal(early.status, 404);
    assert.ok(isShapeA(early.body), early.text);
    await t.ctx.jobs.drain();
    const file = await t.request('GET', `/v2/portal/exports/${id}/download`, { token: member });
    assert.equal(file.status, 200, file.text);
    assert.equal(file.text, '', 'no calls: an empty file');

    const stranger = await sender(t);
    for (const path of [`/exports/${id}`, `/exports/${id}/download`]) {
      assertRefusedB(await api(stranger, 'GET', path), 404, undefined);
    }
    const strangerOrg = await createOrganization(t);
    const strangerUser = await signIn(t, await createUser(t, { organizationIds: [strangerOrg.id] }));
    assert.equal((await t.request('GET', `/v2/portal/exports/${id}`, { token: strangerUser })).status, 404);

    await t.admin('POST', '/test/clock', { advanceSeconds: 7 * 24 * 3600 });
    assertRefusedB(await api(who, 'GET', `/exports/${id}`), 404, undefined);
    assertRefusedB(await api(who, 'GET', `/exports/${id}/download`), 404, undefined);
    await t.ctx.retention.run();
    const [{ n }] = await t.ctx.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM export_chunks c JOIN exports e ON e.id = c.export_id WHERE e.id = $1',
      [id],
    );
    assert.equal(n, 0);
    const rows = await t.ctx.db.query('SELECT 1 FROM exports WHERE id = $1', [id]);
    assert.equal(rows.length, 0, 'removed by retention');
  });
});
