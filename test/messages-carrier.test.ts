// The simulated carrier behind the durable job queue: queued → sent → delivered/failed/undelivered, events
// in the outbox for each, pacing per sending number by type (excess queued, never dropped), receipts driven
// by the test endpoint in test and automatic in development, the magic numbers, and a STOP that arrives
// while a message waits in the queue.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MAGIC_SUFFIXES } from '../src/carriers/simulated.ts';
import { DISPATCH_ATTEMPTS } from '../src/modules/messaging/service.ts';
import { isShapeA, startTestApp, type TestApp } from './helpers/app.ts';
import { countRows, freshNumber, type Sender, send, sender } from './helpers/messaging.ts';

describe('the simulated carrier', () => {
  let t: TestApp;
  let acme: Sender;
  before(async () => {
    t = await startTestApp();
    acme = await sender(t, {}, { type: 'toll_free' });
  });
  after(() => t.close());

  const nextMinute = () => t.ctx.clock.advance(61);
  const read = async (id: string) =>
    (await t.request('GET', `/api/v2/messages/${id}`, { apiKey: acme.key })).body.data;
  const eventsOf = (id: string) =>
    t.ctx.db.query<{ type: string }>(
      "SELECT type FROM events WHERE data->>'id' = $1 ORDER BY created_at, id",
      [id],
    );
  /** Runs every job due within the next `seconds` of the test clock. */
  async function runJobs(seconds = 5) {
    t.ctx.clock.advance(seconds);
    await t.ctx.jobs.drain();
  }
  const receipt = (messageId: string, status: string) =>
    t.admin('POST', '/test/carrier/receipts', { messageId, status });

  test('queued → sent by the dispatch job → delivered by a receipt, with message.sent and message.delivered', async () => {
    nextMinute();
    const res = await send(t, acme, { to: freshNumber(), message: 'track me' });
    const id = res.body.data.id;
    assert.equal((await read(id)).status, 'queued');
    await runJobs();
    const sent = await read(id);
    assert.equal(sent.status, 'sent');
    assert.ok(sent.sentAt);
    assert.equal(sent.receiptState, 'awaiting_receipt');
    // In test the carrier reports nothing by itself.
    await runJobs(3600);
    assert.equal((await read(id)).status, 'sent');
    const delivered = await receipt(id, 'delivered');
    assert.equal(delivered.status, 200, delivered.text);
    assert.equal(delivered.body.data.status, 'delivered');
    assert.equal(delivered.body.data.receiptState, null);
    assert.ok(delivered.body.data.deliveredAt);
    assert.equal((await read(id)).status, 'delivered');
    assert.deepEqual(
      (await eventsOf(id)).map((e) => e.type),
      ['message.sent', 'message.delivered'],
    );
    // The same receipt again is harmless; a contradicting one is a 409.
    assert.equal((await receipt(id, 'delivered')).status, 200);
    const contradiction = await receipt(id, 'failed');
    assert.equal(contradiction.status, 409);
    assert.ok(isShapeA(contradiction.body));
  });

  for (const status of ['failed', 'undelivered'] as const) {
    test(`${status === 'failed' ? 'a' : 'an'} ${status} receipt sets the status and an error, with message.${status}`, async () => {
      nextMinute();
      const id = (await send(t, acme, { to: freshNumber(), message: 'x' })).body.data.id;
      await runJobs();
      const res = await receipt(id, status);
      assert.equal(res.status, 200);
      const message = await read(id);
      assert.equal(message.status, status);
      assert.equal(message.errorCode, status === 'failed' ? 'carrier_failed' : 'carrier_undelivered');
      assert.equal(message.deliveredAt, null);
      assert.deepEqual(
        (await eventsOf(id)).map((e) => e.type),
        ['message.sent', `message.${status}`],
      );
    });
  }

  test('a sent message without receipt is awaiting_receipt for 72 hours, then no_receipt', async () => {
    nextMinute();
    const id = (await send(t, acme, { to: freshNumber(), message: 'x' })).body.data.id;
    assert.equal((await read(id)).receiptState, null);
    await runJobs();
    const sentAt = Date.parse((await read(id)).sentAt);
    t.ctx.clock.set(new Date(sentAt + 72 * 3600_000 - 1000));
    assert.equal((await read(id)).receiptState, 'awaiting_receipt');
    t.ctx.clock.set(new Date(sentAt + 72 * 3600_000));
    assert.equal((await read(id)).receiptState, 'no_receipt');
    // A late receipt still counts.
    assert.equal((await receipt(id, 'delivered')).body.data.receiptState, null);
  });

  test('receipts: a queued message is 409, an unknown id 404, a bad status 400', async () => {
    nextMinute();
    const id = (await send(t, acme, { to: freshNumber(), message: 'x' })).body.data.id;
    assert.equal((await receipt(id, 'delivered')).status, 409);
    assert.equal((await receipt('msg_nope', 'delivered')).status, 404);
    assert.equal((await receipt(id, 'sent')).status, 400);
  });

  test(`a recipient ending in ${MAGIC_SUFFIXES.rejected} is refused by the carrier: failed at once, message.failed`, async () => {
    nextMinute();
    const to = `+1202555${MAGIC_SUFFIXES.rejected}`;
    const id = (await send(t, acme, { to, message: 'x' })).body.data.id;
    await runJobs();
    const message = await read(id);
    assert.equal(message.status, 'failed');
    assert.equal(message.errorCode, 'carrier_rejected');
    assert.equal(message.sentAt, null);
    assert.deepEqual(
      (await eventsOf(id)).map((e) => e.type),
      ['message.failed'],
    );
  });

  test('throughput: a toll-free number sends about 3 per second; excess waits its slot and is never dropped', async () => {
    nextMinute();
    const ids: string[] = [];
    for (let i = 0; i < 9; i++) {
      ids.push((await send(t, acme, { to: freshNumber(), message: `burst ${i}` })).body.data.id);
    }
    const slots = await t.ctx.db.query<{ run_at: Date }>(
      "SELECT run_at FROM jobs WHERE queue = 'messages.dispatch' AND payload->>'messageId' = ANY($1) ORDER BY run_at",
      [ids],
    );
    assert.equal(slots.length, 9);
    for (let i = 1; i < slots.length; i++) {
      const gap = slots[i]!.run_at.getTime() - slots[i - 1]!.run_at.getTime();
      assert.ok(gap >= 333, `gap ${gap} ms between slots`);
    }
    const span = slots[8]!.run_at.getTime() - slots[0]!.run_at.getTime();
    assert.ok(span >= 8 * 333 && span < 8 * 400, `9 messages over ${span} ms`);
    // Only what is due goes now; the rest follows as the clock moves. All are sent in the end.
    await t.ctx.jobs.drain();
    await runJobs(10);
    for (const id of ids) assert.equal((await read(id)).status, 'sent');
  });

  test('throughput by number type: Canadian local just under 1/s, local 10DLC by trust tier', async () => {
    assert.ok(t.ctx.carrier.messagesPerSecond('ca_local') < 1);
    assert.ok(t.ctx.carrier.messagesPerSecond('ca_local') >= 0.8);
    assert.equal(t.ctx.carrier.messagesPerSecond('toll_free'), 3);
    assert.equal(t.ctx.carrier.messagesPerSecond('local'), 4); // tier `basic`: 240 per minute
    nextMinute();
    const canadian = await sender(t, { region: 'ca' }, { type: 'ca_local' });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await send(t, canadian, { to: freshNumber('416'), message: 'eh' })).body.data.id);
    }
    const slots = await t.ctx.db.query<{ run_at: Date }>(
      "SELECT run_at FROM jobs WHERE queue = 'messages.dispatch' AND payload->>'messageId' = ANY($1) ORDER BY run_at",
      [ids],
    );
    assert.ok(slots[2]!.run_at.getTime() - slots[0]!.run_at.getTime() >= 2 * 1111);
  });

  test('a carrier that cannot be reached: dispatch is retried, then the message fails with message.failed', async () => {
    nextMinute();
    // Flush what earlier tests left queued, so only this message meets the broken carrier.
    await runJobs(60);
    const id = (await send(t, acme, { to: freshNumber(), message: 'x' })).body.data.id;
    const carrier = t.ctx.carrier;
    const realSend = carrier.send;
    let calls = 0;
    carrier.send = async (message) => {
      if (message.id === id) calls++;
      throw new Error('carrier unreachable');
    };
    try {
      for (let round = 0; round < DISPATCH_ATTEMPTS + 2; round++) await runJobs(400);
    } finally {
      carrier.send = realSend;
    }
    assert.equal(calls, DISPATCH_ATTEMPTS);
    const message = await read(id);
    assert.equal(message.status, 'failed');
    assert.equal(message.errorCode, 'dispatch_failed');
    assert.deepEqual(
      (await eventsOf(id)).map((e) => e.type),
      ['message.failed'],
    );
  });

  test('a STOP that arrives while a message is queued cancels it at dispatch', async () => {
    nextMinute();
    const to = freshNumber();
    const id = (await send(t, acme, { to, message: 'promo' })).body.data.id;
    const stop = await t.admin('POST', '/test/carrier/inbound', { from: to, to: acme.number, text: 'STOP' });
    assert.equal(stop.status, 201, stop.text);
    await runJobs();
    const message = await read(id);
    assert.equal(message.status, 'cancelled');
    assert.equal(message.errorCode, 'RECIPIENT_OPTED_OUT');
    // The STOP confirmation itself still goes out.
    assert.equal((await read(stop.body.data.reply.id)).status, 'sent');
  });
});

