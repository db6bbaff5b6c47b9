// Scheduled messages (CONTRACT section 14, issue 36) through the HTTP API: `sendAt` 15 minutes to 35 days
// ahead answers 202 `scheduled`; the carrier sees nothing until the test clock reaches it; DELETE cancels it
// while it is scheduled (409 MESSAGE_NOT_SCHEDULED after); opt-outs, the sending number and the plan limits
// are checked when it leaves; the message's own quiet hours hold it until they open.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import type { OutboundForCarrier } from '../src/carriers/carrier.ts';
import { assertRefusedA, assertRefusedB, startTestApp, type TestApp } from './helpers/app.ts';
import { countRows, freshNumber, messagesOf, type Sender, send, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';

const MINUTE = 60;

describe('scheduled messages', () => {
  let t: TestApp;
  let acme: Sender;
  /** Every message the carrier was handed, by id (the real simulated carrier still answers). */
  const handed = new Map<string, OutboundForCarrier>();
  before(async () => {
    t = await startTestApp();
    acme = await sender(t);
    const carrier = t.ctx.carrier;
    const realSend = carrier.send.bind(carrier);
    carrier.send = (message) => {
      handed.set(message.id, message);
      return realSend(message);
    };
  });
  after(() => t.close());
  // Each test starts a fresh minute (the 30 sends per minute limit) with the clock held still.
  beforeEach(() => {
    t.ctx.clock.freeze();
    t.ctx.clock.advance(61);
  });

  const inFromNow = (seconds: number) => new Date(t.ctx.clock.nowMs() + seconds * 1000).toISOString();
  const read = async (who: Sender, id: string) =>
    (await t.request('GET', `/api/v2/messages/${id}`, { apiKey: who.key })).body.data;
  /** Moves the clock `seconds` ahead and runs every job due by then. */
  const passTime = async (seconds: number) => {
    t.ctx.clock.advance(seconds);
    await t.ctx.jobs.drain();
  };

  test('a scheduled message answers 202 scheduled with sendAt, and leaves when the clock reaches it', async () => {
    const to = freshNumber();
    const sendAt = inFromNow(20 * MINUTE);
    const res = await send(t, acme, { to, message: 'Your appointment is tomorrow', sendAt });
    assert.equal(res.status, 202, res.text);
    const data = res.body.data;
    assert.deepEqual(Object.keys(data).sort(), [
      'body',
      'createdAt',
      'encoding',
      'from',
      'id',
      'mediaCount',
      'segments',
      'sendAt',
      'status',
      'to',
    ]);
    assert.equal(data.status, 'scheduled');
    assert.equal(data.sendAt, sendAt);
    const stored = await read(acme, data.id);
    assert.equal(stored.status, 'scheduled');
    assert.equal(stored.sendAt, sendAt);
    const listed = await t.request('GET', '/api/v2/messages?status=scheduled', { apiKey: acme.key });
    assert.equal(listed.status, 200);
    assert.ok(listed.body.data.some((message: { id: string }) => message.id === data.id));

    await passTime(20 * MINUTE - 1);
    assert.equal((await read(acme, data.id)).status, 'scheduled');
    assert.equal(handed.has(data.id), false, 'the carrier saw nothing before sendAt');

    await passTime(1);
    await passTime(5);
    const sent = await read(acme, data.id);
    assert.equal(sent.status, 'sent');
    assert.equal(handed.get(data.id)?.to, to);
    assert.ok(new Date(sent.sentAt).getTime() >= new Date(sendAt).getTime());
  });

  test('a cancelled message never leaves; a second cancel, or one of a queued message, is 409', async () => {
    const res = await send(t, acme, { to: freshNumber(), message: 'Never', sendAt: inFromNow(16 * MINUTE) });
    assert.equal(res.status, 202, res.text);
    const id = res.body.data.id;
    const cancelled = await t.request('DELETE', `/api/v2/messages/${id}`, { apiKey: acme.key });
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.equal(cancelled.body.data.status, 'cancelled');
    assert.equal(cancelled.body.data.errorCode, null);
    const again = await t.request('DELETE', `/api/v2/messages/${id}`, { apiKey: acme.key });
    assertRefusedB(again, 409, 'MESSAGE_NOT_SCHEDULED');
    await passTime(17 * MINUTE);
    await passTime(5);
    assert.equal((await read(acme, id)).status, 'cancelled');
    assert.equal(handed.has(id), false);

    const now = await send(t, acme, { to: freshNumber(), message: 'At once' });
    assert.equal(now.status, 202);
    assert.equal(now.body.data.status, 'queued');
    assert.equal('sendAt' in now.body.data, false);
    const queued = await t.request('DELETE', `/api/v2/messages/${now.body.data.id}`, { apiKey: acme.key });
    assertRefusedB(queued, 409, 'MESSAGE_NOT_SCHEDULED');
    await passTime(5);
    assert.equal((await read(acme, now.body.data.id)).status, 'sent');
    const sent = await t.request('DELETE', `/api/v2/messages/${now.body.data.id}`, { apiKey: acme.key });
    assertRefusedB(sent, 409, 'MESSAGE_NOT_SCHEDULED');
  });

  test('a cancel racing the release has one winner, and the answer says which', async () => {
    for (let round = 0; round < 4; round++) {
      const res = await send(t, acme, {
        to: freshNumber(),
        message: `Race ${round}`,
        sendAt: inFromNow(15 * MINUTE),
      });
      assert.equal(res.status, 202, res.text);
      const id = res.body.data.id;
      t.ctx.clock.advance(15 * MINUTE);
      const [cancel] = await Promise.all([
        t.request('DELETE', `/api/v2/messages/${id}`, { apiKey: acme.key }),
        t.ctx.jobs.drain(),
      ]);
      await passTime(5);
      const final = await read(acme, id);
      if (cancel.status === 200) {
        assert.equal(final.status, 'cancelled');
        assert.equal(handed.has(id), false);
      } else {
        assertRefusedB(cancel, 409, 'MESSAGE_NOT_SCHEDULED');
        assert.equal(final.status, 'sent');
        assert.equal(handed.has(id), true);
      }
    }
  });

  test("another organization's message is 404 and stays scheduled; a read-only key is refused", async () => {
    const res = await send(t, acme, { to: freshNumber(), message: 'Mine', sendAt: inFromNow(30 * MINUTE) });
    const id = res.body.data.id;
    const other = await sender(t);
    const foreign = await t.request('DELETE', `/api/v2/messages/${id}`, { apiKey: other.key });
    assertRefusedB(foreign, 404, undefined);
    const reader = await sender(t, {}, { scopes: ['messages:read'] });
    const readOnly = await t.request('DELETE', `/api/v2/messages/${id}`, { apiKey: reader.key });
    assert.equal(readOnly.status, 403);
    assert.equal((await read(acme, id)).status, 'scheduled');
    const unknown = await t.request('DELETE', '/api/v2/messages/msg_nope', { apiKey: acme.key });
    assertRefusedB(unknown, 404, undefined);
  });

  test('sendAt 14 minutes or 36 days ahead, in the past, or not a date: 400 and nothing written', async () => {
    const before = await messagesOf(t, acme.id);
    const jobs = await countRows(t, `SELECT 1 FROM jobs WHERE queue = 'messages.release'`);
    for (const sendAt of [
      inFromNow(14 * MINUTE),
      inFromNow(36 * 24 * 60 * MINUTE),
      inFromNow(-MINUTE),
      'tomorrow at noon',
    ]) {
      const res = await send(t, acme, { to: freshNumber(), message: 'Out of range', sendAt });
      assertRefusedB(res, 400, undefined);
      assert.match(res.body.error, /sendAt/);
    }
    // The bounds themselves are inside the window.
    for (const sendAt of [inFromNow(15 * MINUTE), inFromNow(35 * 24 * 60 * MINUTE)]) {
      const res = await send(t, acme, { to: freshNumber(), message: 'In range', sendAt });
      assert.equal(res.status, 202, res.text);
      await t.request('DELETE', `/api/v2/messages/${res.body.data.id}`, { apiKey: acme.key });
    }
    assert.equal(await messagesOf(t, acme.id), before + 2);
    assert.equal(await countRows(t, `SELECT 1 FROM jobs WHERE queue = 'messages.release'`), jobs + 2);
  });

  test('a recipient who opted out after scheduling: the message fails RECIPIENT_OPTED_OUT with its event', async () => {
    const to = freshNumber();
    const res = await send(t, acme, { to, message: 'Promo', sendAt: inFromNow(15 * MINUTE) });
    assert.equal(res.status, 202, res.text);
    const stop = await t.admin('POST', '/test/carrier/inbound', { from: to, to: acme.number, text: 'STOP' });
    assert.equal(stop.status, 201, stop.text);
    await passTime(15 * MINUTE);
    await passTime(5);
    const failed = await read(acme, res.body.data.id);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.errorCode, 'RECIPIENT_OPTED_OUT');
    assert.equal(handed.has(res.body.data.id), false);
    const events = await countRows(
      t,
      `SELECT 1 FROM events WHERE type = 'message.failed' AND data->>'id' = $1`,
      [res.body.data.id],
    );
    assert.equal(events, 1);
  });

  test('plan limits are counted when it leaves: a trial whose last message went meanwhile fails it', async () => {
    const trial = await sender(t, { subscriptionState: 'trial', cardVerified: false, trialMessageLimit: 1 });
    const scheduled = await send(t, trial, {
      to: freshNumber(),
      message: 'Later',
      sendAt: inFromNow(20 * MINUTE),
    });
    assert.equal(scheduled.status, 202, scheduled.text);
    // Scheduling counted nothing: the trial's one message is still there to send at once.
    const now = await send(t, trial, { to: freshNumber(), message: 'Now' });
    assert.equal(now.status, 202, now.text);
    await passTime(20 * MINUTE);
    await passTime(5);
    const failed = await read(trial, scheduled.body.data.id);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.errorCode, 'TRIAL_LIMIT_REACHED');
    assert.match(failed.errorMessage, /trial/i);
    assert.equal(handed.has(scheduled.body.data.id), false);
  });

  test('the trial burst does not count messages still scheduled', async () => {
    const trial = await sender(t, {
      subscriptionState: 'trial',
      cardVerified: false,
      trialMessageLimit: 1000,
    });
    for (let i = 0; i < 30; i++) {
      const res = await send(t, trial, {
        to: freshNumber(),
        message: `Later ${i}`,
        sendAt: inFromNow(20 * MINUTE),
      });
      assert.equal(res.status, 202, res.text);
    }
    // 50 sent at once in the next minutes still fit the burst (50 in 10 minutes); the 51st does not.
    const statuses: number[] = [];
    for (let i = 0; i < 51; i++) {
      if (i % 25 === 0) t.ctx.clock.advance(61); // the 30 requests per minute limit
      const res = await send(t, trial, { to: freshNumber(), message: `Now ${i}` });
      statuses.push(res.status);
      if (res.status !== 202) assertRefusedB(res, 429, 'TRIAL_LIMIT_REACHED');
    }
    assert.deepEqual(statuses, [...Array(50).fill(202), 429]);
  });

  test('a daily limit reached at send time fails it with PAID_LIMIT_REACHED', async () => {
    const daily = await sender(t, { dailyLimitSegments: 1, createdAt: '2026-01-01T00:00:00.000Z' });
    const scheduled = await send(t, daily, {
      to: freshNumber(),
      message: 'Later',
      sendAt: inFromNow(16 * MINUTE),
    });
    assert.equal(scheduled.status, 202, scheduled.text);
    // Within the same UTC day as the release (the clock can be close to midnight: send right before it).
    await passTime(16 * MINUTE - 2);
    assert.equal((await send(t, daily, { to: freshNumber(), message: 'Now' })).status, 202);
    await passTime(2);
    await passTime(5);
    const failed = await read(daily, scheduled.body.data.id);
    if (failed.status === 'failed') assert.equal(failed.errorCode, 'PAID_LIMIT_REACHED');
    else assert.fail(`expected failed, got ${failed.status} (a UTC day ended between the two sends?)`);
  });

  test('the sending number released meanwhile: failed SENDER_NOT_OWNED', async () => {
    const owner = await sender(t);
    const extra = freshNumber();
    assert.equal(
      (await t.admin('POST', `/organizations/${owner.id}/numbers`, { number: extra, type: 'local' })).status,
      201,
    );
    const res = await send(t, owner, {
      to: freshNumber(),
      from: extra,
      message: 'From the old line',
      sendAt: inFromNow(15 * MINUTE),
    });
    assert.equal(res.status, 202, res.text);
    const owned = await t.request('GET', '/api/v2/numbers', { apiKey: owner.key });
    const line = owned.body.data.find((number: { number: string }) => number.number === extra);
    assert.ok(line, owned.text);
    const released = await t.request('DELETE', `/api/v2/numbers/${line.id}`, { apiKey: owner.key });
    assert.equal(released.status, 200, released.text);
    await passTime(15 * MINUTE);
    const failed = await read(owner, res.body.data.id);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.errorCode, 'SENDER_NOT_OWNED');
  });

  test('an organization suspended meanwhile: failed ACCOUNT_SUSPENDED, nothing handed to the carrier', async () => {
    const org = await sender(t);
    const res = await send(t, org, {
      to: freshNumber(),
      message: 'Suspended',
      sendAt: inFromNow(15 * MINUTE),
    });
    assert.equal(res.status, 202, res.text);
    assert.equal((await t.admin('PATCH', `/organizations/${org.id}`, { suspended: true })).status, 200);
    await passTime(15 * MINUTE);
    await passTime(5);
    assert.equal((await t.admin('PATCH', `/organizations/${org.id}`, { suspended: false })).status, 200);
    const failed = await read(org, res.body.data.id);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.errorCode, 'ACCOUNT_SUSPENDED');
    assert.equal(handed.has(res.body.data.id), false);
  });

  test('quiet hours: a message due outside them waits until they open, in the recipient zone', async () => {
    // A +1 202 number is in America/New_York. The window is the hour the clock is not in.
    const hourNow = Number(
      new Intl.DateTimeFormat('en-US', {
        timeZone: 'America/New_York',
        hour: 'numeric',
        hourCycle: 'h23',
      }).format(t.ctx.clock.now()),
    );
    const startHour = (hourNow + 2) % 24;
    const pad = (h: number) => `${String(h).padStart(2, '0')}:00`;
    const quietHours = { start: pad(startHour), end: pad((startHour + 1) % 24) };
    const res = await send(t, acme, { to: freshNumber(), message: 'In the window', quietHours });
    assert.equal(res.status, 202, res.text);
    assert.equal(res.body.data.status, 'scheduled');
    const opens = new Date(res.body.data.sendAt);
    const ahead = opens.getTime() - t.ctx.clock.nowMs();
    assert.ok(ahead > 60 * MINUTE * 1000 && ahead <= 2 * 60 * MINUTE * 1000, `opens in ${ahead} ms`);
    await passTime(Math.floor(ahead / 1000) - 1);
    assert.equal((await read(acme, res.body.data.id)).status, 'scheduled');
    await passTime(1);
    await passTime(5);
    assert.equal((await read(acme, res.body.data.id)).status, 'sent');

    const same = await send(t, acme, {
      to: freshNumber(),
      message: 'x',
      quietHours: { start: '09:00', end: '09:00' },
    });
    assertRefusedB(same, 400, undefined);
  });

  test('an idempotency key replays the scheduled answer and schedules once', async () => {
    const body = { to: freshNumber(), message: 'Once', sendAt: inFromNow(40 * MINUTE) };
    const headers = { 'idempotency-key': `sched-${Date.now()}` };
    const first = await send(t, acme, body, headers);
    const second = await send(t, acme, body, headers);
    assert.equal(first.status, 202);
    assert.equal(second.status, 202);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(second.body.data, first.body.data);
    assert.equal(await countRows(t, `SELECT 1 FROM messages WHERE id = $1`, [first.body.data.id]), 1);
  });

  test('stats leave scheduled messages out until they leave', async () => {
    const fresh = await sender(t);
    await send(t, fresh, { to: freshNumber(), message: 'Later', sendAt: inFromNow(15 * MINUTE) });
    const stats = await t.request('GET', '/api/v2/messages/stats', { apiKey: fresh.key });
    assert.equal(stats.status, 200);
    assert.equal(stats.body.data.outbound.total, 0);
  });

  test('the portal twin schedules and cancels with its session (Shape A errors)', async () => {
    const member = await createUser(t, { role: 'member', organizationIds: [acme.id] });
    const session = { token: await signIn(t, member) };
    const res = await t.request('POST', '/v2/portal/messages/send', {
      token: session.token,
      body: { to: freshNumber(), message: 'From the console', sendAt: inFromNow(60 * MINUTE) },
    });
    assert.equal(res.status, 202, res.text);
    assert.equal(res.body.data.status, 'scheduled');
    const cancel = await t.request('DELETE', `/v2/portal/messages/${res.body.data.id}`, {
      token: session.token,
    });
    assert.equal(cancel.status, 200, cancel.text);
    assert.equal(cancel.body.data.status, 'cancelled');
    const again = await t.request('DELETE', `/v2/portal/messages/${res.body.data.id}`, {
      token: session.token,
    });
    assertRefusedA(again, 409, 'MESSAGE_NOT_SCHEDULED');
  });
});
