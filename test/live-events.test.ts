// Live events (issue 36, CONTRACT section 14, docs/live-events.md): GET /v2/portal/events streams the
// organization's events as server-sent events, each with its id, its type and the webhook payload; a stream
// resumes after Last-Event-ID; a stream held by one API instance receives what another instance recorded (the
// NOTIFY at commit); nothing of another organization arrives; the stream ends with its session.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { isShapeA, startTestApp, type TestApp } from './helpers/app.ts';
import { type LiveStream, openStream } from './helpers/live-stream.ts';
import { freshNumber, type Sender, send, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';

describe('GET /v2/portal/events', () => {
  let t: TestApp;
  let other: TestApp;
  let acme: Sender;
  let globex: Sender;
  let token: string;
  const streams: LiveStream[] = [];
  const open = async (app: TestApp, headers: Record<string, string> = {}, as = token) => {
    const stream = await openStream(app.url, as, headers);
    streams.push(stream);
    return stream;
  };
  const inbound = (app: TestApp, who: Sender, text: string, from = freshNumber()) =>
    app.admin('POST', '/test/carrier/inbound', { from, to: who.number, text });

  before(async () => {
    t = await startTestApp({ config: { liveHeartbeatSeconds: 1 } });
    // A second API instance on the same database, as a deployment behind a load balancer runs them.
    other = await startTestApp({ database: t.database });
    acme = await sender(t, { name: 'Acme' });
    globex = await sender(t, { name: 'Globex' });
    token = await signIn(t, await createUser(t, { role: 'member', organizationIds: [acme.id] }));
  });
  after(async () => {
    for (const stream of streams) stream.close();
    await other.close();
    await t.close();
  });

  test('an event recorded for the organization arrives with its id, its type and the webhook payload', async () => {
    const stream = await open(t);
    assert.equal(stream.status, 200);
    assert.match(stream.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.equal(stream.headers.get('cache-control'), 'no-store, no-transform');
    assert.ok(stream.headers.get('api-version'), 'API-Version, as on every answer');

    const from = freshNumber();
    assert.equal((await inbound(t, acme, 'Is the shop open?', from)).status, 201);
    const event = await stream.next((e) => e.event === 'message.received');
    assert.match(event.id, /^evt_/);
    const payload = JSON.parse(event.data);
    assert.deepEqual(Object.keys(payload).sort(), ['data', 'timestamp', 'type']);
    assert.equal(payload.type, 'message.received');
    assert.equal(payload.data.from, from);
    assert.equal(payload.data.body, 'Is the shop open?');
    // The same event as the outbox holds it, which is what a webhook receives.
    const [row] = await t.ctx.db.query<{ data: unknown }>('SELECT data FROM events WHERE id = $1', [
      event.id,
    ]);
    assert.deepEqual(payload.data, row!.data);
    assert.equal(stream.retry, 3000);
  });

  test("another organization's events never arrive", async () => {
    const stream = await open(t);
    await inbound(t, globex, 'for Globex only');
    await inbound(t, acme, 'for Acme');
    const event = await stream.next((e) => e.event === 'message.received');
    assert.equal(JSON.parse(event.data).data.body, 'for Acme');
    assert.ok(stream.seen.every((e) => !e.data.includes('for Globex only')));
  });

  test('a stream held by one instance receives what another instance recorded', async () => {
    const stream = await open(t);
    // Accepted by the other instance (its own HTTP server, its own connection to the database).
    const res = await send(other, acme, { to: freshNumber(), message: 'sent through the other instance' });
    assert.equal(res.status, 202);
    await inbound(other, acme, 'received by the other instance');
    const event = await stream.next(
      (e) => e.event === 'message.received' && e.data.includes('received by the other instance'),
    );
    assert.ok(event);
  });

  test('Last-Event-ID resumes: the events recorded after it, in order, once each', async () => {
    const first = await open(t);
    await inbound(t, acme, 'one');
    const one = await first.next((e) => e.data.includes('"one"'));
    first.close();
    await inbound(t, acme, 'two');
    await inbound(t, acme, 'three');
    const resumed = await open(t, { 'last-event-id': one.id });
    const two = await resumed.next((e) => e.event === 'message.received');
    const three = await resumed.next((e) => e.event === 'message.received');
    assert.deepEqual(
      [two, three].map((e) => JSON.parse(e.data).data.body),
      ['two', 'three'],
    );
    await inbound(t, acme, 'four');
    const four = await resumed.next((e) => e.event === 'message.received');
    assert.equal(JSON.parse(four.data).data.body, 'four');
    const ids = [two, three, four].map((e) => e.id);
    assert.equal(new Set(ids).size, 3);
    // An id that is not one of the organization's (another's, or gone) replays nothing and still streams.
    const [foreign] = await t.ctx.db.query<{ id: string }>(
      'SELECT id FROM events WHERE organization_id = $1 LIMIT 1',
      [globex.id],
    );
    const fresh = await open(t, { 'last-event-id': foreign!.id });
    await inbound(t, acme, 'five');
    const five = await fresh.next((e) => e.event === 'message.received');
    assert.equal(JSON.parse(five.data).data.body, 'five');
  });

  test('past 50 streams of one organization on one server: 429 TOO_MANY_STREAMS in Shape A', async () => {
    const crowd = await sender(t, { name: 'Crowded' });
    const user = await createUser(t, { role: 'member', organizationIds: [crowd.id] });
    const session = await signIn(t, user);
    const held = await Promise.all(Array.from({ length: 50 }, () => open(t, {}, session)));
    assert.ok(held.every((stream) => stream.status === 200));
    const refused = await open(t, {}, session);
    assert.equal(refused.status, 429);
    assert.ok(isShapeA(refused.refusal!));
    assert.equal(refused.refusal!.code, 'TOO_MANY_STREAMS');
    // The other instance holds its own: the bound is per server, not a shared count.
    assert.equal((await open(other, {}, await signIn(other, user))).status, 200);
    // A stream that ends frees its place.
    held[0]!.close();
    await held[0]!.ended;
    for (let tries = 0; ; tries++) {
      const again = await open(t, {}, session);
      if (again.status === 200) break;
      assert.ok(tries < 50, 'a closed stream never freed its place');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });

  test('without a session: 401 in Shape A, and no stream', async () => {
    const res = await fetch(`${t.url}/v2/portal/events`);
    assert.equal(res.status, 401);
    assert.ok(isShapeA(await res.json()));
  });

  test('the stream ends when its session is signed out', async () => {
    const user = await createUser(t, { role: 'member', organizationIds: [acme.id] });
    const session = await signIn(t, user);
    const stream = await open(t, {}, session);
    assert.equal(stream.status, 200);
    const out = await t.request('POST', '/v2/portal/auth/logout', { token: session });
    assert.ok(out.status < 300, `logout: ${out.status}`);
    // At the next heartbeat (every second in this test) the session is checked again and the stream ends.
    await stream.ended;
    assert.ok(stream.comments >= 1, 'a keep-alive comment came first');
  });
});

test('the console listens for every event type of the catalog (an EventSource hears only the types it names)', async () => {
  const source = readFileSync(new URL('../console/src/live.ts', import.meta.url), 'utf8');
  const listed = source.slice(
    source.indexOf('const TYPES = ['),
    source.indexOf('];', source.indexOf('const TYPES = [')),
  );
  const named = new Set([...listed.matchAll(/'([a-z_.]+)'/g)].map((match) => match[1]));
  const t = await startTestApp();
  try {
    const catalog = (
      await t.request('GET', '/api/webhooks/events', { token: await signIn(t, await createUser(t)) })
    ).body;
    const types: string[] = (catalog.data ?? catalog).map((entry: { type: string }) => entry.type);
    assert.ok(types.length > 20, `the catalog lists ${types.length} types`);
    // webhook.test goes to one endpoint only, never to the outbox the stream reads.
    const missing = types.filter((type) => type !== 'webhook.test' && !named.has(type));
    assert.deepEqual(missing, [], 'event types the console does not listen for');
  } finally {
    await t.close();
  }
});