describe('one claim of dispatch jobs, every outcome side by side', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  test('each message of a batch ends as it would alone: sent, refused, opted out, suspended, carrier down', async () => {
    const acme = await sender(t, {}, { type: 'toll_free' });
    const halted = await sender(t, {}, { type: 'toll_free' });
    const sendFrom = async (who: Sender, to: string) => {
      const res = await send(t, who, { to, message: 'batch' });
      assert.equal(res.status, 202, res.text);
      return res.body.data.id as string;
    };
    const optedOutPhone = freshNumber();
    const ids = {
      sent: await sendFrom(acme, freshNumber()),
      refused: await sendFrom(acme, `${freshNumber().slice(0, -4)}${MAGIC_SUFFIXES.rejected}`),
      optedOut: await sendFrom(acme, optedOutPhone),
      unreachable: await sendFrom(acme, freshNumber()),
      suspended: await sendFrom(halted, freshNumber()),
    };
    const stop = await t.admin('POST', '/test/carrier/inbound', {
      from: optedOutPhone,
      to: acme.number,
      text: 'STOP',
    });
    assert.equal(stop.status, 201, stop.text);
    assert.equal((await t.admin('PATCH', `/organizations/${halted.id}`, { suspended: true })).status, 200);

    const carrier = t.ctx.carrier;
    const realSend = carrier.send.bind(carrier);
    const handed: string[] = [];
    carrier.send = async (message) => {
      handed.push(message.id);
      if (message.id === ids.unreachable) throw new Error('carrier unreachable');
      return realSend(message);
    };
    try {
      t.ctx.clock.advance(5);
      await t.ctx.jobs.runDue();
    } finally {
      carrier.send = realSend;
    }
    // One claim held every job (runDue claims once): they were dispatched together.
    assert.deepEqual(
      new Set(handed),
      new Set([ids.sent, ids.refused, ids.unreachable, stop.body.data.reply.id]),
      'the cancelled ones never reach the carrier',
    );

    const [rows, jobs, events] = await Promise.all([
      t.ctx.db.query<{ id: string; status: string; error_code: string | null }>(
        'SELECT id, status, error_code FROM messages WHERE id = ANY($1::text[])',
        [Object.values(ids)],
      ),
      t.ctx.db.query<{ message_id: string; status: string; attempts: number }>(
        "SELECT payload->>'messageId' AS message_id, status, attempts FROM jobs WHERE payload->>'messageId' = ANY($1::text[])",
        [Object.values(ids)],
      ),
      t.ctx.db.query<{ id: string; type: string }>(
        "SELECT data->>'id' AS id, type FROM events WHERE data->>'id' = ANY($1::text[])",
        [Object.values(ids)],
      ),
    ]);
    const status = (id: string) => rows.find((row) => row.id === id);
    assert.deepEqual(status(ids.sent), { id: ids.sent, status: 'sent', error_code: null });
    assert.deepEqual(status(ids.refused)?.status, 'failed');
    assert.deepEqual(status(ids.optedOut), {
      id: ids.optedOut,
      status: 'cancelled',
      error_code: 'RECIPIENT_OPTED_OUT',
    });
    assert.deepEqual(status(ids.suspended), {
      id: ids.suspended,
      status: 'cancelled',
      error_code: 'ACCOUNT_SUSPENDED',
    });
    // The carrier that threw failed that job alone: it waits for its retry, the message still queued.
    assert.deepEqual(status(ids.unreachable), { id: ids.unreachable, status: 'queued', error_code: null });
    const job = (id: string) => jobs.find((row) => row.message_id === id);
    assert.equal(job(ids.unreachable)?.status, 'pending');
    assert.equal(job(ids.unreachable)?.attempts, 1);
    for (const id of [ids.sent, ids.refused, ids.optedOut, ids.suspended]) {
      assert.equal(job(id)?.status, 'completed', id);
    }
    const typesOf = (id: string) => events.filter((row) => row.id === id).map((row) => row.type);
    assert.deepEqual(typesOf(ids.sent), ['message.sent']);
    assert.deepEqual(typesOf(ids.refused), ['message.failed']);
    assert.deepEqual(typesOf(ids.optedOut), []);
    assert.deepEqual(typesOf(ids.suspended), []);
    assert.deepEqual(typesOf(ids.unreachable), []);

    // Its retry, with the carrier back, sends it.
    t.ctx.clock.advance(60);
    await t.ctx.jobs.drain();
    assert.equal(
      (await t.request('GET', `/api/v2/messages/${ids.unreachable}`, { apiKey: acme.key })).body.data.status,
      'sent',
    );
  });
});

