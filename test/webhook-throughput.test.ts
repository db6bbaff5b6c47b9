// Webhook delivery at the rate events are made (issue 38): jobs claimed together share their statements
// (GroupBatch: one read of their events, one fan-out, one read of their deliveries, one record of their
// successes), connections to a receiver are kept alive and reused (counted at the receiver), and an
// endpoint's concurrency cap grows while its receiver keeps up and halves, once per round, on 429 and 503,
// a Retry-After also holding every attempt to it back until then. Statements are counted, never timed.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { ContactOptedOut } from '../src/modules/contacts/events.ts';
import { ENDPOINT_CONCURRENCY } from '../src/modules/webhooks/delivery.ts';
import {
  EndpointPace,
  MAX_ENDPOINT_CONCURRENCY,
  SLOW_ANSWER_MS,
} from '../src/modules/webhooks/endpoint-pace.ts';
import { WebhookTransport } from '../src/modules/webhooks/transport.ts';
import { GroupBatch } from '../src/platform/db/group-batch.ts';
import { RetryAt } from '../src/platform/jobs.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createUser } from './helpers/portal.ts';

/** A receiver answering each POST with `answer()`'s status (and headers), counting requests and connections. */
async function startCountingReceiver(answer: () => { status: number; headers?: Record<string, string> }) {
  const state = { received: 0, connections: 0 };
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      state.received++;
      const { status, headers } = answer();
      response.writeHead(status, headers).end();
    });
  });
  server.on('connection', () => state.connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    state,
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('GroupBatch', () => {
  test('calls of one turn share a statement; calls made while it runs share the next; a failure fails its own batch', async () => {
    const batches: number[][] = [];
    let failNext = false;
    let release: () => void = () => {};
    const batch = new GroupBatch<number, number>({
      run: async (items) => {
        batches.push(items);
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        if (failNext) throw new Error('lost');
        return items.map((item) => item * 10);
      },
    });
    const first = [1, 2, 3].map((n) => batch.add(n));
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(batches, [[1, 2, 3]]);
    const second = [4, 5].map((n) => batch.add(n));
    release();
    assert.deepEqual(await Promise.all(first), [10, 20, 30]);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(batches, [
      [1, 2, 3],
      [4, 5],
    ]);
    failNext = true;
    release();
    await assert.rejects(Promise.all(second), /lost/);
  });

  test('a lone call is written after its turn; after a batch of several, the next waits lingerMs for company', async () => {
    const batches: number[][] = [];
    const batch = new GroupBatch<number>({
      run: async (items) => {
        batches.push(items);
        return items.map(() => undefined);
      },
      lingerMs: 20,
    });
    // Quiet: one call, written after its turn without waiting.
    const lone = batch.add(1);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(batches, [[1]]);
    await lone;
    // Busy: calls of one turn (written together), then calls a moment apart, gathered into one batch.
    await Promise.all([batch.add(2), batch.add(3)]);
    const later = [batch.add(4)];
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(batches.length, 2, 'the call after a batch of several waits');
    later.push(batch.add(5));
    await Promise.all(later);
    assert.deepEqual(batches, [[1], [2, 3], [4, 5]]);
  });
});

describe('webhook throughput', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ config: { workerConcurrency: 16 } });
  });
  after(() => t.close());

  let phoneCounter = 0;
  async function endpointWithEvents(url: string, count: number) {
    return (await endpointsWithEvents(url, 1, count))[0]!;
  }
  /** `endpoints` endpoints of one organization, each subscribed to the `count` events recorded. */
  async function endpointsWithEvents(url: string, endpoints: number, count: number) {
    const { organizationId } = await createUser(t, { role: 'owner' });
    const ids: string[] = [];
    for (let n = 0; n < endpoints; n++) {
      const hook = await t.ctx.webhooks.create(organizationId, { url, events: ['contact.opted_out'] });
      ids.push(hook.endpoint.id);
    }
    for (let n = 0; n < count; n++) {
      await t.ctx.db.transaction((tx) =>
        t.ctx.events.record(tx, ContactOptedOut, {
          organizationId,
          data: {
            contactId: null,
            phone: `+1202555${String(phoneCounter++).padStart(4, '0')}`,
            method: 'api',
            reason: null,
            optedOutAt: t.ctx.clock.now().toISOString(),
          },
        }),
      );
    }
    return ids;
  }

  const statuses = async (endpointId: string) => {
    const rows = await t.ctx.db.query<{ status: string; count: number }>(
      'SELECT status, count(*)::int AS count FROM webhook_deliveries WHERE endpoint_id = $1 GROUP BY status',
      [endpointId],
    );
    return Object.fromEntries(rows.map((row) => [row.status, row.count]));
  };
  const capOf = async (endpointId: string) => {
    const [row] = await t.ctx.db.query<{ cap: number; paused_until: Date | null }>(
      "SELECT cap, paused_until FROM job_key_caps WHERE queue = 'webhooks.deliver' AND concurrency_key = $1",
      [endpointId],
    );
    return row;
  };

  test('events dispatched together fan out, and deliveries run together read and record, in shared statements', async () => {
    const receiver = await startCountingReceiver(() => ({ status: 204 }));
    const counts = { fanOuts: 0, eventReads: 0, marks: 0, deliveryReads: 0, successRecords: 0 };
    const query = t.ctx.db.query;
    t.ctx.db.query = ((sql: string, params?: unknown[]) => {
      if (sql.includes('INSERT INTO webhook_deliveries')) counts.fanOuts++;
      if (sql.includes('SELECT * FROM events WHERE id = ANY')) counts.eventReads++;
      if (sql.includes('UPDATE events SET dispatched_at')) counts.marks++;
      if (sql.includes('FROM webhook_deliveries d JOIN webhook_endpoints')) counts.deliveryReads++;
      if (sql.includes('INSERT INTO webhook_attempts') && sql.includes('unnest')) counts.successRecords++;
      return query.call(t.ctx.db, sql, params);
    }) as typeof query;
    try {
      const events = 4;
      const endpoints = 4;
      const endpointIds = await endpointsWithEvents(receiver.url, endpoints, events);
      await t.ctx.jobs.drain();
      for (const endpointId of endpointIds) {
        assert.deepEqual(await statuses(endpointId), { succeeded: events });
      }
      const deliveries = events * endpoints;
      assert.equal(receiver.state.received, deliveries, 'each delivery was sent once');
      console.log(`# ${events} events, ${deliveries} deliveries: ${JSON.stringify(counts)} statements`);
      // The dispatch jobs, claimed at once, read their events, fan out and are marked in one statement each.
      assert.equal(counts.eventReads, 1);
      assert.equal(counts.fanOuts, 1);
      assert.equal(counts.marks, 1);
      // Delivery jobs claimed together read their deliveries together. Successes are recorded together when
      // they end while a record is being written (how many do depends on the engine's speed), never more
      // than one statement each.
      assert.ok(counts.deliveryReads < deliveries, JSON.stringify(counts));
      assert.ok(counts.successRecords <= deliveries, JSON.stringify(counts));
    } finally {
      t.ctx.db.query = query;
      await receiver.close();
    }
  });

  test('connections are kept alive: one transport reuses its connection, deliveries open far fewer than they send', async () => {
    const receiver = await startCountingReceiver(() => ({ status: 204 }));
    try {
      const transport = new WebhookTransport({ guarded: false });
      for (let n = 0; n < 5; n++) {
        const result = await transport.post(receiver.url, {}, '{}');
        assert.equal(result.statusCode, 204);
      }
      assert.equal(receiver.state.connections, 1, 'five POSTs one after another, over one connection');

      receiver.state.connections = 0;
      receiver.state.received = 0;
      const events = 24;
      const endpointId = await endpointWithEvents(receiver.url, events);
      await t.ctx.jobs.drain();
      assert.deepEqual(await statuses(endpointId), { succeeded: events });
      console.log(`# ${events} deliveries over ${receiver.state.connections} connections`);
      assert.equal(receiver.state.received, events);
      assert.ok(
        receiver.state.connections * 2 <= events,
        `${receiver.state.connections} connections for ${events} deliveries`,
      );
      // A receiver that keeps up earns a larger cap.
      assert.ok((await capOf(endpointId))!.cap > ENDPOINT_CONCURRENCY);
    } finally {
      await receiver.close();
    }
  });

  test('an attempt taken up while its endpoint is paused (held for a slot, or claimed as the pause was written) waits it out unsent', async () => {
    const receiver = await startCountingReceiver(() => ({ status: 204 }));
    const now = t.ctx.clock.freeze();
    try {
      const endpointId = await endpointWithEvents(receiver.url, 1);
      const until = new Date(now.getTime() + 30_000);
      await t.ctx.jobs.adjustKeyCap('webhooks.deliver', endpointId, { pause: { until } });
      await t.ctx.jobs.drain(); // the event fans out; its delivery's job is not claimed while the key is paused
      const [delivery] = await t.ctx.db.query<{ id: string }>(
        'SELECT id FROM webhook_deliveries WHERE endpoint_id = $1',
        [endpointId],
      );
      // The attempt itself, as a job claimed before the pause would make it.
      await assert.rejects(t.ctx.webhookDelivery.attempt({ deliveryId: delivery!.id }), (error: unknown) => {
        assert.ok(error instanceof RetryAt);
        assert.equal(error.at.getTime(), until.getTime());
        return true;
      });
      assert.equal(receiver.state.received, 0, 'nothing sent during the pause');
      t.ctx.clock.advance(31);
      await t.ctx.jobs.drain();
      assert.deepEqual(await statuses(endpointId), { succeeded: 1 });
      assert.equal(receiver.state.received, 1);
    } finally {
      t.ctx.clock.thaw();
      await receiver.close();
    }
  });

  test('a 429 with Retry-After halves the cap once and holds every attempt to the endpoint back until then', async () => {
    let busy = true;
    const receiver = await startCountingReceiver(() =>
      busy ? { status: 429, headers: { 'retry-after': '120' } } : { status: 204 },
    );
    const now = t.ctx.clock.freeze();
    try {
      const events = ENDPOINT_CONCURRENCY + 2;
      const endpointId = await endpointWithEvents(receiver.url, events);
      await t.ctx.jobs.drain();
      // The first round (the cap's worth) was refused; the rest waits out the pause unsent.
      assert.equal(receiver.state.received, ENDPOINT_CONCURRENCY);
      const cap = (await capOf(endpointId))!;
      assert.equal(cap.cap, ENDPOINT_CONCURRENCY / 2, 'halved once for the whole round');
      assert.equal(cap.paused_until!.getTime(), now.getTime() + 120_000);
      const [{ attempted }] = await t.ctx.db.query<{ attempted: number }>(
        'SELECT count(*)::int AS attempted FROM webhook_deliveries WHERE endpoint_id = $1 AND attempts > 0',
        [endpointId],
      );
      assert.equal(attempted, ENDPOINT_CONCURRENCY);
      // The refused deliveries wait for their own Retry-After too (the retry schedule's rule, unchanged).
      const [{ soonest }] = await t.ctx.db.query<{ soonest: Date }>(
        'SELECT min(next_attempt_at) AS soonest FROM webhook_deliveries WHERE endpoint_id = $1 AND attempts > 0',
        [endpointId],
      );
      assert.ok(soonest.getTime() >= now.getTime() + 120_000);

      t.ctx.clock.advance(60);
      await t.ctx.jobs.drain();
      assert.equal(receiver.state.received, ENDPOINT_CONCURRENCY, 'nothing is sent while the pause lasts');

      busy = false;
      t.ctx.clock.advance(61);
      await t.ctx.jobs.drain();
      assert.deepEqual(await statuses(endpointId), { succeeded: events });
      assert.equal(receiver.state.received, ENDPOINT_CONCURRENCY + events);
    } finally {
      t.ctx.clock.thaw();
      await receiver.close();
    }
  });

  test('a 503 without Retry-After halves the cap and pauses nothing; retries keep their schedule', async () => {
    const receiver = await startCountingReceiver(() => ({ status: 503 }));
    const now = t.ctx.clock.freeze();
    try {
      const endpointId = await endpointWithEvents(receiver.url, ENDPOINT_CONCURRENCY);
      await t.ctx.jobs.drain();
      assert.equal(receiver.state.received, ENDPOINT_CONCURRENCY);
      const cap = (await capOf(endpointId))!;
      assert.equal(cap.cap, ENDPOINT_CONCURRENCY / 2);
      assert.equal(cap.paused_until, null);
      const rows = await t.ctx.db.query<{ next_attempt_at: Date }>(
        'SELECT next_attempt_at FROM webhook_deliveries WHERE endpoint_id = $1',
        [endpointId],
      );
      for (const row of rows) {
        const delay = row.next_attempt_at.getTime() - now.getTime();
        assert.ok(
          delay >= 4500 && delay <= 5500,
          `the second attempt is due 5 s ± 10% later, not ${delay} ms`,
        );
      }
      // Another URL is another receiver: the endpoint starts over at the first cap.
      const [{ organization_id }] = await t.ctx.db.query<{ organization_id: string }>(
        'SELECT organization_id FROM webhook_endpoints WHERE id = $1',
        [endpointId],
      );
      await t.ctx.webhooks.update(organization_id, endpointId, { url: `${receiver.url}/moved` });
      assert.equal(await capOf(endpointId), undefined);
    } finally {
      t.ctx.clock.thaw();
      await receiver.close();
    }
  });

  test('a cap doubles while the endpoint was never halved (slow start), then grows by one', async () => {
    const pace = new EndpointPace(t.ctx.jobs, 'webhooks.deliver', ENDPOINT_CONCURRENCY);
    const endpointId = `wh_pace_${phoneCounter++}`;
    const answer = (statusCode: number, durationMs = 20) => ({
      statusCode,
      durationMs,
      error: null,
      responseExcerpt: null,
      retryAfter: null,
    });
    const now = t.ctx.clock.nowMs();
    /** `count` quick successes in a row, then the cap stored for the endpoint. */
    const quick = async (count: number) => {
      for (let i = 0; i < count; i++)
        await pace.observe(endpointId, pace.roundOf(endpointId), answer(200), now);
      return (await capOf(endpointId))?.cap;
    };
    assert.equal(ENDPOINT_CONCURRENCY, 4);
    assert.equal(MAX_ENDPOINT_CONCURRENCY, 32);
    assert.equal(await quick(3), undefined, 'three quick successes of a cap of 4 move nothing');
    assert.equal(await quick(1), 8, "the cap's worth doubles it");
    assert.equal(await quick(8), 16);
    assert.equal(await quick(16), 32);
    assert.equal(await quick(32), 32, 'never past the top');
    await pace.observe(endpointId, pace.roundOf(endpointId), answer(503), now);
    assert.equal((await capOf(endpointId))!.cap, 16, 'a 503 halves it');
    assert.equal(await quick(15), 16);
    assert.equal(await quick(1), 17, 'after a halving it grows by one, as TCP does past its slow start');
    assert.equal(await quick(17), 18);
  });

  test('a halving by one worker ends the ramp for every worker', async () => {
    // Two workers' paces for one endpoint: each counts its own successes, the cap and its ramp are shared.
    const first = new EndpointPace(t.ctx.jobs, 'webhooks.deliver', ENDPOINT_CONCURRENCY);
    const second = new EndpointPace(t.ctx.jobs, 'webhooks.deliver', ENDPOINT_CONCURRENCY);
    const endpointId = `wh_pace_${phoneCounter++}`;
    const answer = (statusCode: number) => ({
      statusCode,
      durationMs: 20,
      error: null,
      responseExcerpt: null,
      retryAfter: null,
    });
    const now = t.ctx.clock.nowMs();
    const quick = async (pace: EndpointPace, count: number) => {
      for (let i = 0; i < count; i++)
        await pace.observe(endpointId, pace.roundOf(endpointId), answer(200), now);
      return (await capOf(endpointId))?.cap;
    };
    assert.equal(await quick(first, 4), 8, 'the first worker doubles it');
    assert.equal(await quick(second, 4), 16, 'the second, which saw no halving either, doubles it too');
    await first.observe(endpointId, first.roundOf(endpointId), answer(429), now);
    assert.equal((await capOf(endpointId))!.cap, 8);
    // The second worker has seen no 429 (its view of the cap is still 16), but the ramp is over for the key.
    assert.equal(await quick(second, 16), 9, 'one more, not twice as many');
  });

  test('slowness halves the cap once per round: a slow 2xx, then a timeout in the next round; a 2xx under 5 s holds it', async () => {
    const pace = new EndpointPace(t.ctx.jobs, 'webhooks.deliver', ENDPOINT_CONCURRENCY);
    const endpointId = `wh_pace_${phoneCounter++}`;
    const answer = (statusCode: number | null, durationMs: number, error: string | null = null) => ({
      statusCode,
      durationMs,
      error,
      responseExcerpt: null,
      retryAfter: null,
    });
    const now = t.ctx.clock.nowMs();
    const round = pace.roundOf(endpointId);
    await pace.observe(endpointId, round, answer(200, SLOW_ANSWER_MS + 1000), now);
    assert.equal((await capOf(endpointId))!.cap, ENDPOINT_CONCURRENCY / 2);
    // The other attempts of that round were as slow: they answered for the same overload.
    await pace.observe(endpointId, round, answer(200, SLOW_ANSWER_MS + 2000), now);
    assert.equal((await capOf(endpointId))!.cap, ENDPOINT_CONCURRENCY / 2);
    // A 2xx that is not quick (between 1 and 5 s) neither grows nor halves it.
    await pace.observe(endpointId, pace.roundOf(endpointId), answer(204, 2000), now);
    assert.equal((await capOf(endpointId))!.cap, ENDPOINT_CONCURRENCY / 2);
    await pace.observe(
      endpointId,
      pace.roundOf(endpointId),
      answer(null, 15_000, 'Timed out after 15 s waiting for the answer'),
      now,
    );
    assert.equal((await capOf(endpointId))!.cap, 1);
    assert.equal(pace.capOf(endpointId), 1);
    assert.equal((await capOf(endpointId))!.paused_until, null);
  });
});