describe('the simulated carrier in development', () => {
  let t: TestApp;
  before(async () => {
    // Operator API exists (ADMIN_TOKEN) but the test controls do not: receipts come from the carrier itself.
    t = await startTestApp({ config: { appEnv: 'development' } });
  });
  after(() => t.close());

  test('receipts arrive by themselves after a short delay; the magic numbers pick the outcome', async () => {
    const acme = await sender(t);
    const outcomes: [string, string][] = [
      [freshNumber(), 'delivered'],
      [`+1202555${MAGIC_SUFFIXES.failed}`, 'failed'],
      [`+1202555${MAGIC_SUFFIXES.undelivered}`, 'undelivered'],
      [`+1202555${MAGIC_SUFFIXES.silent}`, 'sent'],
    ];
    const ids: string[] = [];
    for (const [to] of outcomes) {
      const res = await send(t, acme, { to, message: 'dev' });
      assert.equal(res.status, 202, res.text);
      ids.push(res.body.data.id);
    }
    // The clock cannot move outside test; make every scheduled job due instead of sleeping.
    const due = async () => {
      await t.ctx.db.query("UPDATE jobs SET run_at = $1 WHERE status = 'pending'", [new Date(0)]);
      await t.ctx.jobs.drain();
    };
    await due();
    const receipts = await countRows(t, "SELECT 1 FROM jobs WHERE queue = 'messages.receipt'");
    assert.equal(receipts, 3, 'no receipt is planned for the silent number');
    await due();
    for (const [index, [, status]] of outcomes.entries()) {
      const [row] = await t.ctx.db.query<{ status: string }>('SELECT status FROM messages WHERE id = $1', [
        ids[index],
      ]);
      assert.equal(row!.status, status, outcomes[index]![0]);
    }
    assert.equal(
      (await t.admin('POST', '/test/carrier/receipts', { messageId: ids[0], status: 'failed' })).status,
      404,
    );
  });
});
